"""A user's check under the loop's control (issue 25, item 4): whatever it raises is a
one-line CheckError naming it and the instance, one that does not return is stopped at
its time limit, Ctrl-C stops a run at once while a check is stuck, and a check module
that exits on import is one line naming the file."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_one_line_error, the_error, veriloop, veriloop_process

import veriloop as vl
from veriloop import CheckError, FunctionCheck, Task
from veriloop.runs.runner import load_trajectories

ROWS = [{"q": "1+1"}, {"q": "2+2"}, {"q": "3+3"}]


class Stopper(BaseException):
    """Neither an Exception nor one of Python's own: caught all the same."""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What a stuck check waits for: set when the test ends, so no thread of it outlives the test."""
    event = threading.Event()
    yield event
    event.set()


# --------------------------------------------------------------------------- what a check raises


def _exits(prompt: Any, answer: str) -> bool:
    sys.exit(0)


def _interrupts(prompt: Any, answer: str) -> bool:
    raise KeyboardInterrupt


def _closes(prompt: Any, answer: str) -> bool:
    raise GeneratorExit


def _stops(prompt: Any, answer: str) -> bool:
    raise Stopper("stop here")


def _cancels(prompt: Any, answer: str) -> bool:
    raise asyncio.CancelledError


async def _exits_async(prompt: Any, answer: str) -> bool:
    sys.exit(3)


async def _interrupts_async(prompt: Any, answer: str) -> bool:
    raise KeyboardInterrupt


async def _closes_async(prompt: Any, answer: str) -> bool:
    raise GeneratorExit


async def _cancels_async(prompt: Any, answer: str) -> bool:
    raise asyncio.CancelledError


@pytest.mark.parametrize(("check", "raised"), [
    (_exits, "SystemExit: 0"), (_interrupts, "KeyboardInterrupt"), (_closes, "GeneratorExit"),
    (_stops, "Stopper: stop here"), (_cancels, "CancelledError"), (_exits_async, "SystemExit: 3"),
    (_interrupts_async, "KeyboardInterrupt"), (_closes_async, "GeneratorExit"), (_cancels_async, "CancelledError"),
], ids=lambda v: getattr(v, "__name__", None))
def test_whatever_a_check_raises_is_a_check_error_naming_it_and_the_instance(check, raised):
    with pytest.raises(CheckError) as info:
        vl.correct(lambda messages: "7", "Name an odd number.", check, cache=False)
    assert str(info.value) == f"check test_checks:{check.__name__} raised on instance '1': {raised}"


def test_a_check_that_exits_in_evaluate_keeps_the_finished_trajectories(tmp_path):
    def exits_on_the_third(row, answer):
        if row["q"] == "3+3":
            sys.exit(0)
        return True

    task = Task.from_records(ROWS, prompt="Compute {q}.", check=exits_on_the_third)
    with pytest.raises(CheckError, match=r"exits_on_the_third raised on instance '3': SystemExit: 0$"):
        vl.evaluate(task, ["standard"], model=lambda m: "1", out=tmp_path / "run", cache=False, concurrency=1)
    assert [t.instance_id for t in load_trajectories(tmp_path / "run" / "trajectories.jsonl")] == ["1", "2"]


# --------------------------------------------------------------------------- time limits


def limit_message(name: str, seconds: str, instance: str = "1") -> str:
    return (f"check test_checks:{name} did not return within {seconds} s on instance {instance!r}; make it return "
            "sooner, or give it longer (--check-timeout, check_timeout=)")


def test_a_sync_check_that_does_not_return_is_stopped_at_its_limit(release):
    def waits_forever(prompt, answer):
        release.wait()
        return True

    with pytest.raises(CheckError) as info:
        vl.correct(lambda messages: "7", "Name an odd number.", waits_forever, cache=False, check_timeout=0.2)
    assert str(info.value) == limit_message(waits_forever.__qualname__, "0.2")


def test_an_async_check_that_does_not_return_is_stopped_at_its_limit():
    async def sleeps(prompt, answer):
        await asyncio.sleep(3600)
        return True

    with pytest.raises(CheckError) as info:
        vl.correct(lambda messages: "7", "Name an odd number.", sleeps, cache=False, check_timeout=0.2)
    assert str(info.value) == limit_message(sleeps.__qualname__, "0.2")


def test_the_limit_of_a_function_check_and_a_task(tmp_path, release):
    def waits_forever(row, answer):
        release.wait()
        return True

    assert FunctionCheck(waits_forever).timeout == 60.0
    assert FunctionCheck(waits_forever, timeout=None).timeout is None
    with pytest.raises(CheckError, match=r"^timeout must be a positive number of seconds \(or None for no limit\), "
                                         r"not 0$"):
        FunctionCheck(waits_forever, timeout=0)
    gate = FunctionCheck(waits_forever, timeout=0.2)
    with pytest.raises(CheckError, match=r"did not return within 0.2 s on instance '1'"):
        vl.correct(lambda messages: "7", "Name an odd number.", gate, cache=False)
    task = Task.from_records(ROWS, prompt="Compute {q}.", check=waits_forever, check_timeout=0.2)
    assert task.checker is not None and task.checker.timeout == 0.2
    with pytest.raises(CheckError, match=r"did not return within 0.2 s on instance '1'"):
        vl.evaluate(task, ["backprompt"], model=lambda m: "1", out=tmp_path / "run", cache=False)


@pytest.mark.parametrize("strategy", ["standard", "backprompt"])
def test_evaluate_s_check_timeout_stops_the_run_and_keeps_the_finished_trajectories(tmp_path, release, strategy):
    # standard judges the final answer from inside the loop (Task.verify, blocking);
    # backprompt awaits the check as its verifier.
    def hangs_on_the_third(row, answer):
        if row["q"] == "3+3":
            release.wait()
        return True

    task = Task.from_records(ROWS, prompt="Compute {q}.", check=hangs_on_the_third)  # its own limit: 60 s
    with pytest.raises(CheckError) as info:
        vl.evaluate(task, [strategy], model=lambda m: "1", out=tmp_path / "run", cache=False, concurrency=1,
                    check_timeout=1)  # ample for the checks that return
    assert str(info.value) == limit_message(hangs_on_the_third.__qualname__, "1", instance="3")
    assert [t.instance_id for t in load_trajectories(tmp_path / "run" / "trajectories.jsonl")] == ["1", "2"]


def test_checks_after_an_abandoned_one_still_run(release):
    def waits_forever(prompt, answer):
        release.wait()
        return True

    with pytest.raises(CheckError, match="did not return"):
        vl.correct(lambda messages: "7", "Name an odd number.", waits_forever, cache=False, check_timeout=0.2)
    # The thread it holds is left to it; the next check gets another.
    result = vl.correct(lambda messages: "7", "Name an odd number.", lambda p, a: int(a) % 2 == 1, cache=False)
    assert (result.ok, result.answer) == (True, "7")


def test_sync_checks_run_one_at_a_time_off_the_loop_thread(tmp_path):
    running: list[int] = []
    most = 0
    threads: set[str] = set()

    def counts(row, answer):
        nonlocal most
        running.append(1)
        most = max(most, len(running))
        threads.add(threading.current_thread().name)
        time.sleep(0.01)  # long enough for the loop to start the others' checks, were they concurrent
        running.pop()
        return True

    task = Task.from_records([{"q": str(i)} for i in range(12)], prompt="{q}", check=counts)
    summaries = vl.evaluate(task, ["backprompt"], model=lambda m: "1", out=tmp_path / "run", cache=False,
                            concurrency=6)
    assert summaries[0].correct == 12
    assert most == 1 and threads == {"veriloop-check"}


def test_a_time_limit_must_be_positive():
    with pytest.raises(CheckError, match=r"^check_timeout must be a positive number of seconds"):
        vl.correct(lambda messages: "7", "Name an odd number.", lambda p, a: True, cache=False, check_timeout=-1)


# --------------------------------------------------------------------------- experiment files


def test_an_experiment_task_takes_check_timeout(tmp_path):
    from veriloop.experiment.engine import build_domain
    from veriloop.experiment.overrides import parse_experiment

    (tmp_path / "rows.jsonl").write_text('{"q": "1+1"}\n')
    (tmp_path / "my_checks.py").write_text("def ok(row, answer):\n    return True\n")
    text = f"""
name = "checked"
models.m = {{id = "openai/x", base_url = "http://127.0.0.1:9/v1"}}
strategies = ["standard"]
[[tasks]]
file = "{tmp_path / 'rows.jsonl'}"
prompt = "{{q}}"
check = "python:{tmp_path / 'my_checks.py'}:ok"
check_timeout = 2.5
"""
    spec = parse_experiment(text, "exp.toml")
    task = build_domain(spec, spec.domain_entry(spec.domain_keys()[0])).domain
    assert task.checker.timeout == 2.5  # type: ignore[attr-defined]
    spec = parse_experiment(text.replace("check_timeout = 2.5\n", ""), "exp.toml")
    task = build_domain(spec, spec.domain_entry(spec.domain_keys()[0])).domain
    assert task.checker.timeout == 60.0  # type: ignore[attr-defined]
    with pytest.raises(vl.VeriloopError, match=r"check_timeout is the time limit of its check; give the check too"):
        parse_experiment(text.replace('check = "python:', '# check = "python:'), "exp.toml")
    with pytest.raises(vl.VeriloopError, match=r"check_timeout"):
        parse_experiment(text.replace("2.5", "0"), "exp.toml")


# --------------------------------------------------------------------------- the command line

CHECKS = '''
import sys, time
from pathlib import Path

def exits_on_b(row, answer):
    if row["id"] == "b":
        sys.exit(0)
    return ""

def loops_on_b(row, answer):
    if row["id"] == "b":
        Path(__file__).with_name("started-b").write_text("")
        while True:  # a busy loop: the check thread holds the GIL as much as it can
            pass
    return ""
'''
ROWS_AB = [{"id": "a", "question": "What is 2+2?"}, {"id": "b", "question": "What is 3+3?"}]


def write_task(folder: Path) -> tuple[Path, Path]:
    task = folder / "ab.jsonl"
    task.write_text("".join(json.dumps(r) + "\n" for r in ROWS_AB))
    checks = folder / "ab_checks.py"
    checks.write_text(CHECKS)
    return task, checks


def run_args(folder: Path, server: str, check: str, *more: str) -> list[str]:
    task, checks = write_task(folder)
    return ["run", "--task", str(task), "--prompt", "{question}", "--id-field", "id", "--check",
            f"python:{checks}:{check}", "--model", "openai/x", "--base-url", f"{server}/ok/v1", "--no-cache",
            "--concurrency", "1", "--out", str(folder / "run"), *more]


def kept(folder: Path) -> list[str]:
    return [t.instance_id for t in load_trajectories(folder / "run" / "trajectories.jsonl")]


def test_cli_a_check_that_calls_sys_exit_stops_the_run_in_one_line(tmp_path, canned_server):
    proc = veriloop_process(*run_args(tmp_path, canned_server, "exits_on_b", "-s", "standard"), home=tmp_path / "home")
    assert the_error(proc) == "error: check ab_checks:exits_on_b raised on instance 'b': SystemExit: 0"
    assert kept(tmp_path) == ["a"]


def test_cli_check_timeout_stops_a_check_that_loops(tmp_path, canned_server):
    proc = veriloop_process(*run_args(tmp_path, canned_server, "loops_on_b", "-s", "backprompt:max_rounds=1",
                                      "--check-timeout", "1.5"), home=tmp_path / "home")  # ample for a's check
    assert the_error(proc) == (
        "error: check ab_checks:loops_on_b did not return within 1.5 s on instance 'b'; make it return sooner, or "
        "give it longer (--check-timeout, check_timeout=)"
    )
    assert kept(tmp_path) == ["a"]


def test_cli_check_timeout_goes_with_a_check(tmp_path):
    task, _ = write_task(tmp_path)
    assert_one_line_error(veriloop("run", "--check-timeout", "5"), "--check-timeout goes with --task")
    proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "--check-timeout", "5")
    assert_one_line_error(proc, "check_timeout is the time limit of its check; give the check too")
    for bad in ("0", "-1", "nan", "inf"):
        proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "--check", "m:f", "--check-timeout", bad)
        assert_one_line_error(proc, f"--check-timeout must be a positive number of seconds, not {bad}")


def test_ctrl_c_raises_in_a_blocked_wait_from_before_its_check_starts(monkeypatch):
    # A check that runs at once and busy-loops holds the GIL against the waiting thread: a
    # Ctrl-C pressed as soon as the check runs must already find the handler that raises,
    # or the loop's own handler takes it and the blocked wait never ends.
    from veriloop import checks

    happened: list[str] = []
    real_signal = signal.signal

    def recording_signal(signum, handler):
        if signum == signal.SIGINT and handler is signal.default_int_handler:
            happened.append("ctrl-c raises")
        return real_signal(signum, handler)

    class RecordingThread(threading.Thread):
        def start(self) -> None:
            happened.append("check starts")
            super().start()

    monkeypatch.setattr(checks.signal, "signal", recording_signal)
    monkeypatch.setattr(checks.threading, "Thread", RecordingThread)
    before = real_signal(signal.SIGINT, lambda signum, frame: None)  # the loop's own, as asyncio.run's
    try:
        assert checks.call_on_daemon_thread(lambda: 42) == 42
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler  # the loop's again
    finally:
        real_signal(signal.SIGINT, before)
    assert happened == ["ctrl-c raises", "check starts"]


@pytest.mark.parametrize("strategy", ["standard", "backprompt:max_rounds=1"])
def test_cli_ctrl_c_stops_a_run_whose_check_loops_forever(tmp_path, canned_server, strategy):
    # standard judges its answer from inside the loop (blocking it); backprompt awaits the
    # check as its verifier. The limit (60 s) is far off: only Ctrl-C can end this run.
    proc = subprocess.Popen(
        [sys.executable, "-m", "veriloop.cli", *run_args(tmp_path, canned_server, "loops_on_b", "-s", strategy)],
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, COLUMNS="200", VERILOOP_HOME=str(tmp_path / "home")),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    try:
        deadline = time.monotonic() + 60  # a hang guard only
        while not (tmp_path / "started-b").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)  # a hang guard: the run ends at once
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted; finished work is kept in {tmp_path / 'run'}; run the same command again to resume"
    )
    assert kept(tmp_path) == ["a"]


@pytest.mark.parametrize(("body", "raised"), [
    ("import sys\nsys.exit(7)\n", "SystemExit: 7"),
    ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    ("def f(:\n", "SyntaxError"),
])
def test_cli_a_check_module_that_raises_on_import_is_one_line_naming_the_file(tmp_path, body, raised):
    task, _ = write_task(tmp_path)
    module = tmp_path / "exits_on_import.py"
    module.write_text(body)
    # In this process: the helper gives an escaped SystemExit its own status (7, not 2) and
    # lets a KeyboardInterrupt through, so either fails here as it would from a subprocess.
    proc = veriloop("run", "--task", str(task), "--prompt", "{question}", "--check", f"python:{module}:f")
    assert_one_line_error(proc, f"importing {module} failed: {raised}")


def test_a_check_package_that_exits_on_import_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "quits_here.py").write_text("import sys\nsys.exit(7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(vl.VeriloopError, match=r"^--check 'quits_here:f': cannot import quits_here: SystemExit: 7$"):
        vl.load_check("quits_here:f")
