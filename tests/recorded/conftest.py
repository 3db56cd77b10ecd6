"""Fixtures of the recorded-answers tests: the hand-written answers files under
tests/data/recorded/ and the Game of 24 domain their ids name; zip archives that declare
what they like, and a command run with its memory bounded (for hostile sources)."""

from __future__ import annotations

import resource
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import TEST_DATA, booby_trapped_check, command_environ

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


def _tree_state(root: Path) -> dict[str, str]:
    """Every file and link under `root` by path: a file's SHA-256, a link's target. Equal
    before and after means nothing under it was written, cut, added or removed."""
    import hashlib
    import os

    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "link to " + os.readlink(path)
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def tree_state():
    """_tree_state: what a directory holds, to compare before and after."""
    return _tree_state


@pytest.fixture
def task_source(tmp_path: Path) -> tuple[Path, Path]:
    """A run directory made with `--task` and `--check` by someone else: its config.json
    names their check file, which writes a marker file when imported; two recorded
    answers (the first right), and its instances recorded. Returns the run and the marker."""
    import json

    from veriloop.experiment.schema import Experiment
    from veriloop.records import RoundRecord, Trajectory

    theirs, marker = booby_trapped_check(tmp_path)
    tasks = tmp_path / "sums.jsonl"
    tasks.write_text('{"id": "s1", "q": "1+1", "a": "2"}\n{"id": "s2", "q": "2+2", "a": "4"}\n')
    entry = {"file": str(tasks), "prompt": "What is {q}?", "check": f"python:{theirs}:check", "reference_field": "a",
             "id_field": "id"}
    spec = Experiment.model_validate({"name": "run", "models": {"main": {"id": "openai/scripted"}}, "tasks": [entry],
                                      "strategies": ["standard"], "n": 2}).model_dump(mode="json")
    run = tmp_path / "task-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({
        "model": "openai/scripted", "task": str(tasks), "check": entry["check"], "prompt": entry["prompt"],
        "reference_field": "a", "id_field": "id", "domain": "sums", "seed": 0, "spec": spec}))
    answers = {"s1": ("2", True), "s2": ("5", False)}
    (run / "trajectories.jsonl").write_text("".join(Trajectory(
        strategy="standard", domain="sums", model="scripted", instance_id=i, seed=0, final_text=text,
        final_answer=text, correct=right, rounds=[RoundRecord(round=1, text=text, answer=text, correct=right)],
    ).model_dump_json() + "\n" for i, (text, right) in answers.items()))
    (run / "instances.jsonl").write_text(
        '{"id":"s1","data":{"id":"s1","q":"1+1","a":"2"},"reference":"2"}\n'
        '{"id":"s2","data":{"id":"s2","q":"2+2","a":"4"},"reference":"4"}\n')
    return run, marker


def _write_zip(path: Path, entries: list[tuple[str, int, bytes, int]]) -> Path:
    """A zip archive written byte by byte, one (name, compression method, compressed bytes,
    declared uncompressed size) per entry: zipfile always declares the true size, a hostile
    archive declares what it likes. CRCs are 0 (nothing here reads an entry to its end)."""
    body, directory = bytearray(), bytearray()
    for name, method, data, size in entries:
        encoded = name.encode()
        offset = len(body)
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, 0, len(data), size, len(encoded), 0)
        body += encoded + data
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, 0, len(data), size,
                                 len(encoded), 0, 0, 0, 0, 0, offset) + encoded
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory), len(body), 0)
    path.write_bytes(bytes(body + directory + end))
    return path


@pytest.fixture(scope="session")
def write_zip() -> Callable[[Path, list[tuple[str, int, bytes, int]]], Path]:
    """_write_zip: write_zip(path, [(name, method, compressed bytes, declared size), ...])."""
    return _write_zip


# What a command may take beyond the interpreter with what it loads to refuse a log.
HEADROOM = 1 << 30


def _address_space() -> int:
    """The address space (bytes) of an interpreter that has loaded what `veriloop import`
    loads to refuse a log (inspect_ai comes only after every log passed its checks)."""
    probe = ("import re, zstandard, veriloop.cli.recorded, veriloop.recorded.importer; "
             "print(re.search(r'VmPeak:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           env=command_environ(env=_ONE_ARENA))
    return int(found.stdout) * 1024


# glibc reserves 64 MiB of address space per malloc arena (one per thread, up to 8 per
# core): one arena keeps the limit about the memory a command uses, not its threads.
_ONE_ARENA = {"MALLOC_ARENA_MAX": "1"}


@pytest.fixture(scope="session")
def bounded_veriloop() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`python -m veriloop.cli ARGS` in a process whose address space may grow HEADROOM
    beyond the interpreter's own with what refusing a log loads: a command that would
    hold more fails (MemoryError) instead of taking the machine's memory."""
    limit = _address_space() + HEADROOM

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        return subprocess.run([sys.executable, "-m", "veriloop.cli", *args], capture_output=True, text=True,
                              env=command_environ(env=_ONE_ARENA), preexec_fn=cap, timeout=600)

    return run
