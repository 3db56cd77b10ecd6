"""Verification and critique studies, and the self-verification reproduction."""

from __future__ import annotations

import asyncio
import csv
import json

import pytest
from scripted import SameReply
from servers import SERVER_REPLY

from veriloop.domains import get_domain
from veriloop.experiment.overrides import find_experiment, load_experiment
from veriloop.models import CachedModel, CallCache
from veriloop.records import RoundRecord, Trajectory
from veriloop.reproduce.self_verification import accuracy_by_round, reproduce
from veriloop.studies.verification import JudgedItem, run_verification_study, score_verifier
from veriloop.verifiers.llm_judge import judge_messages, parse_judgement

# The conditions of Table 1, (label, spec), as the shipped experiment file has them.
CONDITIONS = [(s.key, s.spec) for s in load_experiment(find_experiment("self-verification")).strategies]


def item(truth: bool, judged: bool | None, kind: str = "correct") -> JudgedItem:
    return JudgedItem(domain="d", instance_id="i", index=0, kind=kind, candidate="x", truth=truth, judge="llm",
                      judged_ok=judged, reply="")


def test_verifier_rates_follow_the_papers_definitions():
    items = [item(True, True), item(True, False), item(True, True), item(False, True), item(False, False),
             item(False, False), item(False, False)]
    s = score_verifier(items)
    assert s.n == 7 and s.accuracy == pytest.approx(5 / 7)
    assert (s.false_positives, s.negatives) == (1, 4) and s.false_positive_rate == pytest.approx(0.25)
    assert (s.false_negatives, s.positives) == (1, 3) and s.false_negative_rate == pytest.approx(1 / 3)
    only_wrong = score_verifier([item(False, False)])
    assert only_wrong.false_negative_rate is None and only_wrong.fnr_ci95 is None


def test_verification_table_gives_intervals_overall_and_per_kind():
    from veriloop.studies.verification import verification_table

    items = [item(True, True), item(True, False), item(False, True, "random"), item(False, False, "random")]
    table = verification_table(items, ["d"])
    assert "| d | llm | 50.0% (15%-85%) | 50.0% (9%-91%) (1/2) | 50.0% (9%-91%) (1/2) | 4 | 0 |" in table
    assert "| d | llm | correct | 1/2 (9%-91%) | 1/2 | 2/2 |" in table
    assert "| d | llm | random | 1/2 (9%-91%) | 1/2 | 0/2 |" in table


def test_chain_of_thought_judge_takes_the_last_verdict_and_asks_for_domain_fields():
    reply = 'Let me think: {"correct": true} looks tempting, but 3*8 uses 3 twice.\nFinal: {"correct": false, "errors": ["3 twice"]}'
    assert parse_judgement(reply, last=True).ok is False
    assert parse_judgement(reply).ok is True
    messages = judge_messages("task", "Answer: 1+2", {"evaluation": "the value"}, cot=True)
    assert '"evaluation": <the value>' in messages[-1]["content"] and "step by step" in messages[-1]["content"]


def _trajectory(strategy: str, correct_by_round: list[bool]) -> Trajectory:
    t = Trajectory(strategy=strategy, domain="d", model="m", instance_id=f"i{len(correct_by_round)}", seed=0)
    t.rounds = [RoundRecord(round=r + 1, text="", answer=None, correct=c) for r, c in enumerate(correct_by_round)]
    return t


def test_accuracy_by_round_counts_as_if_the_loop_timed_out_there():
    labels = {label: spec for label, spec in CONDITIONS}
    spec = labels["Sound F.E.F."]
    ts = [_trajectory(spec, [False, False, True]), _trajectory(spec, [True]), _trajectory(spec, [False] * 4)]
    curves = accuracy_by_round({"d": ts}, labels, max_rounds=4)
    assert curves["d"]["Sound F.E.F."] == [pytest.approx(1 / 3), pytest.approx(1 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3)]
    # A judge that rejects a right answer and moves to a wrong one lowers the curve.
    flip = [_trajectory(labels["LLM+LLM"], [True, False])]
    assert accuracy_by_round({"d": flip}, labels, 2)["d"]["LLM+LLM"] == [1.0, 0.0]


@pytest.mark.model
def test_verification_study_judges_every_candidate_and_resumes(smollm2_capped, tmp_path):
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=1)
    model = CachedModel(smollm2_capped, CallCache(tmp_path / "calls.sqlite"))
    items = asyncio.run(run_verification_study(model, domain, instances, tmp_path / "study"))
    kinds = {(i.kind, i.note.split()[0] if i.note else "") for i in items}
    assert {("correct", ""), ("ablated", "operator"), ("ablated", "number"), ("random", ""), ("llm", "")} <= kinds
    by_judge = {j: [i for i in items if i.judge == j] for j in ("llm", "llm-cot", "critique")}
    assert len(by_judge["llm"]) == len(by_judge["llm-cot"]) == 5
    assert len(by_judge["critique"]) == sum(not i.truth for i in by_judge["llm"])
    assert all(i.reply and i.completion_tokens > 0 for i in items)
    assert all(set(i.report) == {"states_value", "evaluation_correct"} for i in items)
    calls = model.stats.backend_calls
    again = asyncio.run(run_verification_study(model, domain, instances, tmp_path / "study"))
    assert model.stats.backend_calls == calls and len(again) == len(items)
    model.cache.close()


def test_reproduction_writes_every_table_and_resumes(tmp_path, shared_data):
    # On a model with one reply: the real model runs this reproduction (its file, its
    # engine, its report) in test_doc_commands.py, `veriloop reproduce self-verification`;
    # here SmolLM2's 65 calls on the sequential path took two minutes.
    model = CachedModel(SameReply(SERVER_REPLY), CallCache(tmp_path / "calls.sqlite"))
    out = tmp_path / "repro"
    def run():
        return asyncio.run(reproduce(model, out, n=1, data_root=shared_data, verification_n=1, max_rounds=2,
                                     domains=["game24"]))

    payload = run()
    for name in ("table1.md", "table1.csv", "table2.md", "critique.md", "figure2.png", "reproduction.json"):
        assert (out / name).stat().st_size > 0, name
    rows = list(csv.DictReader((out / "table1.csv").open()))
    assert [r["condition"] for r in rows] == [label for label, _ in CONDITIONS if label != "Sound A.E.F."]
    assert all(r["n"] == "1" for r in rows)
    assert payload["provenance"]["game24"].startswith("1 instances") and "24.csv" in payload["provenance"]["game24"]
    table1 = (out / "table1.md").read_text()
    assert "game24 (GPT-4, paper) | 5% | 3% | 36% | 38% | n/a | 28% | 42% | 6% |" in table1
    assert json.loads((out / "reproduction.json").read_text())["figure2"]["game24"]["Sound F.E.F."]
    calls = model.stats.backend_calls
    run()
    assert model.stats.backend_calls == calls
    model.cache.close()
