"""Fixtures of the recorded-answers tests: the hand-written answers files under
tests/data/recorded/ and the Game of 24 domain their ids name."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TEST_DATA

from veriloop.domains import get_domain
from veriloop.domains.base import Domain
from veriloop.records import Instance

RECORDED = TEST_DATA / "recorded"


@pytest.fixture(scope="session")
def game24_file() -> Path:
    """Answers for the generated puzzles game24-g1..g5, one malformed line of each kind
    among them (its lines are pinned by test_answers and test_importer)."""
    return RECORDED / "game24.jsonl"


@pytest.fixture(scope="session")
def blocksworld_file() -> Path:
    """Answers for PlanBench's Blocksworld instances 2, 3 and 4 (../shared/data/planbench)."""
    return RECORDED / "blocksworld.jsonl"


@pytest.fixture(scope="session")
def game24() -> tuple[Domain, dict[str, Instance]]:
    """The Game of 24 domain and its own generated instances by id (g1 = 1 1 11 13, g2 =
    1 1 2 12, g3 = 1 1 3 8, g4 = 1 1 4 6, g5 = 1 1 12 12), as `veriloop import` reads them."""
    domain = get_domain("game24")
    return domain, {i.id: i for i in domain.load_instances(None)}
