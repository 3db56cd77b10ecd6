"""`--executor ray` on a real local Ray cluster (2 CPUs, no dashboard), with real models:
SmolLM2 in-process on a worker and through a real llama_cpp.server, a judge on another
worker than the generator. What the issue asks: the records are the local executor's
(up to timings), a worker killed mid-shard loses and repeats nothing, a second run makes
no backend call, either executor resumes the other's run, budgets and Ctrl-C hold."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import assert_one_line_error, core_only_process
from helpers import veriloop as veriloop_here
from servers import SECRET

import veriloop
from veriloop.cluster.driver import Job, RayExecutor
from veriloop.domains import get_domain
from veriloop.records import Trajectory
from veriloop.runs.runner import load_trajectories
from veriloop.strategies import parse_strategy

EXPERIMENT = """\
name = "ray-e2e"
strategies = ["standard", "backprompt:verifier=llm,feedback=llm,max_rounds=2"]
# One trajectory at a time on each model: llama.cpp's sequential path is exact, so two
# executors that interleave cells differently still produce the same tokens.
concurrency = 1
generators = ["small", "server"]

[models.small]
id = "smollm2-135m"
threads = 1

[models.server]
id = "openai/smollm2"
base_url = "URL"
api_key_env = "RAY_E2E_KEY"

# Every cell is judged by the server's model: the small model's cells call from one worker to another.
[roles]
verifier_model = "server"

# One puzzle: its backprompt is the run's longest work (up to five calls), on two generators
# and in three runs of the experiment; one is enough to hold the executors to each other.
[[domains]]
name = "game24"
n = 1

[[tasks]]
file = "sums.jsonl"
prompt = "What is {q}? Reply with the number only."
check = "python:sums_check.py:check"
n = 2
label = "sums"
"""

SUMS = [{"q": "2 + 3", "a": "5"}, {"q": "10 - 4", "a": "6"}]
INSTANCES = {"game24": 1, "sums": 2}
TRAJECTORIES = 2 * 2 * sum(INSTANCES.values())  # generators x strategies x instances
CELLS = [f"{model}/{domain}/{strategy}-seed0" for model in ("small", "server") for domain in ("game24", "sums")
         for strategy in ("standard", "backprompt_verifier=llm_feedback=llm_max_rounds=2")]


def write_experiment(where: Path, server: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "sums.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SUMS))
    (where / "sums_check.py").write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    path = where / "ray-e2e.toml"
    path.write_text(EXPERIMENT.replace("URL", server))
    return path


def veriloop_cli(*args: str, cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", RAY_E2E_KEY=SECRET)
    return subprocess.run([sys.executable, "-m", "veriloop.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def untimed(t: Trajectory) -> dict:
    """A trajectory's record without what the clock decides: its seconds, and whether the
    cache answered a call. Two cells may make the same call (a backprompt's first round is
    the standard prompt): the one that runs first asks the backend, the other replays it,
    and cells that run at once on a cluster take turns in another order than one by one."""
    record = t.model_dump(mode="json")
    record.pop("seconds")
    for call in record["calls"]:
        call.pop("seconds")
        call.pop("cached")
    for tool in record.get("tool_calls") or []:
        tool.pop("seconds", None)
    return record


def records(out: Path, cell: str) -> list[dict]:
    """A cell's trajectories, in a fixed order (executors append them in their own)."""
    found = [untimed(t) for t in load_trajectories(out / cell / "trajectories.jsonl")]
    return sorted(found, key=lambda r: (r["strategy"], r["instance_id"]))


def backend_calls(out: Path) -> int:
    return sum(not c.cached for cell in CELLS for t in load_trajectories(out / cell / "trajectories.jsonl")
               for c in t.calls)


def assert_exactly_once(out: Path) -> None:
    for cell in CELLS:
        lines = (out / cell / "trajectories.jsonl").read_text().splitlines()
        keys = [(r["strategy"], r["instance_id"], r["seed"]) for r in map(json.loads, lines)]
        expected = INSTANCES[cell.split("/")[1]]
        assert len(keys) == expected and len(set(keys)) == expected, (cell, keys)


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster for the module: 2 CPUs, no dashboard; its address, which the
    command-line runs join with --address (so they start no cluster of their own)."""
    import ray

    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield context.address_info["address"]
    ray.shutdown()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, server, smollm2_path) -> Path:
    """The experiment run by the local executor: the reference every Ray run is held to."""
    where = tmp_path_factory.mktemp("local")
    write_experiment(where, server)
    proc = veriloop_cli("eval", "ray-e2e.toml", "--out", "exp", "--cache", "calls.sqlite", cwd=where)
    assert proc.returncode == 0, proc.stderr
    assert f"{TRAJECTORIES} new trajectories" in proc.stdout
    return where / "exp"


@pytest.mark.model
@pytest.mark.server
@pytest.mark.ray
def test_ray_gives_the_local_records_and_either_executor_resumes_the_other(
        tmp_path, ray_cluster, local_run, server) -> None:
    write_experiment(tmp_path, server)
    run = ("eval", "ray-e2e.toml", "--out", "exp", "--cache", "calls.sqlite")
    first = veriloop_cli(*run, "--executor", "ray", "--address", ray_cluster, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "exp"
    for cell in CELLS:
        assert records(out, cell) == records(local_run, cell), cell
        # the same settings, the same model identities: either executor may continue the run
        assert (json.loads((out / cell / "config.json").read_text())
                == json.loads((local_run / cell / "config.json").read_text()))
    assert_exactly_once(out)
    # two workers, one per model on the one node; none lost
    assert "ran on 2 Ray workers\n" in first.stderr
    local_rows = json.loads((local_run / "results.json").read_text())["cells"]
    ray_rows = json.loads((out / "results.json").read_text())["cells"]
    timing = {"seconds", "mean_seconds", "wall_seconds"}
    assert ([{k: v for k, v in row.items() if k not in timing} for row in ray_rows]
            == [{k: v for k, v in row.items() if k not in timing} for row in local_rows])
    # The same calls reached the backends, each once.
    new_calls = backend_calls(out)
    assert new_calls == backend_calls(local_run)
    assert f"{TRAJECTORIES} new trajectories, {new_calls} backend calls" in first.stdout

    again = veriloop_cli(*run, "--executor", "ray", "--address", ray_cluster, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 new trajectories, 0 backend calls" in again.stdout
    here = veriloop_cli(*run, cwd=tmp_path)  # the local executor over the Ray run
    assert here.returncode == 0, here.stderr
    assert "0 new trajectories, 0 backend calls" in here.stdout
    assert_exactly_once(out)


@pytest.mark.model
@pytest.mark.server
@pytest.mark.ray
def test_a_worker_killed_mid_shard_loses_and_repeats_nothing(
        tmp_path, ray_cluster, local_run, server, monkeypatch) -> None:
    import ray

    path = write_experiment(tmp_path, server)
    monkeypatch.chdir(tmp_path)  # the experiment's task and check are named relative to it
    monkeypatch.setenv("RAY_E2E_KEY", SECRET)
    out = tmp_path / "exp"
    killed: list[int] = []
    ended = threading.Event()

    def kill_the_small_worker_after_its_first_trajectory() -> None:
        small = [out / cell / "trajectories.jsonl" for cell in CELLS if cell.startswith("small/")]
        while not any(f.exists() and f.stat().st_size for f in small):
            if ended.wait(0.02):
                return
        (name,) = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                   if a["name"].startswith("worker-") and "-small-" in a["name"]]
        pid = ray.get(ray.get_actor(name, namespace="veriloop").describe.remote())["pid"]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_the_small_worker_after_its_first_trajectory)
    killer.start()
    try:
        result = veriloop.eval_experiment(path, out=out, cache=tmp_path / "calls.sqlite", executor="ray",
                                          shard_size=2, progress=False)
    finally:
        ended.set()
        killer.join()
    assert len(killed) == 1
    assert result.stopped is None and result.incomplete_cells == []
    assert result.new_trajectories == TRAJECTORIES == 12
    stats = result.cluster
    assert stats is not None
    # The kill came with five of the small model's trajectories still to run: the shards
    # on the worker were lost, what they had not sent ran again, nothing came twice.
    assert stats.workers == 2 and stats.worker_failures >= 1 and stats.requeued >= 1 and stats.duplicates == 0
    assert_exactly_once(out)
    for cell in CELLS:
        assert records(out, cell) == records(local_run, cell), cell

    again = veriloop.eval_experiment(path, out=out, cache=tmp_path / "calls.sqlite", executor="ray", progress=False)
    assert (again.new_trajectories, again.backend_calls) == (0, 0)


@pytest.mark.model
@pytest.mark.ray
def test_a_budget_stops_the_cluster_where_it_stops_locally_and_a_higher_cap_finishes(tmp_path, ray_cluster) -> None:
    experiment = {
        "name": "budget", "strategies": ["standard", "backprompt:verifier=llm,feedback=binary,max_rounds=2"],
        "concurrency": 1, "models": {"small": {"id": "smollm2-135m", "threads": 1}},
        "domains": [{"name": "game24", "n": 3}], "budget": {"max_calls": 4},
    }
    cache = tmp_path / "calls.sqlite"
    stopped = veriloop.eval_experiment(experiment, out=tmp_path / "ray", cache=cache, executor="ray", progress=False)
    # One model, one trajectory at a time: each call is checked against the cap before it
    # starts, so the cluster stops on the cap exactly.
    assert stopped.stopped == "the experiment budget is spent (4 of 4 calls; max_calls)"
    kept = [t for cell in ("standard-seed0", "backprompt_verifier=llm_feedback=binary_max_rounds=2-seed0")
            for t in load_trajectories(tmp_path / "ray" / "small" / "game24" / cell / "trajectories.jsonl")]
    assert sum(len(t.calls) for t in kept) <= 4 and len(kept) < 6
    assert stopped.incomplete_cells != []

    raised = {**experiment, "budget": {"max_calls": 100}}
    finished = veriloop.eval_experiment(raised, out=tmp_path / "ray", cache=cache, executor="ray", progress=False)
    assert finished.stopped is None and finished.incomplete_cells == []
    assert finished.new_trajectories == 6 - len(kept)
    local = veriloop.eval_experiment(raised, out=tmp_path / "local", cache=tmp_path / "local.sqlite", progress=False)
    for cell in ("standard-seed0", "backprompt_verifier=llm_feedback=binary_max_rounds=2-seed0"):
        assert records(tmp_path / "ray" / "small" / "game24", cell) == records(
            tmp_path / "local" / "small" / "game24", cell)
    assert [r.model_calls for r in finished.rows] == [r.model_calls for r in local.rows]


@pytest.mark.model
@pytest.mark.ray
def test_a_report_scores_text_on_the_worker_as_the_model_scores_it_here(ray_cluster, smollm2) -> None:
    """A report's perplexities (CRITIC's Table 5) come from the worker's model, under the
    driver's cache, as the backend in this process gives them."""
    from veriloop.cluster.driver import recipe
    from veriloop.models.counting import innermost

    messages = [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}]

    async def on_the_worker() -> list:
        executor = RayExecutor({"small": recipe("small", "smollm2-135m")}, cache_path=None)
        try:
            await executor.start(["small"])
            return await innermost(executor.driver_model("small")).score(messages, "5, of course")
        finally:
            await executor.aclose()

    there = asyncio.run(on_the_worker())
    here = asyncio.run(smollm2.score(messages, "5, of course"))
    assert [t.token for t in there] == [t.token for t in here] and len(here) >= 3
    assert [t.logprob for t in there] == pytest.approx([t.logprob for t in here], abs=1e-4)


@pytest.mark.ray
def test_a_reproduction_and_its_report_on_ray_write_the_local_tables(
        tmp_path, ray_cluster, shared_data, instant_server) -> None:
    """`veriloop reproduce self-verification --executor ray`: the cells on the workers, then
    the report's own model calls (the verification study) through the driver, against a
    scripted server; every table the same as the local executor's."""
    args = ("reproduce", "self-verification", *instant_server, "--instances", "1", "--domains", "game24",
            "--max-rounds", "1", "--verification-instances", "1", "--data-root", str(shared_data))
    local = veriloop_cli(*args, "--out", "local", "--cache", "local.sqlite", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    on_ray = veriloop_cli(*args, "--out", "ray", "--cache", "ray.sqlite", "--executor", "ray", "--address",
                          ray_cluster, cwd=tmp_path)
    assert on_ray.returncode == 0, on_ray.stderr
    for table in ("table1.md", "table2.md", "critique.md"):  # table1.csv also has each cell's seconds
        assert (tmp_path / "ray" / table).read_text() == (tmp_path / "local" / table).read_text(), table
    judged = [json.loads(line) for line in
              (tmp_path / "ray" / "main" / "game24" / "verification-seed0" / "verification.jsonl").open()]
    assert len(judged) >= 1
    assert "ran on 1 Ray worker\n" in on_ray.stderr
    # Cells that run at once may each ask the backend a call they share (the same first
    # prompt), which one by one the later cell replays: the count is not compared.
    assert re.fullmatch(r"\d+ backend calls; tables and figure in ray/ \(game24\)", on_ray.stdout.splitlines()[-1])


def ray_processes() -> set[int]:
    proc = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    markers = ("gcs_server", "raylet", "ray::", "default_worker.py", "ray/dashboard", "log_monitor.py")
    return {int(line.split()[0]) for line in proc.stdout.splitlines()[1:] if any(m in line for m in markers)}


@pytest.mark.model
@pytest.mark.ray
def test_ctrl_c_stops_the_cluster_it_started_and_the_run_resumes(tmp_path, smollm2_path) -> None:
    before = ray_processes()
    args = [sys.executable, "-m", "veriloop.cli", "run", "--model", "smollm2-135m", "-n", "4", "--threads", "1",
            "-s", "backprompt:verifier=llm,feedback=llm", "--out", "run", "--cache", "calls.sqlite",
            "--concurrency", "1", "--executor", "ray"]
    # Its own cluster, not the module's (which a RAY_ADDRESS left by ray.init would name).
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"} | {"COLUMNS": "200"}
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    records_file = tmp_path / "run" / "trajectories.jsonl"
    deadline = time.monotonic() + 600
    while not (records_file.exists() and records_file.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "finished work is kept in run; run the same command again to resume" in " ".join(stderr.split())
    # The cluster it started (its head, its workers) is gone with it.
    deadline = time.monotonic() + 30
    while ray_processes() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray_processes() - before == set()
    kept = load_trajectories(records_file)
    assert 1 <= len(kept) < 4

    resumed = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{4 - len(kept)} new and {len(kept)} resumed trajectories" in resumed.stdout
    assert len(load_trajectories(records_file)) == 4


@pytest.mark.model
@pytest.mark.ray
def test_run_on_ray_writes_what_run_writes(tmp_path, ray_cluster, smollm2_path) -> None:
    args = ("run", "--model", "smollm2-135m", "-n", "3", "--threads", "1", "--concurrency", "1",
            "-s", "standard", "-s", "sampling:k=2", "--cache", "calls.sqlite")
    local = veriloop_cli(*args, "--out", "local", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    (tmp_path / "calls.sqlite").unlink()
    on_ray = veriloop_cli(*args, "--out", "ray", "--executor", "ray", "--address", ray_cluster, "--shard-size", "1",
                          cwd=tmp_path)
    assert on_ray.returncode == 0, on_ray.stderr
    assert records(tmp_path, "ray") == records(tmp_path, "local")
    assert json.loads((tmp_path / "ray" / "config.json").read_text()) == json.loads(
        (tmp_path / "local" / "config.json").read_text())
    # the same table, up to the seconds column
    table = [line.rsplit("│", 3)[0] for line in on_ray.stdout.splitlines() if line.startswith("│")]
    assert table == [line.rsplit("│", 3)[0] for line in local.stdout.splitlines() if line.startswith("│")]
    assert "6 new and 0 resumed trajectories" in on_ray.stdout
    assert "ran on 1 Ray worker\n" in on_ray.stderr


# -- without a cluster ---------------------------------------------------------------------


def test_executor_options_are_checked_before_anything_runs(tmp_path) -> None:
    # In this process: a refusal of the options is what is checked, not how a process ends.
    assert_one_line_error(veriloop_here("run", "--executor", "spark", cwd=tmp_path), "--executor 'spark'",
                          "local or ray")
    assert_one_line_error(veriloop_here("run", "--address", "auto", cwd=tmp_path),
                          "--address goes with --executor ray")
    assert_one_line_error(veriloop_here("eval", "smoke", "--shard-size", "2", cwd=tmp_path),
                          "--shard-size goes with --executor ray")


def test_without_ray_the_executor_says_how_to_install_it(tmp_path) -> None:
    proc = core_only_process("run", "-n", "1", "--executor", "ray", cwd=tmp_path)
    assert_one_line_error(proc)
    assert proc.stderr == ("error: --executor ray needs veriloop's extra 'ray', which is not installed (missing: ray); "
                           "install it with: pip install 'veriloop[ray]'\n")


def test_a_ray_that_does_not_import_is_one_line(tmp_path, monkeypatch) -> None:
    hidden = tmp_path / "no-ray"
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('the ray package is broken')\n")
    # In this process, the broken ray first on the path and any ray imported before forgotten
    # (both put back after the test): the failed import leaves no module behind.
    for name in [name for name in sys.modules if name.partition(".")[0] == "ray"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(hidden))
    proc = veriloop_here("run", "-n", "1", "--executor", "ray", cwd=tmp_path)
    assert "ray" not in sys.modules
    assert_one_line_error(proc, "--executor ray: Ray is installed but does not import (the ray package is broken); "
                          "reinstall it with: pip install 'veriloop[ray]' --force-reinstall")


def test_the_driver_writes_a_trajectory_received_twice_once(tmp_path) -> None:
    """A worker that dies after sending a trajectory may have it sent again by the shard's
    re-run: the driver's run directory keeps the first."""
    domain = get_domain("game24")
    (instance,) = domain.load_instances(None, n=1)
    strategy = parse_strategy("standard")
    job = Job(run_dir=tmp_path, config={}, domain_key="game24", domain=domain, data=None, instances=[instance],
              strategies=[strategy], seed=0, generator="m", role_models={}, title="t", experiment=None)
    executor = RayExecutor({})
    from veriloop.cluster.jobs import Shard
    from veriloop.runs.jsonl import RecordWriter

    shard = Shard.of(0, [(strategy.canonical, instance)])
    job.writer = RecordWriter(tmp_path / "trajectories.jsonl")
    first = Trajectory(strategy=strategy.canonical, domain="game24", model="m", instance_id=instance.id, seed=0,
                       final_answer="first")
    second = first.model_copy(update={"final_answer": "second"})

    async def receive_both() -> None:
        await executor._receive(job, shard, first)
        await executor._receive(job, shard, second)
        await job.writer.aclose()

    asyncio.run(receive_both())
    assert [t.final_answer for t in load_trajectories(tmp_path / "trajectories.jsonl")] == ["first"]
    assert executor.duplicates == 1 and shard.pending == {} and job.new == [first]


def test_the_relay_hands_a_request_to_the_driver_and_its_answer_back() -> None:
    from veriloop.cluster.worker import Relay

    async def go() -> None:
        relay = Relay()
        asking = asyncio.create_task(relay.ask(("begin", 0, "generate", None, 0, 1)))
        batch = await relay.take(5.0)
        assert [request for _, request in batch] == [("begin", 0, "generate", None, 0, 1)]
        await relay.answer([(batch[0][0], {"value": {}})])
        assert await asking == {"value": {}}
        assert await relay.take(0.01) == []  # nothing more asked: the poll times out empty

    asyncio.run(go())


def test_the_driver_checks_budgets_answers_from_its_cache_and_charges_every_sample(tmp_path) -> None:
    from veriloop.experiment.budget import Meter, Usage
    from veriloop.experiment.schema import Budget
    from veriloop.models import CallCache, Completion

    domain = get_domain("game24")
    meter = Meter("experiment", Budget(max_calls=2), Usage())
    job = Job(run_dir=tmp_path, config={}, domain_key="game24", domain=domain, data=None, instances=[],
              strategies=[], seed=0, generator="m", role_models={}, title="t", experiment=None, meters=[meter],
              price=lambda role, prompt, completion, *parts: (prompt + 2 * completion) / 1e6 if role == "verify" else 0.0)
    executor = RayExecutor({})
    executor._jobs = [job]
    executor.cache = CallCache(tmp_path / "calls.sqlite")
    made = Completion(text="4 * 6", finish_reason="stop", prompt_tokens=10, completion_tokens=3)

    async def go() -> list[dict]:
        return [
            await executor._answer(("begin", 0, "generate", "k", 0, 2)),
            await executor._answer(("put", 0, "k", 1, [made.to_json()])),
            await executor._answer(("begin", 0, "generate", "k", 0, 2)),
            await executor._answer(("spent", 0, "verify", [(10, 3, False), (10, 3, True)])),
            await executor._answer(("begin", 0, "generate", "k", 0, 2)),
            await executor._answer(("rewind", 0)),
        ]

    try:
        answers = asyncio.run(go())
    finally:
        executor.cache.close()
    assert answers[:4] == [{"value": {}}, {"value": None}, {"value": {1: made.to_json()}}, {"value": None}]
    # both samples charged at the verifier's price; only the fresh one reached a backend
    assert (meter.used.calls, meter.used.tokens, executor.backend_calls) == (2, 26, 1)
    assert meter.used.usd == pytest.approx(32 / 1e6)
    assert answers[4] == {"budget": ("experiment", "the experiment budget is spent (2 of 2 calls; max_calls)")}
    assert answers[5] == {"error": "the driver does not know the request 'rewind'"}


def test_both_executors_read_a_models_key_from_its_variable_and_refuse_an_unset_one(monkeypatch) -> None:
    from veriloop.cluster.driver import model_recipes
    from veriloop.errors import VeriloopError
    from veriloop.experiment.engine import load_models
    from veriloop.experiment.schema import Experiment

    spec = Experiment.model_validate({
        "name": "keys", "strategies": ["standard"], "domains": [{"name": "game24"}],
        "models": {"remote": {"id": "openai/m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "KEYS_TEST"}},
    })
    monkeypatch.delenv("KEYS_TEST", raising=False)
    message = "models.remote.api_key_env names KEYS_TEST, which is not set"
    with pytest.raises(VeriloopError, match=message):
        model_recipes(spec, ["remote"], use_cache=False)
    with pytest.raises(VeriloopError, match=message):
        load_models(spec, ["remote"], use_cache=False)
    monkeypatch.setenv("KEYS_TEST", "sk-from-the-variable")
    assert model_recipes(spec, ["remote"], use_cache=False)["remote"].api_key == "sk-from-the-variable"
    # a key given by name (a command's --api-key) comes first
    assert model_recipes(spec, ["remote"], use_cache=False, api_keys={"remote": "sk-given"})["remote"].api_key \
        == "sk-given"
