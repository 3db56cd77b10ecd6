"""scripts/humaneval_gap.py, the gap to the published pass@1 from recorded runs:
standard's failures sorted by cause, and two runs paired problem by problem, on
hand-made run directories (the hidden tests run in the sandbox; no model)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from veriloop.domains.humaneval import read_problems
from veriloop.records import CallRecord, Trajectory

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "humaneval_gap.py"
PROBLEMS = {p.data["task_id"]: p for p in read_problems()}


def standard(task: str, code: str | None, correct: bool, finish_reason: str = "stop") -> Trajectory:
    p = PROBLEMS[task]
    text = "I cannot help with that." if code is None else f"```python\n{code}\n```"
    call = CallRecord(role="generate", round=1, messages=[], response=text, finish_reason=finish_reason,
                      prompt_tokens=100, completion_tokens=40 if finish_reason == "stop" else 512, seconds=1.0,
                      cached=False)
    return Trajectory(strategy="standard:temperature=0", domain="humaneval", model="m", instance_id=p.id, seed=0,
                      calls=[call], final_text=text, final_answer=code, correct=correct, stop_reason="single_answer")


def write_run(path: Path, trajectories: list[Trajectory]) -> Path:
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in trajectories))
    return path


def canonical(task: str) -> str:
    return PROBLEMS[task].data["prompt"] + PROBLEMS[task].data["canonical_solution"]


def gap(*argv: str) -> int:
    return runpy.run_path(str(SCRIPT))["main"](list(argv))


def test_failures_are_sorted_by_cause_and_two_runs_are_paired(tmp_path, capsys):
    first = write_run(tmp_path / "function", [
        standard("HumanEval/53", canonical("HumanEval/53"), True),
        standard("HumanEval/0", "def has_close_elements(numbers, threshold):\n    return False", False),
        standard("HumanEval/2", "def truncate_number(number):\n    return 1 / 0", False),
        standard("HumanEval/4", None, False),
        standard("HumanEval/7", "def filter_by_substring(strings, substring):\n    return [s for s", False, "length"),
    ])
    second = write_run(tmp_path / "script", [
        standard("HumanEval/53", canonical("HumanEval/53"), True),
        standard("HumanEval/0", canonical("HumanEval/0"), True),
        standard("HumanEval/2", canonical("HumanEval/2"), True),
        standard("HumanEval/4", None, False),
        standard("HumanEval/7", None, False),
    ])
    assert gap(str(first), "--against", str(second)) == 0
    assert capsys.readouterr().out.splitlines() == [
        "standard pass@1: 1/5 = 20.0% (95% CI 3.6%-62.4%); published 70.7%, so -50.7 points against it",
        "failures by cause:",
        "  no function in the reply: 1",
        "  code that does not parse: 0",
        "  cut off by the token limit: 1",
        "  wrong value: 1",
        "  exception: 1",
        "  time-out: 0",
        "reply length: median 40 tokens, longest 512",
        "paired on 5 problems: 1 vs 3, difference +40.0 points (95% CI +0.0 to +80.0), only the first solved 0, "
        "only the second 2, exact McNemar p = 0.500",
        "the second run's failures by cause: no function in the reply 2, code that does not parse 0, cut off by the "
        "token limit 0, wrong value 0, exception 0, time-out 0",
    ]


def test_a_directory_without_a_standard_run_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"holds no trajectories.jsonl; give a run directory of standard on humaneval$"):
        gap(str(tmp_path))
