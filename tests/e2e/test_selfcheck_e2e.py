"""SelfCheck end to end with the real SmolLM2-135M: the reproduction on 2 GSM8K
questions (every table and plot, then a resumption that makes no call), the strategy and
the verifier inside backprompt, and MathQA from a user's file.

The small model's checks are mostly noise; these tests check that every path runs,
records what it did and resumes, not how good the checks are.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from helpers import TEST_DATA, veriloop_process

from veriloop.domains import get_domain
from veriloop.models import CachedModel, CallCache
from veriloop.runs.runner import load_trajectories, run_experiment
from veriloop.strategies import parse_strategy
from veriloop.verifiers.selfcheck import question_text, verdict_from_check

pytestmark = pytest.mark.model
STAGES = ("target", "collect", "regenerate", "compare")

FIXTURE = TEST_DATA / "mathqa_sample.json"


def test_reproduce_selfcheck_on_two_questions_writes_everything_and_resumes(tmp_path, shared_data, smollm2_path):
    out = tmp_path / "out"
    args = ("reproduce", "selfcheck", "--model", "smollm2-135m", "--questions", "2", "--solutions", "2",
            "--max-steps", "3", "--majority-cap", "4", "--data-root", str(shared_data), "--out", str(out),
            "--cache", str(tmp_path / "calls.sqlite"))
    proc = veriloop_process(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (out / "selfcheck.md").read_text()
    for heading in ("Accuracy against the number of solutions", "Cost-normalised comparison", "Token cost per solution",
                    "Verification quality", "AUROC, SelfCheck", "Step-level agreement"):
        assert heading in md
    payload = json.loads((out / "reproduction.json").read_text())
    assert payload["questions"] == 2 and payload["solutions_total"] == 4
    assert len(payload["accuracy"]["selfcheck"]) == len(payload["accuracy"]["majority"]) == 2
    assert len(payload["accuracy"]["global"]) == 2
    # Majority voting gets SelfCheck's token budget: 2 solutions plus as many as the
    # checking cost, at most --majority-cap.
    matched = max(2, min(4, math.ceil(2 * (1 + payload["cost"]["check_to_generation"]))))
    assert payload["majority_samples"] == len(payload["accuracy"]["majority_all"]) == matched
    assert payload["cost"]["check_tokens_per_solution"] > payload["cost"]["generation_tokens_per_solution"] > 0
    assert payload["cost"]["steps_checked_per_solution"] <= 3
    assert [row["threshold"] for row in payload["verification"]["thresholds"]][:2] == [0.0, 0.5]
    assert all(0.0 < w <= 1.0 for w in payload["confidences"])
    for name in ("accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "selfcheck.csv").read_text().startswith("method,solutions,accuracy")
    trajectories = load_trajectories(out / "main" / "gsm8k-cot" / "SelfCheck-seed0" / "trajectories.jsonl")
    steps = next(t for t in trajectories if "checker=steps" in t.strategy)
    assert {c.stage for c in steps.calls if c.role == "check"} == {"target", "collect", "regenerate", "compare"}
    assert [(c.max_steps, c.steps_checked) for c in steps.step_checks] == [
        (3, min(3, c.steps_total)) for c in steps.step_checks
    ]
    again = veriloop_process(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout
    assert (out / "selfcheck.md").read_text() == md


def test_selfcheck_verifier_drives_backprompt(tmp_path, shared_data, smollm2_capped):
    domain = get_domain("gsm8k-cot")
    (instance,) = domain.load_instances(str(shared_data / "gsm8k" / "test.jsonl"), n=1)
    model = CachedModel(smollm2_capped, CallCache(tmp_path / "calls.sqlite"))
    strategy = parse_strategy("backprompt:verifier=selfcheck@0.9,max_rounds=2")
    asyncio.run(run_experiment(model, domain, [strategy], [instance], tmp_path / "run"))
    (t,) = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    # One step check per round, and each round's verdict is that check at threshold 0.9.
    assert [c.round for c in t.step_checks] == [r.round for r in t.rounds]
    assert [r.verdict for r in t.rounds] == [verdict_from_check(c, 0.9, "selfcheck") for c in t.step_checks]
    # The loop stops at the first accepted round, else after max_rounds.
    accepted = next((r.round for r in t.rounds if r.verdict.ok), None)
    assert ([r.round for r in t.rounds], t.stop_reason) == (
        list(range(1, (accepted or 2) + 1)), "max_rounds" if accepted is None else "verifier_accepted"
    )
    # Each round: its answer, then four checking calls per checked step, in order.
    assert [(c.role, c.stage, c.round, c.step) for c in t.calls] == [
        call
        for r, check in zip(t.rounds, t.step_checks)
        for call in [("generate", None, r.round, None)]
        + [("check", stage, r.round, step.index) for step in check.steps for stage in STAGES]
    ]
    # A rejected round is resent with the domain's feedback on its verdict (redo from
    # the first contradicted step; the exact text on chosen replies is pinned in
    # test_strategy_control_flow.py).
    redo = [c.messages[-1]["content"] for c in t.calls if c.role == "generate"][1:]
    assert redo == [domain.feedback(instance, r.verdict, "first") for r in t.rounds[:-1]]


def test_mathqa_file_with_the_selfcheck_strategy(tmp_path, smollm2_capped):
    domain = get_domain("mathqa")
    (instance,) = domain.load_instances(str(FIXTURE), n=1)
    model = CachedModel(smollm2_capped, CallCache(tmp_path / "calls.sqlite"))
    strategy = parse_strategy("selfcheck:n=2,max_steps=2")
    result = asyncio.run(run_experiment(model, domain, [strategy], [instance], tmp_path / "run"))
    (t,) = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert result.new_trajectories == 1 and [r.round for r in t.rounds] == [1, 2]
    assert [(c.round, c.max_steps, c.steps_checked) for c in t.step_checks] == [
        (r, 2, min(2, c.steps_total)) for r, c in zip((1, 2), t.step_checks)
    ]
    assert [(c.role, c.stage, c.round, c.step) for c in t.calls] == [
        ("generate", None, 1, None), ("generate", None, 1, None),
        *[("check", stage, c.round, step.index) for c in t.step_checks for step in c.steps for stage in STAGES],
    ]
    has_answer = any(r.answer is not None for r in t.rounds)
    assert t.stop_reason == ("weighted_vote" if has_answer else "no_answer")
    # The options are part of what the checker treats as the question.
    assert "Options:" in question_text(domain, instance)
    collect = [c.messages[-1]["content"] for c in t.calls if c.stage == "collect"]
    assert [("Options:" in prompt) for prompt in collect] == [True] * sum(c.steps_checked for c in t.step_checks)


def test_selfcheck_command_checks_a_users_solution(tmp_path, smollm2_path):
    solution = tmp_path / "solution.txt"
    solution.write_text("Step 1: Tom starts with 12 apples.\nStep 2: 12 + 5 = 17.\nAnswer: 17\n")
    question = "Tom has 12 apples and buys 5 more. How many now?"
    proc = veriloop_process("selfcheck", "--model", "smollm2-135m", "--question", question,
                            "--solution-file", str(solution), "--json", "--cache", str(tmp_path / "calls.sqlite"))
    check = json.loads(proc.stdout)
    # Accepted (exit 0) above the default threshold 0.6, rejected (exit 1) otherwise.
    accepted = check["confidence"] > 0.6
    assert (proc.returncode, check["accepted"]) == (0 if accepted else 1, accepted), proc.stderr[-3000:]
    assert check["steps_total"] == check["steps_checked"] == 2
    assert all(s["result"] in (-1, 0, 1) and s["target"] for s in check["steps"])
