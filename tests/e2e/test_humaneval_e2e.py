"""`veriloop run --domain humaneval` end to end: every strategy and every verifier on a
scripted OpenAI-compatible server whose replies depend on the request (so the loops'
outcomes are worked out by hand below), `veriloop rescore` with the code verifiers on
that run, the experiment file's dry run, and the real SmolLM2 once for the plumbing."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import TEST_REPLY_TOKENS, read_trajectories, veriloop
from servers import ChatReplies, serving

from veriloop.domains import get_domain
from veriloop.domains.humaneval import read_problems, visible_examples
from veriloop.domains.humaneval.extraction import signature
from veriloop.feedback import CRITIC_SYSTEM as CRITIQUE_SYSTEM
from veriloop.strategies import parse_strategy
from veriloop.verifiers.code import TEST_WRITER_SYSTEM, parse_asserts
from veriloop.verifiers.critic import CRITIC_SYSTEM
from veriloop.verifiers.llm_judge import JUDGE_SYSTEM

# Its tests on one worker (tests/conftest.py): the module fixture is a whole `veriloop run`,
# which each worker would make again.
ONE_WORKER = True

PROBLEMS = read_problems()[:2]  # humaneval-0 and humaneval-1, what -n 2 runs
MARK = "# answers only the docstring's examples"


def shown_only(problem) -> str:
    """A function that gives the docstring's examples their values and None to anything
    else: it passes `visible` (and tests made of the examples), fails the hidden tests."""
    table = {}
    for source, want in visible_examples(problem.data["prompt"], problem.data["entry_point"]):
        call = ast.parse(source, mode="eval").body
        table[repr(tuple(ast.literal_eval(a) for a in call.args))] = ast.literal_eval(want)
    return (f"```python\ndef {problem.data['entry_point']}(*args):\n    {MARK}\n"
            f"    return {table!r}.get(repr(args))\n```")


def right(problem) -> str:
    return f"```python\n{signature(problem.data['prompt'], problem.data['entry_point'])}" \
           f"{problem.data['canonical_solution']}```"


class CodeServer(ChatReplies):
    """A first answer (no history, an even seed) gives only the examples; a later one (a
    backprompt, a correction, an odd seed) the canonical solution. Judges accept exactly
    the canonical solution; the test writer turns the docstring's examples into asserts."""

    def reply(self, body: dict) -> str:
        messages = body["messages"]
        system, last = messages[0]["content"], messages[-1]["content"]
        problem = next((p for p in PROBLEMS if p.data["entry_point"] + "(" in "".join(m["content"] for m in messages)),
                       PROBLEMS[0])
        if system == TEST_WRITER_SYSTEM:
            examples = visible_examples(problem.data["prompt"], problem.data["entry_point"])
            return "```python\n" + "".join(f"assert {s.strip()} == {w.strip()}\n" for s, w in examples) + "```"
        if system == JUDGE_SYSTEM:
            return '{"correct": false, "errors": ["it only knows the examples"]}' if MARK in last else \
                '{"correct": true, "errors": []}'
        if system == CRITIQUE_SYSTEM:
            return "It returns None for every input the docstring does not show."
        if system == CRITIC_SYSTEM:
            return "It only knows the examples.\nVerdict: incorrect" if MARK in last else "Verdict: correct"
        if system.startswith("You are an expert Python programmer"):
            later = len(messages) > 2 or body.get("seed", 0) % 2 == 1
            return right(problem) if later else shown_only(problem)
        return "Verdict: correct"  # SelfCheck's global checker


@pytest.fixture(scope="module")
def code_server() -> Iterator[list[str]]:
    with serving(CodeServer) as port:
        yield ["--model", "openai/coder", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", "none"]


# spec -> per instance: (verdict ok or None, correct) of each round; the final answer's correctness
EVERY = {
    "standard": ([(None, False)], False),
    # The examples (and tests made of them) accept the answer that knows only them: a false accept.
    "backprompt:verifier=visible,feedback=first": ([(True, False)], False),
    "backprompt:verifier=generated,feedback=binary": ([(True, False)], False),
    # The hidden tests and the judges reject it; the backprompted answer is right.
    "backprompt:verifier=hidden,feedback=all": ([(False, False), (True, True)], True),
    "backprompt:verifier=llm,feedback=llm": ([(False, False), (True, True)], True),
    "backprompt:verifier=llm-cot,feedback=none": ([(False, False), (True, True)], True),
    # Sample 1 (odd seed) is right.
    "sampling:k=2,verifier=hidden": ([(False, False), (True, True)], True),
    "best-of-n:n=2,verifier=visible": ([(True, False), (True, True)], False),  # both accepted: the earlier
    "self-consistency:k=2": ([(None, False), (None, True)], False),  # a tie: the earlier
    "selfcheck:n=2,checker=global,gate=generated": ([(True, False), (True, True)], False),
    "critic:max_corrections=1": ([(False, False), (True, True)], True),
    "react": ([(None, False)], False),
    "rejection-sampling:n=2": ([(None, False), (None, True)], True),  # the oracle's metric picks the right one
}
CANONICAL = {spec: parse_strategy(spec, {"max_rounds": 2, "k": 5}).canonical for spec in EVERY}


@pytest.fixture(scope="module")
def scripted_run(code_server, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("humaneval") / "run"
    args = [arg for spec in EVERY for arg in ("-s", spec)]
    proc = veriloop("run", "--domain", "humaneval", "-n", "2", *args, "--max-rounds", "2", *code_server,
                    "--out", str(out), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_strategy_and_verifier_runs_and_ends_where_its_verifier_says(scripted_run):
    trajectories = read_trajectories(scripted_run)
    got = {(t.strategy, t.instance_id): ([(r.verdict.ok if r.verdict else None, r.correct) for r in t.rounds],
                                         t.correct) for t in trajectories}
    assert got == {(CANONICAL[s], p.id): outcome for s, outcome in EVERY.items() for p in PROBLEMS}


def test_a_rounds_verdict_carries_the_failing_tests(scripted_run):
    # By the exact strategy: sampling's trajectory also ends in "verifier=hidden", and the
    # file's order is the order trajectories finished in.
    backprompt = CANONICAL["backprompt:verifier=hidden,feedback=all"]
    hidden = next(t for t in read_trajectories(scripted_run)
                  if t.strategy == backprompt and t.instance_id == "humaneval-0")
    verdict = hidden.rounds[0].verdict
    assert (verdict.verifier, verdict.score) == ("hidden", 0.0)
    assert [e.where for e in verdict.errors] == [f"test {i} of 7" for i in range(1, 8)]
    assert verdict.errors[0].message == (
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True failed: got None, expected True")
    fed = next(c for c in hidden.calls if c.round == 2).messages[-1]["content"]
    assert fed.startswith("Your function is not correct:\n- assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2]")


def test_the_summary_names_each_condition_with_its_verifier(scripted_run):
    summary = json.loads((scripted_run / "summary.json").read_text())
    assert list(summary["strategies"]) == list(CANONICAL.values())
    oracle = summary["strategies"][CANONICAL["backprompt:verifier=hidden,feedback=all"]]
    assert (oracle["correct"], oracle["mean_rounds"], oracle["stop_reasons"]) == (2, 2.0, {"verifier_accepted": 2})


# Every wrong attempt of the run is an answer that knows only the examples: 13 an instance.
WRONG_ATTEMPTS = sum(not correct for rounds, _ in EVERY.values() for _, correct in rounds) * len(PROBLEMS)


@pytest.mark.parametrize(("verifier", "false_accepts", "false_rejects"), [
    # The examples accept every wrong attempt (and every right one); the hidden tests are the ground truth.
    ("visible", WRONG_ATTEMPTS, 0),
    ("hidden", 0, 0),
])
def test_rescore_measures_a_code_verifier_against_ground_truth(scripted_run, tmp_path, verifier, false_accepts,
                                                               false_rejects):
    out = tmp_path / "rescored"
    proc = veriloop("rescore", str(scripted_run), "--verifier", verifier, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "rescore.json").read_text())
    overall = report["overall"]
    assert (report["verifier"], report["judge_model"]) == (verifier, None)
    assert (overall["false_positives"], overall["false_negatives"]) == (false_accepts, false_rejects)
    assert overall["n"] == sum(len(rounds) for rounds, _ in EVERY.values()) * 2
    assert all(not t.calls for t in read_trajectories(out))  # no model judged
    assert "false positive rate (accepted among wrong)" in (out / "rescore.md").read_text()


def test_the_experiment_file_plans_the_issues_conditions(tmp_path):
    proc = veriloop("eval", "humaneval", "--dry-run", "--set", "n=2", "--out", str(tmp_path / "he"))
    assert proc.returncode == 0, proc.stderr
    rows = [" ".join(line.strip("│ ").split()).split(" │ ") for line in proc.stdout.splitlines()
            if line.startswith("│")]
    assert [(r[1], r[2], r[5], r[6]) for r in rows] == [
        ("humaneval", "Standard", "0/2", "2"), ("humaneval", "Self-critique", "0/2", "28"),
        ("humaneval", "Visible first", "0/2", "10"), ("humaneval", "Visible binary", "0/2", "10"),
        ("humaneval", "Generated first", "0/2", "20"), ("humaneval", "Sampling k=5 visible", "0/2", "10"),
        ("humaneval", "Oracle hidden tests", "0/2", "10")]
    assert "7 cells, 14 trajectories to run: at most 90 calls" in proc.stdout


@pytest.mark.model
def test_smollm2_runs_humaneval_with_the_code_verifiers(tmp_path):
    """The real small model, its replies cut at 32 tokens: mostly a function cut off
    mid-signature (malformed: it does not parse), which the loops must carry on from.
    Whatever it wrote, each verdict is what the verifier gives on that reply."""
    out = tmp_path / "smol"
    specs = ["backprompt:verifier=visible,feedback=first", "backprompt:verifier=generated", "sampling:verifier=visible",
             "best-of-n:n=2,verifier=hidden"]
    args = [arg for spec in specs for arg in ("-s", spec)]
    proc = veriloop("run", "--domain", "humaneval", "-n", "1", "--model", "smollm2-135m", *args, "--max-rounds", "2",
                    "--k", "2", "--out", str(out), "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    domain = get_domain("humaneval")
    (problem,) = PROBLEMS[:1]
    trajectories = read_trajectories(out)
    assert sorted(t.strategy.partition(":")[0] for t in trajectories) == ["backprompt", "backprompt", "best-of-n",
                                                                         "sampling"]
    for t in trajectories:
        assert len(t.rounds) in (1, 2) and all(c.completion_tokens <= TEST_REPLY_TOKENS for c in t.calls)
        for r in t.rounds:
            name = r.verdict.verifier
            if name == "generated":
                reply = next(c.response for c in t.calls if c.role == "verify" and c.round == r.round) \
                    if r.answer is not None else None
                tests = parse_asserts(reply, "has_close_elements") if reply is not None else []
                expected = domain.check_asserts(problem, r.text, tests) if (tests or reply is None) else None
                assert r.verdict.unreadable if expected is None else r.verdict.ok == expected.ok
            else:
                expected = domain.check_examples(problem, r.text) if name == "visible" else domain.verify(problem, r.text)
                assert (r.verdict.ok, r.verdict.errors, r.verdict.malformed) == (
                    expected.ok, expected.errors, expected.malformed)
            assert r.correct == domain.score(problem, r.text)
