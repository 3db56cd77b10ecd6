"""The one door into the engine (engine.execute, issue 40): every entrance plans, opens
its executor by name (a plugin's too), runs and closes it there; `veriloop run` and
`veriloop.evaluate` write a single run directory through it, as they always have."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from helpers import assert_one_line_error, veriloop
from scripted import Adder

import veriloop as api
from veriloop import VeriloopError
from veriloop.cli import evaluate as evaluate_command
from veriloop.experiment.engine import ExecutorOptions, SingleRun, execute, plan
from veriloop.experiment.executor import ModelsLoadInterrupted
from veriloop.experiment.schema import Experiment


def sums(tmp_path, **more) -> dict:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"q": f"{i}+{i}", "a": str(2 * i)}) + "\n" for i in range(3)))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    return {"name": "sums", "models": {"gen": {}}, "strategies": ["standard", "sampling:k=2"],
            "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "label": "sums"}], **more}


def run_args(server: list[str], out, *extra: str) -> tuple[str, ...]:
    return ("run", *server, "-n", "2", "-s", "standard", "-s", "sampling:k=2", "--out", str(out), "--no-cache", *extra)


def test_run_goes_through_a_plugin_executor_by_name_into_one_run_directory_that_resumes(
    tmp_path, instant_server, recording_executor,
) -> None:
    out = tmp_path / "run"
    first = veriloop(*run_args(instant_server, out, "--executor", "recording"))
    assert first.returncode == 0, first.stderr
    assert recording_executor == [("run game24", ["main"])]
    assert "4 new and 0 resumed trajectories, 6 backend calls (cache off)" in first.stdout
    # A run directory, not an experiment's: every strategy in it, no experiment files beside them.
    assert sorted(p.name for p in out.iterdir()) == [
        ".veriloop.lock", "config.json", "instances.jsonl", "summary.json", "trajectories.jsonl"]
    records = (out / "trajectories.jsonl").read_text()
    assert sorted({json.loads(line)["strategy"] for line in records.splitlines()}) == [
        "sampling:k=2,temperature=1,verifier=sound", "standard:temperature=0"]
    config = (out / "config.json").read_text()
    assert list(json.loads(config)) == [
        "model_name", "model", "base_url", "data", "data_sha256", "offset", "domain_options", "strategy_defaults",
        "spec", "veriloop_version", "model_identity", "domain", "seed", "roles"]
    # The same run again, here: nothing new, the directory as it was.
    again = veriloop(*run_args(instant_server, out))
    assert again.returncode == 0, again.stderr
    assert "0 new and 4 resumed trajectories, 0 backend calls (cache off)" in again.stdout
    assert (out / "config.json").read_text() == config
    assert (out / "trajectories.jsonl").read_text() == records
    assert recording_executor == [("run game24", ["main"])]  # the second run was local


def test_eval_goes_through_a_plugin_executor_by_name(tmp_path, instant_server, recording_executor) -> None:
    base_url = instant_server[instant_server.index("--base-url") + 1]
    (tmp_path / "door.toml").write_text(f"""
name = "door"
strategies = ["standard"]
[models.main]
id = "openai/scripted"
base_url = "{base_url}"
[[domains]]
name = "game24"
n = 2
""")
    proc = veriloop("eval", str(tmp_path / "door.toml"), "--out", str(tmp_path / "exp"), "--no-cache",
                    "--executor", "recording", env={"VERILOOP_API_KEY": "none"})
    assert proc.returncode == 0, proc.stderr
    assert recording_executor == [("door", ["main"])]
    assert "2 new trajectories, 2 backend calls" in proc.stdout
    assert (tmp_path / "exp" / "results.csv").is_file()


def test_an_unknown_executor_is_one_line_naming_every_registered_one(tmp_path, recording_executor) -> None:
    assert_one_line_error(veriloop("run", "--executor", "slurm", cwd=tmp_path),
                          "--executor 'slurm': choose local, ray or recording")
    with pytest.raises(VeriloopError) as caught:
        api.eval_experiment(sums(tmp_path), out=tmp_path / "exp", executor="slurm")
    assert str(caught.value) == "executor='slurm': choose one of: local, ray, recording"
    assert not (tmp_path / "exp").exists()


def test_eval_experiment_goes_through_a_plugin_executor_by_name(tmp_path, recording_executor) -> None:
    result = api.eval_experiment(sums(tmp_path), out=tmp_path / "exp", models={"gen": Adder()}, cache=False,
                                 progress=False, executor="recording")
    assert recording_executor == [("sums", ["gen"])]
    assert [(r.strategy, r.correct, r.n) for r in result.rows] == [("standard", 3, 3), ("sampling:k=2", 3, 3)]


def test_eval_experiment_leaves_a_given_model_open_with_the_call_cache_on(tmp_path) -> None:
    # The cache opened for it is closed; the model is the caller's.
    given = Adder()
    result = api.eval_experiment(sums(tmp_path), out=tmp_path / "exp", models={"gen": given},
                                 cache=tmp_path / "calls.sqlite", progress=False)
    assert [r.correct for r in result.rows] == [3, 3]
    assert given.closed == 0


def test_evaluate_goes_through_the_door_and_writes_what_it_wrote(tmp_path) -> None:
    task = api.Task.from_records([{"q": "1+1", "a": "2"}, {"q": "2+2", "a": "5"}], prompt="{q}", reference_field="a",
                                 check=lambda record, answer: answer == record["a"])
    progress: list[tuple[int, int]] = []
    given = Adder()
    summaries = api.evaluate(task, ["sampling:k=2", "standard"], model=given, out=tmp_path / "run", cache=False,
                             progress=False, on_progress=lambda done, total: progress.append((done, total)))
    assert [(s.strategy, s.n, s.correct) for s in summaries] == [
        ("sampling:k=2,temperature=1,verifier=sound", 2, 1), ("standard:temperature=0", 2, 1)]
    assert progress == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert given.closed == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (config["api"], config["model_name"], config["offset"]) == ("veriloop.evaluate", "adder", 0)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        ".veriloop.lock", "config.json", "instances.jsonl", "summary.json", "trajectories.jsonl"]


def test_a_single_run_holds_one_model_domain_and_seed_and_no_cell_budget(tmp_path) -> None:
    for more, why in (({"seeds": [0, 1]}, "one model, one domain or task and one seed"),
                      ({"cell_budget": {"max_calls": 3}}, "no cell budget, roles or report")):
        spec = Experiment.model_validate(sums(tmp_path, **more))
        with pytest.raises(VeriloopError, match=why):
            plan(spec, tmp_path / "run", SingleRun())
    assert not (tmp_path / "run").exists()


def test_the_local_executor_holds_ctrl_c_back_while_its_models_load(tmp_path, monkeypatch) -> None:
    # llama.cpp would swallow a KeyboardInterrupt raised while it loads: it is raised once
    # the models have loaded, and the door closes them.
    from veriloop.experiment import executor

    given = Adder()
    loaded: list[str] = []

    def load_models(experiment, names, **_):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, in the middle of loading
        loaded.append("done")
        return {"gen": given}

    monkeypatch.setattr(executor, "load_models", load_models)
    spec = Experiment.model_validate(sums(tmp_path))
    with pytest.raises(ModelsLoadInterrupted):
        asyncio.run(execute(spec, tmp_path / "exp", executor="local", options=ExecutorOptions(use_cache=False)))
    assert loaded == ["done"] and given.closed == 1  # loaded here, so closed here
    assert not (tmp_path / "exp" / "results.csv").exists()


def test_the_cli_says_ctrl_c_came_while_the_model_loaded(tmp_path, instant_server, monkeypatch) -> None:
    from veriloop.experiment.executor import EXECUTORS

    said: list[tuple[object, str]] = []

    class Interrupted:
        async def start(self, progress):
            raise ModelsLoadInterrupted

        async def aclose(self) -> None:
            pass

    def exit_interrupted(kept_in, when=""):
        said.append((kept_in, when))
        raise SystemExit(130)

    monkeypatch.setattr(evaluate_command, "_exit_interrupted", exit_interrupted)
    EXECUTORS.register("interrupted", lambda experiment, names, options: Interrupted(), source="tests")
    try:
        proc = veriloop(*run_args(instant_server, tmp_path / "run", "--executor", "interrupted"))
    finally:
        del EXECUTORS["interrupted"]
    assert proc.returncode == 130
    assert said == [(tmp_path / "run", "while the model was loading; nothing was run")]



# An executor plugin: the local executor under another name, saying on stderr that it was opened.
EXECUTOR_PLUGIN = """
import sys

from veriloop.experiment.executor import local_cells


def opened_here(experiment, names, options):
    print(f"opened-here: {experiment.name} {names}", file=sys.stderr)
    return local_cells(experiment, names, options)
"""


def test_an_installed_executor_plugin_is_opened_by_name(tmp_path, installed, instant_server) -> None:
    from helpers import fake_distribution

    from veriloop.experiment.executor import EXECUTORS

    fake_distribution(installed, "fake-executor", {"veriloop.executors": {"here": "fake_executor:opened_here"}},
                      {"fake_executor": EXECUTOR_PLUGIN})
    EXECUTORS.rediscover()
    try:
        assert EXECUTORS.source("here") == "fake-executor"
        proc = veriloop(*run_args(instant_server, tmp_path / "run", "--executor", "here"))
        assert proc.returncode == 0, proc.stderr
        assert "opened-here: run game24 ['main']" in proc.stderr
        assert "4 new and 0 resumed trajectories" in proc.stdout
    finally:
        EXECUTORS.rediscover()
