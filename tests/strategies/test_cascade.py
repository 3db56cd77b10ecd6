"""The cascade strategy's control flow, pinned with scripted models: the generator answers
first, and only a rejected answer goes to the next stage (the escalation_model role, or
more samples of the generator); the feedback is carried over only when asked; records
name the model of each call, and budgets and prices charge each model its own calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted import play

import veriloop
from veriloop.domains import get_domain
from veriloop.models.base import Completion
from veriloop.runs.runner import load_trajectories

GAME24 = get_domain("game24")
PUZZLE = GAME24.parse_instance({"instance": "1 1 4 6"})
BASE = GAME24.prompt(PUZZLE)
RIGHT = "Answer: 1 + 4 * 6 - 1"
TWENTY = "Answer: (1 + 1) * (4 + 6)"


def roles_and_params(t, model) -> list[tuple[str, float, int]]:
    return [(c.role, p.temperature, p.sample_offset) for c, (_, p) in zip(t.calls, model.asked)]


def test_an_accepted_first_answer_never_escalates() -> None:
    t, model = play("cascade", GAME24, PUZZLE, [RIGHT])
    assert (t.correct, t.stop_reason, [c.role for c in t.calls]) == (True, "verifier_accepted", ["generate"])


def test_a_rejected_answer_escalates_and_without_a_role_the_next_stage_samples_the_generator_afresh() -> None:
    t, model = play("cascade:tries=2,escalated_tries=2", GAME24, PUZZLE, [TWENTY, TWENTY, TWENTY, RIGHT])
    # The generator's first answer is greedy; every later one is a new sample of the base prompt.
    assert roles_and_params(t, model) == [("generate", 0.0, 0), ("generate", 1.0, 1), ("escalate", 1.0, 2),
                                          ("escalate", 1.0, 3)]
    assert all(messages == BASE for messages, _ in model.asked)
    assert [(r.round, r.verdict.ok) for r in t.rounds] == [(1, False), (2, False), (3, False), (4, True)]
    assert (t.final_text, t.stop_reason, t.correct) == (RIGHT, "verifier_accepted", True)


def test_with_nothing_accepted_the_last_attempt_is_the_answer() -> None:
    t, _ = play("cascade", GAME24, PUZZLE, [TWENTY, "Answer: 4 * 6 + 1"])
    assert (t.final_text, t.stop_reason, len(t.rounds)) == ("Answer: 4 * 6 + 1", "max_rounds", 2)


def test_carry_feeds_the_verdict_forward_across_the_escalation() -> None:
    t, model = play("cascade:carry=true,feedback=binary", GAME24, PUZZLE, [TWENTY, RIGHT])
    escalated, params = model.asked[1]
    reask = "The numbers are 1 1 4 6. Please try again and reply with one line of the form `Answer: <expression>`."
    assert escalated == [*BASE, {"role": "assistant", "content": TWENTY},
                         {"role": "user", "content": f"That answer is not correct. {reask}"}]
    assert (params.temperature, params.sample_offset, t.correct) == (0.0, 0, True)


def test_its_name_lists_every_option_and_its_budget_counts_both_stages() -> None:
    spec = veriloop.strategy("cascade:tries=2,escalated_tries=3,verifier=llm")
    assert spec.canonical == ("cascade:carry=False,escalated_tries=3,feedback=first,sample_temperature=1,"
                              "temperature=0,tries=2,verifier=llm")
    assert spec.calls_per_instance() == 10  # five answers, each judged by one call
    assert veriloop.strategy("cascade:carry=true,feedback=llm").calls_per_instance() == 3  # two answers, one critique


QUESTIONS = [{"q": "2+3", "a": "5"}, {"q": "4+4", "a": "8"}]


def small(messages):  # right only on the first question
    return Completion(text="5" if "2+3" in messages[-1]["content"] else "0", finish_reason="stop",
                      prompt_tokens=10, completion_tokens=1)


def large(messages):
    left, right = messages[0]["content"].split("+")
    return Completion(text=str(int(left) + int(right)), finish_reason="stop", prompt_tokens=10, completion_tokens=1)


def cascade_experiment(tmp_path: Path, **extra: object) -> dict:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    return {
        "name": "cascade",
        "strategies": ["cascade"],
        "models": {"small": {"price": {"prompt": 1.0, "completion": 1.0}},
                   "large": {"price": {"prompt": 100.0, "completion": 100.0}}},
        "generators": ["small"],
        "roles": {"escalation_model": "large"},
        "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "label": "sums"}],
        **extra,
    }


def run_cascade(tmp_path: Path, **extra: object):
    models = {"small": veriloop.model(small, name="small", identity="small-v1", cache=False),
              "large": veriloop.model(large, name="large", identity="large-v1", cache=False)}
    return veriloop.eval_experiment(cascade_experiment(tmp_path, **extra), out=tmp_path / "out", models=models,
                                    cache=False, progress=False)


def test_the_escalation_model_answers_only_what_the_generator_got_wrong_and_is_priced_as_itself(tmp_path) -> None:
    result = run_cascade(tmp_path)
    [row] = result.rows
    assert (row.correct, row.n, row.model_calls, row.escalation_model) == (2, 2, 3, "large")
    # 3 calls of 11 tokens: two of the small model at $1 per million, one of the large at $100.
    assert row.usd == pytest.approx((2 * 11 * 1.0 + 11 * 100.0) / 1e6)
    [plan] = result.plans
    records = {t.instance_id: t for t in load_trajectories(plan.run_dir / "trajectories.jsonl")}
    assert [[(c.role, c.model, c.response) for c in t.calls] for t in records.values()] == [
        [("generate", None, "5")], [("generate", None, "0"), ("escalate", "large", "8")]]


def test_a_budget_stops_the_cascade_before_it_escalates(tmp_path) -> None:
    result = run_cascade(tmp_path, cell_budget={"max_calls": 2})
    [row] = result.rows
    # The first question takes one call; the second's escalation would be the third.
    assert (row.n, row.correct, row.status) == (1, 1, "incomplete")
