"""SelfCheck end to end with the real SmolLM2-135M: the reproduction on 2 GSM8K
questions (every table and plot, then a resumption that makes no call), the strategy and
the verifier inside backprompt, and MathQA from a user's file.

The small model's checks are mostly noise; these tests check that every path runs,
records what it did and resumes, not how good the checks are.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from test_cli import veriloop
from veriloop.domains import get_domain
from veriloop.experiment.runner import load_trajectories, run_experiment
from veriloop.models import CachedModel, CallCache
from veriloop.strategies import parse_strategy

pytestmark = pytest.mark.model

FIXTURE = Path(__file__).parent / "data" / "mathqa_sample.json"


def test_reproduce_selfcheck_on_two_questions_writes_everything_and_resumes(tmp_path, shared_data, smollm2_path):
    out = tmp_path / "out"
    args = ("reproduce", "selfcheck", "--model", "smollm2-135m", "--questions", "2", "--solutions", "2",
            "--max-steps", "3", "--majority-cap", "4", "--data-root", str(shared_data), "--out", str(out),
            "--cache", str(tmp_path / "calls.sqlite"))
    proc = veriloop(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (out / "selfcheck.md").read_text()
    for heading in ("Accuracy against the number of solutions", "Cost-normalised comparison", "Token cost per solution",
                    "Verification quality", "AUROC, SelfCheck", "Step-level agreement"):
        assert heading in md
    payload = json.loads((out / "reproduction.json").read_text())
    assert payload["questions"] == 2 and payload["solutions_total"] == 4
    assert len(payload["accuracy"]["selfcheck"]) == len(payload["accuracy"]["majority"]) == 2
    assert len(payload["accuracy"]["global"]) == 2
    assert 2 <= payload["majority_samples"] <= 4 and len(payload["accuracy"]["majority_all"]) == payload["majority_samples"]
    assert payload["cost"]["check_tokens_per_solution"] > payload["cost"]["generation_tokens_per_solution"] > 0
    assert payload["cost"]["steps_checked_per_solution"] <= 3
    assert [row["threshold"] for row in payload["verification"]["thresholds"]][:2] == [0.0, 0.5]
    assert all(0.0 < w <= 1.0 for w in payload["confidences"])
    for name in ("accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "selfcheck.csv").read_text().startswith("method,solutions,accuracy")
    trajectories = load_trajectories(out / "gsm8k-cot" / "trajectories.jsonl")
    steps = next(t for t in trajectories if "checker=steps" in t.strategy)
    assert {c.stage for c in steps.calls if c.role == "check"} == {"target", "collect", "regenerate", "compare"}
    assert all(c.max_steps == 3 and c.steps_checked <= 3 for c in steps.step_checks)
    again = veriloop(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout
    assert (out / "selfcheck.md").read_text() == md


def test_selfcheck_verifier_drives_backprompt(tmp_path, shared_data, smollm2):
    domain = get_domain("gsm8k-cot")
    instances = domain.load_instances(str(shared_data / "gsm8k" / "test.jsonl"), n=1)
    model = CachedModel(smollm2, CallCache(tmp_path / "calls.sqlite"))
    strategy = parse_strategy("backprompt:verifier=selfcheck@0.9,max_rounds=2")
    asyncio.run(run_experiment(model, domain, [strategy], instances, tmp_path / "run"))
    t = load_trajectories(tmp_path / "run" / "trajectories.jsonl")[0]
    assert t.rounds and all(r.verdict is not None and r.verdict.verifier == "selfcheck" for r in t.rounds)
    assert len(t.step_checks) == len(t.rounds)
    assert t.stop_reason in ("verifier_accepted", "max_rounds")
    if len(t.rounds) == 2:
        redo = [c for c in t.calls if c.role == "generate"][-1].messages[-1]["content"]
        assert "Step" in redo


def test_mathqa_file_with_the_selfcheck_strategy(tmp_path, smollm2):
    domain = get_domain("mathqa")
    instances = domain.load_instances(str(FIXTURE), n=1)
    model = CachedModel(smollm2, CallCache(tmp_path / "calls.sqlite"))
    strategy = parse_strategy("selfcheck:n=2,max_steps=2")
    result = asyncio.run(run_experiment(model, domain, [strategy], instances, tmp_path / "run"))
    t = load_trajectories(tmp_path / "run" / "trajectories.jsonl")[0]
    assert result.new_trajectories == 1 and len(t.rounds) == 2 and len(t.step_checks) == 2
    assert t.stop_reason in ("weighted_vote", "no_answer")
    # The options are part of what the checker treats as the question.
    assert any("Options:" in c.messages[-1]["content"] for c in t.calls if c.stage == "collect")


def test_selfcheck_command_checks_a_users_solution(tmp_path, smollm2_path):
    solution = tmp_path / "solution.txt"
    solution.write_text("Step 1: Tom starts with 12 apples.\nStep 2: 12 + 5 = 17.\nAnswer: 17\n")
    proc = veriloop("selfcheck", "--model", "smollm2-135m", "--question", "Tom has 12 apples and buys 5 more. How many now?",
                    "--solution-file", str(solution), "--json", "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    check = json.loads(proc.stdout)
    assert check["steps_total"] == check["steps_checked"] == 2
    assert check["accepted"] == (proc.returncode == 0) == (check["confidence"] > 0.6)
    assert all(s["result"] in (-1, 0, 1) and s["target"] for s in check["steps"])
