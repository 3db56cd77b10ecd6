"""scripts/humaneval_agreement.py: mutants of canonical solutions, judged by veriloop's
harness and by HumanEval's own one-module program (both in the sandbox; no model)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from veriloop.domains.humaneval import read_problems

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "humaneval_agreement.py"
PROBLEMS = {p.data["task_id"]: p for p in read_problems()}


@pytest.fixture(scope="module")
def script() -> dict:
    return runpy.run_path(str(SCRIPT))


def test_mutants_change_one_operator_or_one_constant(script) -> None:
    body = "    return x + y * 2\n"
    assert list(script["mutants"](body)) == [("operator at line 1", "    return x - y * 2\n"),
                                            ("constant at line 1", "    return x + y * 3\n")]
    assert list(script["mutants"]("    return 'text'\n")) == []


def test_a_mutant_fails_both_judges_and_the_canonical_solution_passes_both(script) -> None:
    add = PROBLEMS["HumanEval/53"]
    assert script["judged_by_humaneval"](add, add.data["canonical_solution"]) is True
    assert script["judged_by_humaneval"](add, "    return x - y\n") is False


def test_the_script_reports_agreement_on_the_first_problems(script, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["humaneval_agreement.py", "--problems", "3"])
    script["main"]()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("7 of 7 verdicts agree (3 problems, 4 mutants; HumanEval's program passes 3 of the 7; ")
