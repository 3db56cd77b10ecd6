"""The command line as a user meets it: clear one-line errors, verify exit codes, a run, the
backend calls a run reports (cache on and off), and a run directory that refuses to mix runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TEST_DATA, assert_one_line_error, read_trajectories, veriloop, veriloop_process


class TestBadInput:
    def test_unknown_domain(self):
        assert_one_line_error(veriloop("run", "--domain", "chess"), "unknown domain 'chess'", "game24")

    def test_unknown_strategy(self):
        assert_one_line_error(veriloop("run", "--strategy", "magic"), "unknown strategy 'magic'", "backprompt")

    def test_bad_strategy_option(self):
        assert_one_line_error(veriloop("run", "--strategy", "backprompt:feedback=loud"), "feedback level 'loud'")

    def test_unreadable_data_file(self, tmp_path):
        missing = tmp_path / "nope.csv"
        assert_one_line_error(veriloop("run", "--data", str(missing)), str(missing), "not found")
        bad = tmp_path / "bad.csv"
        bad.write_text("Rank,Puzzles\n1,1 1 4 6\n2,1 2 x 4\n")
        assert_one_line_error(veriloop("run", "--data", str(bad)), str(bad), "line 3")

    def test_missing_model(self, tmp_path):
        proc = veriloop("run", "--model", "qwen2.5-coder-0.5b", home=tmp_path / "empty-home")
        assert_one_line_error(proc, "not installed", "veriloop models install qwen2.5-coder-0.5b")

    def test_missing_gguf_path(self, tmp_path):
        assert_one_line_error(veriloop("run", "--model", str(tmp_path / "x.gguf")), "does not exist")

    def test_not_a_gguf_file(self, tmp_path):
        fake = tmp_path / "weights.gguf"
        fake.write_bytes(b"not a model at all")
        assert_one_line_error(veriloop("run", "--model", str(fake)), "not a GGUF model file")

    def test_unknown_model_id(self):
        assert_one_line_error(veriloop("run", "--model", "gpt-99"), "unknown model 'gpt-99'", "openai/<model>")

    def test_corrupt_weight_file(self, tmp_path, smollm2_path):
        from veriloop.models.packs import PACKS

        home = tmp_path / "home"
        (home / "models").mkdir(parents=True)
        corrupt = home / "models" / PACKS["smollm2-135m"].filename
        shutil.copyfile(smollm2_path, corrupt)
        with open(corrupt, "r+b") as f:
            f.seek(5_000_000)
            byte = f.read(1)
            f.seek(5_000_000)
            f.write(bytes([byte[0] ^ 0xFF]))
        proc = veriloop("run", "--model", "smollm2-135m", home=home)
        assert_one_line_error(proc, "corrupt", "veriloop models install smollm2-135m --force")


class TestVerify:
    def test_single_answer_exit_codes(self):
        answer = "Multiply the big ones.\nAnswer: 4 × 6 × (1 × 1) = 24"
        ok = veriloop("verify", "game24", "--instance", "1 1 4 6", "--answer", answer)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert json.loads(ok.stdout)["ok"] is True
        wrong = veriloop("verify", "game24", "--instance", "1 1 4 6", "--answer", "(6+1)*4-1")
        assert wrong.returncode == 1
        verdict = json.loads(wrong.stdout)
        assert verdict["ok"] is False and verdict["errors"][0]["kind"] == "wrong_value"

    def test_batch_writes_one_verdict_per_line(self, tmp_path):
        batch = tmp_path / "in.jsonl"
        rows = [
            {"instance": "1 1 4 6", "answer": "(4*6)/(1*1)"},
            {"instance": "1 1 4 6", "answer": "6*4"},
            {"instance": "1 1 4 6", "answer": "__import__('os').system('touch /tmp/pwned')"},
            {"instance": "4 4 6 8", "answer": "(4 + 8) * (6 - 4) = 24"},
        ]
        batch.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        proc = veriloop("verify", "game24", "--batch", str(batch))
        assert proc.returncode == 0, proc.stderr
        verdicts = [json.loads(line) for line in proc.stdout.splitlines()]
        assert [v["ok"] for v in verdicts] == [True, False, False, True]
        assert verdicts[1]["errors"][0]["kind"] == "wrong_numbers"
        assert verdicts[2]["malformed"] is True
        assert set(verdicts[0]) == {"ok", "errors", "malformed"}

    def test_bad_batch_line_names_the_line(self, tmp_path):
        batch = tmp_path / "in.jsonl"
        batch.write_text('{"instance": "1 1 4 6", "answer": "6*4"}\n{"answer": "1"}\n')
        assert_one_line_error(veriloop("verify", "game24", "--batch", str(batch)), "line 2")

    def test_bad_instance(self):
        proc = veriloop("verify", "game24", "--instance", "1 2 3", "--answer", "1")
        assert_one_line_error(proc, "four whole numbers")


def help_at_80_columns(*args: str) -> str:
    """The help of a command as an 80-column terminal shows it (in process)."""
    from typer.testing import CliRunner

    from veriloop.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def registry_words() -> list[str]:
    from veriloop.feedback import LEVELS
    from veriloop.strategies import STRATEGIES
    from veriloop.verifiers import THRESHOLDED, VERIFIERS

    words = [*STRATEGIES, *VERIFIERS, *(f"{name}@T" for name in THRESHOLDED), *LEVELS]
    return words + [field for cls in STRATEGIES.values() for field in cls.model_fields]


def test_run_help_lists_the_registries_uncut_in_80_columns():
    from veriloop.models.packs import DEFAULT_MODEL

    proc = veriloop("run", "--help", columns="80")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "\u2026" not in text  # nothing cut with an ellipsis
    assert max(len(line) for line in text.splitlines()) <= 80
    words = {word.rstrip(".,;:)]").lstrip("([") for word in text.split()}
    for word in ("selfcheck", "global-check", "selfcheck@T", "best-of-n", "none", "llm", *registry_words()):
        assert word in words, word
    for option in ("--strategy", "--model", "--max-rounds", "--base-url", "--api-key", "--cache", "--no-cache",
                   "--toxicity-backend", "--allow-unisolated", "--no-allow-unisolated", "--domain-option"):
        assert option in words, option
    assert DEFAULT_MODEL in words


def test_a_strategy_verifier_or_level_added_to_a_registry_shows_in_run_help(monkeypatch):
    import veriloop.feedback
    import veriloop.verifiers
    from veriloop.strategies import STRATEGIES
    from veriloop.strategies.base import Strategy
    from veriloop.verifiers import VERIFIERS

    class Throwaway(Strategy):
        kind = "throwaway-strategy"
        summary = "a strategy that exists only in this test"
        patience: int = 3

    monkeypatch.setitem(STRATEGIES, Throwaway.kind, Throwaway)
    # A verifier that says it takes a threshold is listed with @T (verifiers.thresholded).
    monkeypatch.setitem(VERIFIERS, "throwaway-verifier", VERIFIERS["selfcheck"])
    monkeypatch.setattr(veriloop.feedback, "LEVELS", (*veriloop.feedback.LEVELS, "throwaway-level"))
    text = help_at_80_columns("run")
    for word in ("throwaway-strategy", "a strategy that exists only in this test", "patience",
                 "throwaway-verifier", "throwaway-verifier@T", "throwaway-level"):
        assert word in text, word
    assert "\u2026" not in text


def all_commands() -> list[tuple[str, ...]]:
    import typer
    from typer.core import TyperGroup

    from veriloop.cli import app

    found: list[tuple[str, ...]] = []

    def walk(command: typer.core.TyperCommand | TyperGroup, path: tuple[str, ...]) -> None:
        found.append(path)
        if isinstance(command, TyperGroup):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def test_every_help_page_fits_80_columns_uncut():
    commands = all_commands()
    assert ("run",) in commands and ("reproduce", "critic") in commands and ("tools", "run") in commands
    for path in commands:
        text = help_at_80_columns(*path)
        assert "\u2026" not in text, path
        assert max(len(line) for line in text.splitlines()) <= 80, path
        listing = text.partition("Commands:")[2]  # a group's commands, one line each
        for line in listing.splitlines():
            assert not line.endswith("..."), (path, line)


@pytest.mark.model
def test_run_prints_the_table_and_writes_the_run_dir(tmp_path, smollm2_path):
    args = ("run", "--model", "smollm2-135m", "-n", "2", "--strategy", "standard;sampling:k=2",
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "calls.sqlite"))
    proc = veriloop_process(*args)
    assert proc.returncode == 0, proc.stderr
    for column in ("strategy", "accuracy", "mean rounds", "model calls", "tokens", "seconds"):
        assert column in proc.stdout
    assert "standard" in proc.stdout and "sampling:k=2" in proc.stdout
    assert "4/4" in proc.stderr  # the progress report reached the end (2 strategies x 2 puzzles)
    assert f"see every trajectory: veriloop view {tmp_path / 'run'}" in proc.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert len(summary["strategies"]) == 2
    again = veriloop_process(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout


def test_verify_coloring_batch_and_single(tmp_path, shared_data):
    graph_file = shared_data / "graph_coloring" / "instance-1.col"
    graph = graph_file.read_text()
    from veriloop.domains.coloring import chromatic_number, parse_col, render_assignment

    n, edges, k = parse_col(graph)
    _, colouring = chromatic_number(n, edges)
    good = render_assignment(dict(enumerate(colouring)))
    u, v = edges[0]
    clash = dict(enumerate(colouring))
    clash[v] = clash[u]
    rows = [{"graph": graph, "answer": good}, {"graph": graph, "answer": render_assignment(clash)},
            {"graph": graph, "answer": "no colours here"}]
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    proc = veriloop("verify", "coloring", "--batch", str(batch))
    assert proc.returncode == 0, proc.stderr
    verdicts = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [v["ok"] for v in verdicts] == [True, False, False]
    assert "edge_conflict" in {e["kind"] for e in verdicts[1]["errors"]}
    assert verdicts[2]["malformed"] is True
    single = veriloop("verify", "coloring", "--graph", str(graph_file), "--answer", good)
    assert single.returncode == 0 and json.loads(single.stdout)["ok"] is True


def test_malformed_graph_file_is_one_line_naming_file_and_line(tmp_path):
    folder = tmp_path / "graphs"
    folder.mkdir()
    (folder / "instance-1.col").write_text("e 0 1\ne 1 2\ne 2\nc OPTIMAL CHROMATIC NUMBER === 2")
    proc = veriloop("run", "--domain", "coloring", "--data", str(folder), "--model", "smollm2-135m")
    assert_one_line_error(proc, "instance-1.col", "line 3")


def test_verify_planning_single_batch_and_bad_pddl(tmp_path, shared_data):
    folder = shared_data / "planbench" / "blocksworld"
    domain_file, problem = folder / "domain.pddl", folder / "instances" / "instance-1.pddl"
    plan = "1. Unstack the blue block from on top of the orange block\n2. put down the blue block\n" \
           "3. pick up the orange block\n4. stack the orange block on top of the blue block."
    args = ("verify", "blocksworld", "--domain-file", str(domain_file), "--problem", str(problem), "--plan-text")
    ok = veriloop(*args, plan)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    pddl_plan = "(unstack b c)\n(pick-up c)"
    bad = veriloop(*args, pddl_plan)
    assert bad.returncode == 1
    errors = json.loads(bad.stdout)["errors"]
    assert errors[0]["kind"] == "inexecutable" and "2" in (errors[0]["where"] or errors[0]["message"])

    batch = tmp_path / "plans.jsonl"
    rows = [{"domain": domain_file.read_text(), "problem": problem.read_text(), "answer": plan},
            {"domain": domain_file.read_text(), "problem": problem.read_text(), "answer": pddl_plan}]
    batch.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    proc = veriloop("verify", "blocksworld", "--batch", str(batch))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["ok"] for line in proc.stdout.splitlines()] == [True, False]

    broken = tmp_path / "broken.pddl"
    broken.write_text("(define (problem p) (:domain blocksworld-4ops)\n (:objects a b)\n (:init (ontable a)\n")
    assert_one_line_error(
        veriloop("verify", "blocksworld", "--domain-file", str(domain_file), "--problem", str(broken),
                 "--plan-text", plan),
        "broken.pddl",
    )


def test_verify_planning_checks_any_strips_domain_in_pddl_syntax(shared_data):
    folder = shared_data / "planbench" / "mystery_blocksworld"
    from veriloop.domains import get_domain

    mystery = get_domain("mystery_blocksworld")
    instance = mystery.load_instances(str(folder), n=1)[0]
    reference = "\n".join(a.pddl() for a in mystery.reference_plan(instance))
    domain_file, problem = folder / "domain.pddl", instance.data["problem_source"]
    args = ("verify", "planning", "--domain-file", str(domain_file), "--problem", str(problem), "--plan-text")
    ok = veriloop(*args, reference)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    first_step_dropped = "\n".join(reference.splitlines()[1:])
    bad = veriloop(*args, first_step_dropped)
    assert bad.returncode == 1 and not json.loads(bad.stdout)["ok"]


def test_verify_planning_checks_a_plan_of_a_problem_too_large_to_solve():
    # pyperplan does not solve this Logistics problem in minutes; checking needs no solving.
    folder = TEST_DATA / "logistics"
    plan = (folder / "plans" / "instance-2.txt").read_text()
    args = ("verify", "planning", "--domain-file", str(folder / "domain.pddl"),
            "--problem", str(folder / "instances" / "instance-2.pddl"), "--plan-text")
    ok = veriloop(*args, plan)
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stdout + ok.stderr
    bad = veriloop(*args, "\n".join(plan.splitlines()[:-1]))
    assert bad.returncode == 1 and [e["kind"] for e in json.loads(bad.stdout)["errors"]] == ["unmet_goal"]


# --------------------------------------------------------------------------- your own task: run --task

ARITH = [{"id": "a", "question": "What is 2+2?", "answer": "4"}, {"id": "b", "question": "What is 3+3?", "answer": "6"}]
CHECKS = '''
def two_errors(row, answer):
    """Rejects every answer with two errors, so every loop runs to its budget."""
    return [f"the reply for {row['id']} is wrong", f"it has {len(answer)} characters"]


def explodes_on_r3(row, answer):
    if row["id"] == "r3":
        raise ValueError("boom on purpose")
    return ""
'''


def write_task(folder: Path, rows: list[dict[str, str]], name: str = "arith") -> tuple[Path, Path]:
    task = folder / f"{name}.jsonl"
    task.write_text("".join(json.dumps(r) + "\n" for r in rows))
    checks = folder / "my_checks.py"
    checks.write_text(CHECKS)
    return task, checks


class TestTaskOptions:
    def test_task_and_a_domain_exclude_each_other(self, tmp_path):
        task, _ = write_task(tmp_path, ARITH)
        proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "--domain", "coloring")
        assert_one_line_error(proc, "either --domain", "--task", "not both")

    def test_task_needs_a_prompt(self, tmp_path):
        task, _ = write_task(tmp_path, ARITH)
        assert_one_line_error(veriloop("run", "--task", str(task)), "--task needs --prompt")

    def test_task_options_need_a_task(self):
        assert_one_line_error(veriloop("run", "--prompt", "{q}", "--check", "m:f"), "--prompt, --check go with --task")
        assert_one_line_error(veriloop("run", "--reference-field", "answer"), "--reference-field goes with --task")

    def test_a_task_reads_no_data_file(self, tmp_path):
        task, _ = write_task(tmp_path, ARITH)
        proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "--data", str(tmp_path / "x.csv"))
        assert_one_line_error(proc, "--data and --domain-option go with --domain")

    def test_check_that_cannot_be_loaded(self, tmp_path):
        task, checks = write_task(tmp_path, ARITH)
        base = ("run", "--task", str(task), "--prompt", "{question}", "--check")
        assert_one_line_error(veriloop(*base, f"python:{tmp_path / 'nope.py'}:f"), "nope.py is not a file")
        assert_one_line_error(veriloop(*base, f"python:{checks}:missing"), "has no 'missing'")
        assert_one_line_error(veriloop(*base, "no_such_package.checks:f"), "cannot import no_such_package.checks")
        assert_one_line_error(veriloop(*base, "just-a-name"), "should look like")

    def test_prompt_field_missing_from_a_record(self, tmp_path):
        task, checks = write_task(tmp_path, ARITH)
        proc = veriloop("run", "--task", str(task), "--prompt", "{q}", "--check", f"python:{checks}:two_errors")
        assert_one_line_error(proc, "no field 'q'", "question")

    def test_sound_verifier_without_a_check(self, tmp_path):
        task, _ = write_task(tmp_path, ARITH)
        proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "-s", "standard;sampling:k=2")
        assert_one_line_error(proc, "verifier 'sound' runs the domain's own check", "--check")

    def test_critic_runs_on_a_task_but_not_on_game24(self, tmp_path):
        # a model that is not installed: the domain is checked before any model is looked for
        proc = veriloop("run", "--domain", "game24", "-s", "critic", "--model", "qwen2.5-coder-0.5b",
                        home=tmp_path / "empty-home")
        assert_one_line_error(proc, "domain 'game24' does not support CRITIC")


@pytest.mark.model
def test_run_task_feeds_back_what_the_check_returned(tmp_path, smollm2_path):
    from veriloop.task import DEFAULT_REASK, DEFAULT_REJECTION

    task, checks = write_task(tmp_path, ARITH)
    prompt = "{question} Reply with the number only."
    proc = veriloop_process("run", "--task", str(task), "--prompt", prompt, "--check", f"python:{checks}:two_errors",
                            "--reference-field", "answer", "--id-field", "id", "--model", "smollm2-135m",
                            "-s", "backprompt:feedback=all,max_rounds=2", "-s", "backprompt:feedback=first,max_rounds=2",
                            "-s", "sampling:k=3", "--cache", str(tmp_path / "calls.sqlite"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "task-arith on smollm2-135m: 2 instances (a .. b)" in proc.stdout
    run_dir = tmp_path / "runs" / "task-arith-smollm2-135m-seed0"
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["task"], config["prompt"], config["check"]) == (str(task), prompt, f"python:{checks}:two_errors")
    assert (config["reference_field"], config["id_field"], config["domain"]) == ("answer", "id", "arith")
    trajectories = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajectories) == 6
    sampled = [t for t in trajectories if t["strategy"].startswith("sampling")]
    backprompted = [t for t in trajectories if t["strategy"].startswith("backprompt")]
    assert (len(sampled), len(backprompted)) == (2, 4)

    def base_of(t: dict) -> list[dict[str, str]]:
        row = next(r for r in ARITH if r["id"] == t["instance_id"])
        return [{"role": "user", "content": prompt.format(**row)}]

    for t in trajectories:
        assert t["stop_reason"] == "max_rounds" and not t["correct"]  # the check rejects everything
        assert [c["role"] for c in t["calls"]] == ["generate"] * len(t["calls"])
    for t in sampled:  # three fresh samples of the base prompt: no history, no feedback
        assert [c["messages"] for c in t["calls"]] == [base_of(t)] * 3
    for t in backprompted:  # an answer, then the check's errors fed back with the history
        row = next(r for r in ARITH if r["id"] == t["instance_id"])
        calls = t["calls"]
        assert len(calls) == 2
        first = t["rounds"][0]
        errors = [f"the reply for {row['id']} is wrong", f"it has {len(first['answer'])} characters"]
        assert [e["message"] for e in first["verdict"]["errors"]] == errors
        level = "all" if "feedback=all" in t["strategy"] else "first"
        feedback = {
            "all": f"{DEFAULT_REJECTION}:\n" + "".join(f"- {e}\n" for e in errors) + DEFAULT_REASK,
            "first": f"{DEFAULT_REJECTION}: {errors[0]}.\n{DEFAULT_REASK}",
        }[level]
        assert calls[1]["messages"] == [*base_of(t), {"role": "assistant", "content": calls[0]["response"]},
                                        {"role": "user", "content": feedback}]


@pytest.mark.model
def test_run_task_check_that_raises_keeps_the_finished_trajectories(tmp_path, smollm2_path):
    rows = [{"id": f"r{i}", "question": f"What is {i}+{i}?"} for i in range(1, 5)]
    task, checks = write_task(tmp_path, rows, name="four")
    run_dir = tmp_path / "run"
    proc = veriloop_process("run", "--task", str(task), "--prompt", "{question}", "--check", f"python:{checks}:explodes_on_r3",
                            "--id-field", "id", "-s", "backprompt:max_rounds=2", "--model", "smollm2-135m",
                            "--concurrency", "1", "--out", str(run_dir), "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]  # after the progress lines
    assert last == "error: check my_checks:explodes_on_r3 raised on instance 'r3': ValueError: boom on purpose", last
    kept = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert [t["instance_id"] for t in kept] == ["r1", "r2"]
    assert all(t["stop_reason"] == "verifier_accepted" and len(t["calls"]) == 1 for t in kept)


@pytest.mark.model
@pytest.mark.server
def test_no_cache_run_against_a_server_reports_the_requests_it_made(tmp_path, server):
    from servers import SECRET

    def run(out: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return veriloop_process("run", "--model", "openai/smollm2", "--base-url", server, "--api-key", SECRET, "-n", "2",
                                "-s", "standard", "-s", "sampling:k=2", "--max-rounds", "2", "--out", str(tmp_path / out),
                                *extra)

    proc = run("nocache", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    made = sum(not c.cached for t in read_trajectories(tmp_path / "nocache") for c in t.calls)
    assert made >= 4  # 2 standard answers and at least one sample per sampling trajectory
    assert json.loads((tmp_path / "nocache" / "summary.json").read_text())["backend_calls_this_run"] == made
    assert f"{made} backend calls (cache off)" in proc.stdout

    cache = str(tmp_path / "calls.sqlite")
    first = run("cached", "--cache", cache)
    assert first.returncode == 0, first.stderr
    fresh = sum(not c.cached for t in read_trajectories(tmp_path / "cached") for c in t.calls)
    assert f"{fresh} backend calls," in first.stdout and fresh > 0
    replay = run("replayed", "--cache", cache)
    assert "0 backend calls," in replay.stdout


def small_run(out: Path, *extra: str, model: str = "smollm2-135m") -> subprocess.CompletedProcess[str]:
    return veriloop_process("run", "--model", model, "-n", "1", "-s", "standard", "--out", str(out), "--no-cache", *extra)


@pytest.mark.model
def test_reusing_a_run_directory_with_other_settings_is_refused_in_words(tmp_path, smollm2_path, shared_data):
    out = tmp_path / "run"
    first = small_run(out)
    assert first.returncode == 0, first.stderr
    records = (out / "trajectories.jsonl").read_text()
    config = (out / "config.json").read_text()

    assert_one_line_error(small_run(out, "--seed", "1"), f"{out} holds a run made with seed 0, not 1")
    assert_one_line_error(small_run(out, "--offset", "3"), "offset 0, not 3")
    assert_one_line_error(small_run(out, "--max-rounds", "2"),
                          'strategy defaults (--max-rounds, --k) {"k": 5, "max_rounds": 5}, not {"k": 5, "max_rounds": 2}')
    assert_one_line_error(small_run(out, "--data", str(shared_data / "game24" / "24.csv")),
                          "data file none, not ", "24.csv")
    # The model is named, not only its weights' hash; the same weights by another name are the same model.
    elsewhere = ("--base-url", "http://127.0.0.1:9/v1")  # refused before any request is sent
    assert_one_line_error(small_run(out, *elsewhere, model="openai/judge"), "model smollm2-135m (", "not openai/judge (")
    # Nothing was added or rewritten by the refused runs.
    assert (out / "trajectories.jsonl").read_text() == records
    assert (out / "config.json").read_text() == config
    same_weights = small_run(out, model=str(smollm2_path))
    assert same_weights.returncode == 0, same_weights.stderr
    assert "0 new and 1 resumed trajectories" in same_weights.stdout
    # n is not part of a run's identity: asking for more instances extends it.
    more = small_run(out, "-n", "2")
    assert more.returncode == 0, more.stderr
    assert "1 new and 1 resumed trajectories" in more.stdout


@pytest.mark.model
def test_a_data_file_changed_in_place_is_refused(tmp_path, smollm2_path):
    data = tmp_path / "puzzles.csv"
    data.write_text("Rank,Puzzles,AMT (s),Solved rate,1-sigma Mean (s),1-sigma STD (s)\n1,1 1 4 6,4.4,99.0%,4.4,1.0\n")
    out = tmp_path / "run"
    assert small_run(out, "--data", str(data)).returncode == 0
    data.write_text(data.read_text().replace("1 1 4 6", "1 1 3 8"))
    assert_one_line_error(small_run(out, "--data", str(data)), "data file contents (sha256)")


def test_python_dash_m_veriloop_is_the_veriloop_command():
    env = dict(os.environ, COLUMNS="80")
    by_module = subprocess.run([sys.executable, "-m", "veriloop", "--help"], capture_output=True, text=True, env=env,
                               timeout=120)
    by_cli = veriloop("--help", columns="80")  # `python -m veriloop.cli --help`, in this process
    assert by_module.returncode == 0, by_module.stderr
    assert by_module.stdout.replace("python -m veriloop ", "") == by_cli.stdout.replace("python -m veriloop.cli ", "")
    assert "Usage:" in by_module.stdout
    failed = subprocess.run([sys.executable, "-m", "veriloop", "run", "--domain", "chess"], capture_output=True,
                            text=True, env=env, timeout=120)
    assert failed.returncode == 2 and failed.stderr.startswith("error: unknown domain 'chess'")
