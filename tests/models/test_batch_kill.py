"""A real kill -9 of `veriloop run --batch` while its batch is in progress, then the same
command again on the same run directory: every trajectory completes, one batch per round
was created, and no custom_id was sent twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from standins.openai import OpenAIStandin

N, ROUNDS = 3, 2


def wait_for(what: str, done: Any, proc: subprocess.Popen[bytes], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read().decode() if proc.stderr else ''}"
        assert time.monotonic() < deadline, f"no {what} within {seconds:g} s"
        time.sleep(0.02)


def test_kill_9_while_a_batch_runs_then_the_same_command_collects_it(tmp_path: Path, batch_cli: list[str]) -> None:
    out, journal = tmp_path / "run", tmp_path / "run" / "batches.jsonl"
    with OpenAIStandin() as standin:
        argv = [*batch_cli, "run", "--model", "openai/gpt-4o-mini", "--base-url", standin.base_url, "--api-key",
                standin.key, "--batch", "-s", "backprompt:verifier=sound,feedback=first", "--max-rounds",
                str(ROUNDS), "-n", str(N), "--out", str(out), "--cache", str(tmp_path / "calls.sqlite")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                            os.environ.get("PYTHONPATH", "")])}
        first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for("a submitted batch", lambda: journal.exists() and '"submitted"' in journal.read_text(), first)
            standin.advance()  # validating -> in_progress: the batch is running when the kill comes
            first.send_signal(signal.SIGKILL)
            first.wait()
        finally:
            if first.poll() is None:
                first.kill()
        assert len(standin.batches) == 1 and not (out / "trajectories.jsonl").exists()
        standin.finish_batches()  # it ends while no veriloop runs
        standin.auto_advance = True
        again = subprocess.run(argv, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == N and all(len(r["calls"]) == ROUNDS for r in rows)
    assert len(standin.batches) == ROUNDS
    ids = [cid for job in standin.batches for cid in job.custom_ids]
    assert len(ids) == len(set(ids)) == N * ROUNDS
    assert standin.billed["requests"] == 0
    assert standin.key not in journal.read_text()
