"""`veriloop rescore` (recorded/rescore.py): recorded answers judged again, no new answer.

The judge here is a scripted OpenAI-compatible server whose verdict depends only on the
proposed answer (it accepts an expression with a `*` in it), so every figure of the
report is worked out by hand below; the sound verifier is checked against the import on
the self-verification authors' GPT-4 runs, and SmolLM2 judges once for the plumbing.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import assert_one_line_error, read_trajectories, the_error, veriloop
from servers import ChatReplies, serving

from veriloop.domains import get_domain
from veriloop.recorded.importer import import_lines
from veriloop.recorded.rescore import rescore
from veriloop.recorded.selfverification import read_source

# g1..g4 are the game24 domain's first generated puzzles (1 1 11 13, 1 1 2 12, 1 1 3 8, 1 1 4 6).
# Per attempt: (reply, right by ground truth, accepted by the scripted judge: has a "*").
TOY = {
    "game24-g1": [("1+2", False, False), ("1 + 11 + 13 - 1", True, False)],
    "game24-g2": [("2 * 2", False, True), ("1 + 2 * 12 - 1", True, True)],
    "game24-g3": [("1 + 3 * 8 - 1", True, True)],
    "game24-g4": [("4 + 4", False, False), ("1 + 4 * 6 - 1", True, True), ("9", False, False)],
}
ACCEPT = '{"correct": true, "errors": []}'
REJECT = '{"correct": false, "errors": ["it does not make 24"]}'


class StarJudge(ChatReplies):
    """Accepts a proposed answer exactly when it holds a `*`."""

    def reply(self, body: dict) -> str:
        proposed = re.search(r"Proposed answer:\n(.*?)\n\n", body["messages"][-1]["content"], re.S)
        assert proposed is not None, "the judge prompt lost its proposed answer"
        return ACCEPT if "*" in proposed.group(1) else REJECT


@pytest.fixture(scope="module")
def star_judge() -> Iterator[list[str]]:
    with serving(StarJudge) as port:
        yield ["--model", "openai/star-judge", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", "none"]


@pytest.fixture
def toy_run(tmp_path: Path) -> Path:
    answers = tmp_path / "toy.jsonl"
    answers.write_text("".join(json.dumps({"instance_id": i, "responses": [r for r, _, _ in attempts],
                                           "condition": "toy", "model": "hand"}) + "\n"
                               for i, attempts in TOY.items()), encoding="utf-8")
    proc = veriloop("import", str(answers), "--domain", "game24", "--out", str(tmp_path / "imported"))
    assert proc.returncode == 0, proc.stderr
    truth = {t.instance_id: [r.correct for r in t.rounds] for t in read_trajectories(tmp_path / "imported")}
    assert truth == {i: [right for _, right, _ in attempts] for i, attempts in TOY.items()}
    return tmp_path / "imported"


def test_every_recorded_attempt_is_judged_and_the_loop_stops_at_the_first_accepted(toy_run, star_judge, tmp_path):
    out = tmp_path / "rescored"
    proc = veriloop("rescore", str(toy_run), "--verifier", "llm", *star_judge, "--out", str(out), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    rescored = {t.instance_id: t for t in read_trajectories(out)}
    assert {t.strategy for t in rescored.values()} == {"toy | rescored by llm"}
    for instance, attempts in TOY.items():
        t = rescored[instance]
        assert [r.text for r in t.rounds] == [reply for reply, _, _ in attempts]
        assert [r.verdict.ok for r in t.rounds] == [accepted for _, _, accepted in attempts]
        assert [r.correct for r in t.rounds] == [right for _, right, _ in attempts]
        # Only the judge was called: one verify call per recorded attempt, none generated.
        assert [(c.role, c.round) for c in t.calls] == [("verify", r.round) for r in t.rounds]
    stops = {i: (t.final_text, t.correct, t.stop_reason) for i, t in rescored.items()}
    assert stops == {
        "game24-g1": ("1 + 11 + 13 - 1", True, "max_rounds"),  # never accepted: its last attempt
        "game24-g2": ("2 * 2", False, "verifier_accepted"),
        "game24-g3": ("1 + 3 * 8 - 1", True, "verifier_accepted"),
        "game24-g4": ("1 + 4 * 6 - 1", True, "verifier_accepted"),
    }
    report = json.loads((out / "rescore.json").read_text())
    # 8 attempts: 4 right, 4 wrong; the judge errs on g1's right one and g2's first, wrong one.
    overall = report["overall"]
    assert (overall["n"], overall["accuracy"]) == (8, 0.75)
    assert (overall["false_positives"], overall["negatives"], overall["false_negatives"], overall["positives"]) == (
        1, 4, 1, 4)
    assert overall["accuracy_ci95"] == pytest.approx([0.4093, 0.9285], abs=1e-4)  # Wilson, 6 of 8
    [row] = report["stopping"]
    assert row == {
        "condition": "toy", "n": 4, "recorded": 3, "stopped_by_verifier": 3, "oracle": 4,
        "mean_attempts_recorded": 2.0, "mean_attempts_stopped": 1.5,
        "recorded_ci95": pytest.approx([0.3006, 0.9544], abs=1e-4),
        "stopped_ci95": pytest.approx([0.3006, 0.9544], abs=1e-4),
    }
    assert "| toy | 4 | 75.0% (3/4; 30.1-95.4) | 75.0% (3/4; 30.1-95.4) | 4/4 | 2.00 / 1.50 |" in (
        out / "rescore.md").read_text()


def test_a_second_rescore_resumes_and_a_budget_keeps_what_was_judged(toy_run, star_judge, tmp_path):
    out = tmp_path / "rescored"
    capped = veriloop("rescore", str(toy_run), *star_judge, "--out", str(out), "--no-cache", "--concurrency", "1",
                      "--max-calls", "3")
    # One at a time: g1's two calls, then g2's second call would be the fourth.
    assert the_error(capped) == (f"error: the rescore budget is spent (3 of 3 calls; max_calls): the answers judged so "
                                 f"far are kept in {out}; run again with a higher cap to go on")
    assert [t.instance_id for t in read_trajectories(out)] == ["game24-g1"]
    resumed = veriloop("rescore", str(toy_run), *star_judge, "--out", str(out), "--no-cache")
    assert resumed.returncode == 0, resumed.stderr
    assert "3 trajectories judged now, 1 resumed" in resumed.stdout
    assert sorted(t.instance_id for t in read_trajectories(out)) == sorted(TOY)


def test_another_judge_is_refused_in_the_same_directory(toy_run, star_judge, tmp_path):
    out = tmp_path / "rescored"
    assert veriloop("rescore", str(toy_run), "--verifier", "sound", "--out", str(out)).returncode == 0
    proc = veriloop("rescore", str(toy_run), *star_judge, "--out", str(out))
    assert_one_line_error(proc, str(out), "holds a run made with")


@pytest.mark.parametrize("args, fragments", [
    (["--verifier", "nonesuch"], ["nonesuch"]),
    ([], ["no such run directory"]),
])
def test_one_line_errors(tmp_path, args, fragments):
    proc = veriloop("rescore", str(tmp_path / "missing"), *args, "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, *fragments)


def test_the_sound_verifier_gives_the_imports_verdicts_and_stops_llm_llm_at_37(shared_data, tmp_path):
    """GPT-4's recorded colouring runs: LLM+LLM answered 1 of 100 graphs right, but 37 of
    its attempt sequences hold an answer the sound verifier would have stopped at; its 15
    samples stopped by the sound verifier give 39 (the paper's sampling row), with no new answer."""
    from veriloop.models.function import FunctionModel

    domain = get_domain("coloring")
    source = read_source(shared_data / "self_verification_outputs", domain, None)
    wanted = ("backprompt:feedback=llm", "sampling:k=15")
    lines = [(w, line) for w, line in source.lines if line.condition.startswith(wanted)]
    imported = tmp_path / "imported"
    import_lines(lines, domain, source.instances.get, imported, {"imported_from": "test", "format": "test"})
    result = asyncio.run(rescore(imported, tmp_path / "rescored", "sound",
                                 FunctionModel(lambda m: "unused", name="none", identity="none", concurrency=64),
                                 config={}))
    before = {(t.strategy, t.instance_id): [r.verdict.ok for r in t.rounds] for t in read_trajectories(imported)}
    after = {(t.strategy.partition(" | ")[0], t.instance_id): [r.verdict.ok for r in t.rounds]
             for t in read_trajectories(tmp_path / "rescored")}
    assert after == before and len(after) == 200
    stopping = {row.condition.partition(":")[0] + ":" + row.condition.partition(":")[2][:10]: (
        row.recorded, row.stopped_by_verifier, row.oracle) for row in result.scores.stopping}
    assert stopping == {"backprompt:feedback=l": (1, 37, 37), "sampling:k=15,tempe": (39, 39, 39)}
    assert result.backend_calls == 0


@pytest.mark.model
def test_smollm2_judges_recorded_answers_and_a_second_run_replays_nothing(toy_run, tmp_path):
    out = tmp_path / "rescored"
    proc = veriloop("rescore", str(toy_run), "--model", "smollm2-135m", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rescored = read_trajectories(out)
    assert sum(len(t.calls) for t in rescored) == 8
    assert {c.role for t in rescored for c in t.calls} == {"verify"}
    assert all(r.verdict is not None and r.verdict.verifier == "llm" for t in rescored for r in t.rounds)
    report = json.loads((out / "rescore.json").read_text())
    assert report["judge_model"] == "smollm2-135m" and report["overall"]["n"] == 8
    again = veriloop("rescore", str(toy_run), "--model", "smollm2-135m", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "0 trajectories judged now, 4 resumed, 0 backend calls" in again.stdout


@pytest.fixture(scope="module")
def gsm8k_run(shared_data, tmp_path_factory) -> Path:
    """Two recorded GSM8K programs (one right, one wrong: the domain runs them in the
    sandbox) imported against the shared data."""
    work = tmp_path_factory.mktemp("gsm8k")
    answers = work / "answers.jsonl"
    answers.write_text(
        json.dumps({"instance_id": "gsm8k-1", "responses": ["eggs = 16 - 3 - 4\nanswer = eggs * 2"]}) + "\n"
        + json.dumps({"instance_id": "gsm8k-2", "response": "answer = 2 + 2"}) + "\n", encoding="utf-8")
    proc = veriloop("import", str(answers), "--domain", "gsm8k", "--data", str(shared_data / "gsm8k" / "test.jsonl"),
                    "--out", str(work / "imported"))
    assert proc.returncode == 0, proc.stderr
    assert [t.correct for t in read_trajectories(work / "imported")] == [True, False]
    return work / "imported"


# verifier -> (each answer's (ok, unreadable), the roles of the judge's calls, tool calls per trajectory)
EVERY_VERIFIER = {
    "llm-cot": ([(False, True)] * 2, {"verify"}, [0, 0]),
    "critic": ([(True, False)] * 2, {"verify"}, [1, 1]),
    "critic-notool": ([(True, False)] * 2, {"verify"}, [0, 0]),
    "selfcheck": ([(True, False)] * 2, {"check"}, [0, 0]),
    "global-check@0.5": ([(True, False)] * 2, {"check"}, [0, 0]),
}


@pytest.mark.parametrize("verifier", list(EVERY_VERIFIER))
def test_every_kind_of_verifier_rescores_recorded_answers(gsm8k_run, instant_server, tmp_path, verifier):
    """The tool-using CRITIC gets the domain's tools (it runs each program in the sandbox:
    one tool call); SelfCheck checks each step. The scripted server gives every call one
    reply ending "Verdict: correct": no JSON verdict for the CoT judge (unreadable, so
    rejected), an acceptance for the others."""
    out = tmp_path / "rescored"
    proc = veriloop("rescore", str(gsm8k_run), "--verifier", verifier, *instant_server, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rescored = sorted(read_trajectories(out), key=lambda t: t.instance_id)
    assert [t.instance_id for t in rescored] == ["gsm8k-1", "gsm8k-2"]
    oks, roles, tool_calls = EVERY_VERIFIER[verifier]
    assert [(r.verdict.ok, r.verdict.unreadable) for t in rescored for r in t.rounds] == oks
    assert {c.role for t in rescored for c in t.calls} == roles
    assert [len(t.tool_calls) for t in rescored] == tool_calls
    assert [r.verdict.verifier for t in rescored for r in t.rounds] == [verifier.partition("@")[0]] * 2
    report = json.loads((out / "rescore.json").read_text())
    assert report["overall"]["n"] == 2 and report["verifier"] == verifier


def test_a_check_function_rescores_recorded_answers(toy_run, tmp_path):
    check = tmp_path / "checks.py"
    check.write_text("def has_star(instance, answer):\n    return [] if '*' in answer else ['no product']\n")
    out = tmp_path / "rescored"
    proc = veriloop("rescore", str(toy_run), "--check", f"python:{check}:has_star", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rescored = {t.instance_id: t for t in read_trajectories(out)}
    assert {i: [r.verdict.ok for r in t.rounds] for i, t in rescored.items()} == {
        i: [accepted for _, _, accepted in attempts] for i, attempts in TOY.items()}
    assert all(not t.calls for t in rescored.values())


def test_a_rescored_directory_can_be_rescored_again(toy_run, star_judge, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert veriloop("rescore", str(toy_run), *star_judge, "--out", str(first), "--no-cache").returncode == 0
    proc = veriloop("rescore", str(first), "--verifier", "sound", "--out", str(second))
    assert proc.returncode == 0, proc.stderr
    again = {t.instance_id: t for t in read_trajectories(second)}
    assert {t.strategy for t in again.values()} == {"toy | rescored by llm | rescored by sound"}
    assert {i: [r.correct for r in t.rounds] for i, t in again.items()} == {
        i: [right for _, right, _ in attempts] for i, attempts in TOY.items()}
    assert [r.verdict.ok for r in again["game24-g2"].rounds] == [False, True]


def test_an_eval_cell_of_a_domain_or_a_task_can_be_rescored(instant_server, tmp_path):
    """An eval cell's config records its own part of the file (not a whole experiment):
    rescore rebuilds its instances from it, a domain's and a task's alike."""
    tasks = tmp_path / "sums.jsonl"
    tasks.write_text('{"id": "s1", "q": "1+1", "a": "2"}\n{"id": "s2", "q": "2+2", "a": "4"}\n')
    check = tmp_path / "sums_rule.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    url = instant_server[instant_server.index("--base-url") + 1]
    (tmp_path / "exp.toml").write_text(
        'name = "cells"\nn = 2\nstrategies = ["standard"]\n'
        f'[models.main]\nid = "openai/scripted"\nbase_url = "{url}"\n'
        '[[domains]]\nname = "game24"\n'
        f'[[tasks]]\nfile = "{tasks}"\nprompt = "{{q}}"\ncheck = "python:{check}:check"\nlabel = "sums"\n')
    proc = veriloop("eval", str(tmp_path / "exp.toml"), "--out", str(tmp_path / "exp"), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    for cell, verifier, ids in (("game24", "sound", ["game24-g1", "game24-g2"]),
                                ("sums", f"python:{check}:check", ["1", "2"])):
        out = tmp_path / f"{cell}-rescored"
        args = ["--verifier", verifier] if verifier == "sound" else ["--check", verifier]
        proc = veriloop("rescore", str(tmp_path / "exp" / "main" / cell / "standard-seed0"), *args, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        rescored = sorted(read_trajectories(out), key=lambda t: t.instance_id)
        assert [t.instance_id for t in rescored] == ids
        assert [r.verdict.ok for t in rescored for r in t.rounds] == [False, False]  # the server's reply is no answer


# ------------------------------------------------------------------ the source is read, never written


def test_an_out_that_is_the_source_or_inside_it_is_refused_and_nothing_is_written(toy_run, tree_state):
    before = tree_state(toy_run)
    for out in (toy_run, toy_run / "rescored", toy_run / "rescored" / "deeper"):
        proc = veriloop("rescore", str(toy_run), "--verifier", "sound", "--out", str(out))
        assert_one_line_error(proc, f"--out {out} ", "rescore never writes into the run it reads: give another --out")
    assert tree_state(toy_run) == before


def test_an_out_folder_holding_the_source_is_written_beside_it(toy_run, tree_state):
    before = tree_state(toy_run)
    proc = veriloop("rescore", str(toy_run), "--verifier", "sound", "--out", str(toy_run.parent))
    assert proc.returncode == 0, proc.stderr
    assert len(read_trajectories(toy_run.parent)) == len(TOY)
    assert tree_state(toy_run) == before


def test_a_torn_last_line_in_the_source_is_left_as_it_is_and_not_judged(toy_run, tmp_path, tree_state):
    records = toy_run / "trajectories.jsonl"
    whole = records.read_bytes()
    last = whole.splitlines(keepends=True)[-1]
    records.write_bytes(whole[: len(whole) - len(last)] + last[: len(last) // 2])  # a run still appending it
    before = tree_state(toy_run)
    proc = veriloop("rescore", str(toy_run), "--verifier", "sound", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert tree_state(toy_run) == before
    assert sorted(t.instance_id for t in read_trajectories(tmp_path / "out")) == sorted(TOY)[:-1]


@pytest.mark.parametrize("name", ["trajectories.jsonl", "config.json", "instances.jsonl"])
def test_a_source_file_that_is_a_symbolic_link_is_refused_and_nothing_is_written(toy_run, tmp_path, tree_state, name):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (toy_run / name).rename(outside / name)
    with open(outside / name, "ab") as f:
        f.write(b'{"torn')  # what a reader that cuts torn lines would cut, there
    (toy_run / name).symlink_to(outside / name)
    before, there = tree_state(toy_run), tree_state(outside)
    proc = veriloop("rescore", str(toy_run), "--verifier", "sound", "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, f"{toy_run / name} is a symbolic link; a run directory's {name} must be a file in it")
    assert (tree_state(toy_run), tree_state(outside)) == (before, there)
    assert not (tmp_path / "out").exists()


def test_a_task_source_has_its_check_named_by_rescore_never_by_its_config(task_source, tmp_path, tree_state):
    run, marker = task_source
    before = tree_state(run)
    proc = veriloop("rescore", str(run), "--verifier", "sound", "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, f"{run} was made with --task and a check; rescore imports no code a run directory "
                          "names: give the check with --task-check SPEC")
    mine = tmp_path / "my_check.py"
    mine.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    proc = veriloop("rescore", str(run), "--verifier", "sound", "--task-check", f"python:{mine}:check",
                    "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    rescored = {t.instance_id: [r.verdict.ok for r in t.rounds] for t in read_trajectories(tmp_path / "out")}
    assert rescored == {"s1": [True], "s2": [False]}
    assert not marker.exists()
    assert tree_state(run) == before


def test_an_older_task_source_without_its_instances_needs_the_task_file_named(task_source, tmp_path):
    run, marker = task_source
    (run / "instances.jsonl").unlink()
    mine = tmp_path / "my_check.py"
    mine.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    args = ["--verifier", "sound", "--task-check", f"python:{mine}:check", "--out", str(tmp_path / "out")]
    assert_one_line_error(veriloop("rescore", str(run), *args),
                          f"{run} was made with --task and recorded no instances.jsonl (an older run); rescore reads "
                          "no task file a run directory names: give it with --task FILE")
    proc = veriloop("rescore", str(run), *args, "--task", str(tmp_path / "sums.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(t.instance_id for t in read_trajectories(tmp_path / "out")) == ["s1", "s2"]
    assert not marker.exists()


def test_a_check_is_given_its_time_by_check_timeout(toy_run, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text("import time\n\n\ndef slow(instance, answer):\n    time.sleep(2)\n    return True\n")
    proc = veriloop("rescore", str(toy_run), "--check", f"python:{slow}:slow", "--check-timeout", "0.1",
                    "--concurrency", "1", "--out", str(tmp_path / "out"))
    assert "did not return within 0.1 s" in the_error(proc) and "--check-timeout" in the_error(proc)
    assert_one_line_error(veriloop("rescore", str(toy_run), "--check-timeout", "1", "--out", str(tmp_path / "x")),
                          "--check-timeout goes with --check or --task-check")
    assert_one_line_error(veriloop("rescore", str(toy_run), "--check", f"python:{slow}:slow", "--check-timeout", "0",
                                   "--out", str(tmp_path / "x")),
                          "--check-timeout must be a positive number of seconds, not 0")
