"""A run or experiment directory is held by one process at a time (runs.dirlock):
a second process is refused in one line naming the holder's PID, the lock ends with its
holder (kill -9 included), and readers (the viewer) take no lock."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import assert_one_line_error, veriloop

import veriloop as vl
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.experiment.engine import run_eval
from veriloop.experiment.overrides import parse_experiment
from veriloop.runs.dirlock import LOCK_FILE, hold, is_held
from veriloop.runs.runner import TRAJECTORIES, load_trajectories, run_experiment
from veriloop.strategies import parse_strategy

# A `veriloop run` of its own process that writes a few trajectories, then hangs (the
# answer to its 6th call never comes) while holding its run directory.
HOLDER = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    from veriloop.domains import get_domain
    from veriloop.models.function import FunctionModel
    from veriloop.runs import runner
    from veriloop.strategies import parse_strategy

    calls = 0

    def answer(messages):
        global calls
        calls += 1
        if calls == 6:
            print("holding", flush=True)
        if calls >= 6:
            time.sleep(600)
        return "Answer: 24"

    # The bare function model: veriloop.model() would import openai (half a second) to
    # tell a client from a function.
    model = FunctionModel(answer, name="m", identity="m", concurrency=1)
    domain = get_domain("game24")
    asyncio.run(runner.run_experiment(model, domain, [parse_strategy("standard")],
                                      domain.load_instances(None, n=20), Path(sys.argv[1]), concurrency=1))
""")


@contextlib.contextmanager
def holding(out: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process in the middle of a run of `out` (5 trajectories written)."""
    env = {**os.environ, "PYTHONPATH": str(Path(vl.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "holding", f"the holder ended early (exit {child.poll()})"
        yield child
    finally:
        child.kill()
        child.wait()
        child.stdout.close()  # else its pipe is closed by whichever later test the garbage collector runs in


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A holder of tmp_path/run of this test's own, for a test that kills it."""
    with holding(tmp_path / "run") as child:
        yield child, tmp_path / "run"


@pytest.fixture(scope="module")
def shared_holder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """One holder for the tests that only try its directory (each start imports veriloop and
    runs game24: a second of CPU). They leave it as they found it: the refused runs write
    nothing, and the viewer test checks its 5 trajectories."""
    out = tmp_path_factory.mktemp("held") / "run"
    with holding(out) as child:
        yield child, out


def run_here(out: Path, n: int = 20) -> vl.RunResult:
    model = vl.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    domain = get_domain("game24")
    return asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], domain.load_instances(None, n=n),
                                      out, concurrency=4))


def test_a_second_process_is_refused_naming_the_holder_and_may_go_on_once_the_holder_is_killed(holder) -> None:
    child, out = holder
    with pytest.raises(VeriloopError) as refused:
        run_here(out)
    assert str(refused.value) == (f"{out} is in use by another veriloop process (PID {child.pid}); wait for it to end "
                                  "or choose another --out")
    assert len(load_trajectories(out / TRAJECTORIES)) == 5  # the refused run wrote nothing

    child.send_signal(signal.SIGKILL)
    child.wait()
    result = run_here(out)  # nothing to clean up after kill -9
    assert (result.reused_trajectories, result.new_trajectories) == (5, 15)
    ids = [t.instance_id for t in load_trajectories(out / TRAJECTORIES)]
    assert len(ids) == len(set(ids)) == 20


def test_veriloop_run_on_a_held_directory_is_refused_in_one_line_before_the_model_loads(shared_holder, tmp_path) -> None:
    child, out = shared_holder
    # No server listens on port 9: the refusal comes before any request. The two processes
    # are the holder and this one.
    proc = veriloop("run", "--model", "openai/x", "--base-url", "http://127.0.0.1:9/v1", "-n", "1", "-s", "standard",
                            "--no-cache", "--out", str(out), home=tmp_path / "home")
    assert_one_line_error(proc, f"{out} is in use by another veriloop process (PID {child.pid})")


def test_an_experiment_directory_held_elsewhere_is_refused_and_its_cells_are_held_while_they_run(
        shared_holder, tmp_path) -> None:
    child, held = shared_holder
    spec = parse_experiment(textwrap.dedent("""
        name = "locks"
        n = 2
        strategies = ["standard"]
        [models.m]
        [[domains]]
        name = "game24"
    """))
    seen: list[bool] = []

    def answer(messages: object) -> str:
        seen.append(is_held(tmp_path / "exp") and is_held(tmp_path / "exp" / "m" / "game24" / "standard-seed0"))
        return "Answer: 24"

    model = vl.model(answer, name="m", identity="m", cache=False)
    with pytest.raises(VeriloopError, match=rf"in use by another veriloop process \(PID {child.pid}\)"):
        asyncio.run(run_eval(spec, held, {"m": model}))
    result = asyncio.run(run_eval(spec, tmp_path / "exp", {"m": model}))
    assert result.new_trajectories == 2 and seen == [True, True]  # held together, by one process: no conflict
    assert not is_held(tmp_path / "exp")


def test_two_runs_in_one_process_on_different_directories_run_at_once(tmp_path) -> None:
    model = vl.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=3)

    async def both() -> list[vl.RunResult]:
        return list(await asyncio.gather(*(
            run_experiment(model, domain, [parse_strategy("standard")], instances, tmp_path / name)
            for name in ("a", "b"))))

    assert [r.new_trajectories for r in asyncio.run(both())] == [3, 3]
    assert not is_held(tmp_path / "a") and not is_held(tmp_path / "b")


def test_one_process_holding_a_directory_twice_is_refused_in_words_of_its_own(tmp_path) -> None:
    with hold(tmp_path / "run"):
        with pytest.raises(VeriloopError) as again:
            run_here(tmp_path / "run", n=1)
        assert str(again.value) == (f"{tmp_path / 'run'} is already in use by another run in this process; give each "
                                    "run its own --out")
        assert is_held(tmp_path / "run")  # the refused second open did not end the first hold
    assert run_here(tmp_path / "run", n=1).new_trajectories == 1
    assert (tmp_path / "run" / LOCK_FILE).is_file()


def test_the_viewer_and_its_live_server_read_a_directory_another_process_holds(shared_holder) -> None:
    import urllib.request

    from veriloop.view.data import load
    from veriloop.view.report import build
    from veriloop.view.serve import LivePage, ViewServer

    child, out = shared_holder
    assert len(load([out]).trajectories) == 5
    page = LivePage([out], lambda version: build([out], None, live=True, version=version, references=False,
                                                 allow_empty=True).html)
    server = ViewServer(page).start()
    try:
        with urllib.request.urlopen(server.url, timeout=30) as reply:
            assert reply.status == 200 and "standard" in reply.read().decode()
    finally:
        server.stop()
    assert child.poll() is None  # still holding, and the lock file names the run alone
    assert (out / LOCK_FILE).read_text() == f"{child.pid}\n"
