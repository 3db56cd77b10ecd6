"""Ctrl-C on the command line (issue 13): a run interrupted while the model loads, and a
study interrupted twice mid-way, exit at once (status 130, no traceback) keeping what
finished. Real processes: the signal, the exit status and stderr are the point."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest


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
