"""A real kill -9 of `veriloop run --batch` (the command users run, in a subprocess) while its
first batch is in progress at OpenAI's and Anthropic's stand-ins, then the same command
again on the same run directory once the batch ended (in this process: what it proves is
what the command finds, not how it ends): every trajectory completes, one batch
per round was created, no custom_id was sent twice, no call went live, and the journal
tells each batch's story. The progress lines of the killed run name the batch and its state."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import veriloop

N, ROUNDS = 3, 2
STRATEGY = "backprompt:verifier=sound,feedback=first"  # the stand-in's reply is wrong: every round is used
# What the progress line says of the first batch: its state when submitted, then once running.
FIRST_STATES = {"openai": ["validating, 0/3 done, 0 failed", "in_progress, 0/3 done, 0 failed"],
                "anthropic": ["in_progress, 3 processing"]}


def test_kill_9_while_a_batch_runs_then_the_same_command_collects_it(
        tmp_path: Path, batch_provider: str, batch_standin: Any, batch_model_ids: dict[str, str], wait_for: Any) -> None:
    out, journal, said = tmp_path / "run", tmp_path / "run" / "batches.jsonl", tmp_path / "first.err"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    with batch_standin(batch_provider) as standin:
        argv = [sys.executable, "-m", "veriloop.cli", "run", "--model", batch_model_ids[batch_provider], "--base-url",
                standin.base_url, "--api-key", standin.key, "--batch", "--batch-poll-seconds", "0.02", "-s", STRATEGY,
                "--max-rounds", str(ROUNDS), "-n", str(N), "--out", str(out), "--cache", str(tmp_path / "calls.sqlite")]
        with open(said, "wb") as stderr:
            first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_for("a submitted batch", lambda: journal.exists() and '"submitted"' in journal.read_text(), first)
            batch = standin.batches[0].id
            for state in FIRST_STATES[batch_provider]:
                line = f"batch {batch}: {state}"
                wait_for(repr(line), lambda line=line: line in said.read_text(), first)  # type: ignore[misc]
                if standin.batches[0].state == "validating":  # OpenAI's: the batch runs when the kill comes
                    standin.advance()
            first.send_signal(signal.SIGKILL)
            first.wait()
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == -signal.SIGKILL
        shown = re.findall(rf"^game24 x 1 strategies: batch {batch}: (.*)$", said.read_text(), re.MULTILINE)
        assert shown == FIRST_STATES[batch_provider]
        assert [job.state for job in standin.batches] == ["in_progress"]
        assert not (out / "trajectories.jsonl").exists()
        assert [e["event"] for e in map(json.loads, journal.read_text().splitlines())] == ["intent", "submitted"]
        standin.finish_batches()  # it ends while no veriloop runs
        standin.auto_advance = True
        again = veriloop(*argv[3:])  # argv without `python -m veriloop.cli`
    assert again.returncode == 0, again.stderr[-2000:]
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == N and all(len(r["calls"]) == ROUNDS for r in rows)
    assert len(standin.batches) == ROUNDS
    ids = [cid for job in standin.batches for cid in job.custom_ids]
    assert len(ids) == len(set(ids)) == N * ROUNDS
    assert standin.billed["requests"] == 0 and standin.billed_batch["requests"] == N * ROUNDS
    assert {c["sent"]["batch"] for r in rows for c in r["calls"]} == {job.id for job in standin.batches}
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    intents = list(dict.fromkeys(e["intent"] for e in entries))
    assert [(e["event"], intents.index(e["intent"])) for e in entries] == [
        ("intent", 0), ("submitted", 0),  # the killed run
        ("intent", 1), ("submitted", 1), ("collected", 0), ("collected", 1)]  # the re-run: collected at its end
    assert [e["batch"] for e in entries if e["event"] == "submitted"] == [job.id for job in standin.batches]
    assert standin.key not in journal.read_text()
