"""How much CPU does each command the tests start cost, against another checkout's?

The suite starts `python -m veriloop.cli ...` in many tests (a kill -9, a lock between
processes, Ctrl-C), and every user's command pays the same start: the interpreter, the
imports of its path, the work before its first call. This script runs each command in a
fresh process on this checkout's src/ and on a baseline's (`--baseline-src`, e.g. the
commit before a change, checked out with `git archive REV src | tar -x -C DIR`), in turn,
round after round, so machine noise hits both alike, and compares the medians of the
CPU each process used (user + system, from the kernel's accounts of the children: a
loaded 2-core machine stretches wall time, not CPU).

The commands need no network and no model: `veriloop run` talks to a stand-in OpenAI
server on 127.0.0.1 in this process (one canned reply, answered at once), on the default
domain (game24, whose puzzles it generates), two instances, one strategy.

Bytecode is cached as an installed package has it: PYTHONDONTWRITEBYTECODE is dropped
and the compiled files go to a temporary PYTHONPYCACHEPREFIX, filled by an untimed
warm-up round.

Run: python bench/command_cpu.py --baseline-src DIR [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from chat_standin import send_json, serving

ROOT = Path(__file__).resolve().parents[1]
REPLY = {"id": "x", "object": "chat.completion", "created": 0, "model": "x",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer: 4 * 6 * 1 * 1"},
                      "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}


class _Replies(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        send_json(self, REPLY)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def standin() -> Iterator[str]:
    """A chat completions server on 127.0.0.1; its /v1 URL."""
    with serving(_Replies) as url:
        yield url


def commands(url: str, work: Path) -> dict[str, list[str]]:
    cli = ["-m", "veriloop.cli"]
    return {
        "python -c pass": ["-c", "pass"],
        "veriloop --help": [*cli, "--help"],
        "veriloop plugins": [*cli, "plugins"],
        "veriloop verify game24": [*cli, "verify", "game24", "--instance", "1 1 4 6", "--answer", "4 * 6 * 1 * 1"],
        "veriloop run (openai/, game24, n 2)": [
            *cli, "run", "--model", "openai/x", "--base-url", url, "--api-key", "none", "-n", "2", "-s", "standard",
            "--no-cache", "--out", str(work / "run")],
        "veriloop view RUN": [*cli, "view", str(work / "run"), "--out", str(work / "report.html")],
    }


def cpu(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds of CPU `python ARGS` used (user + system); it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"python {' '.join(args)} failed (status {proc.returncode}): {proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True, help="the src/ of the checkout to compare with")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the src/ to time (default: this checkout's)")
    parser.add_argument("--rounds", type=int, default=7, help="runs of each command on each src (default 7)")
    args = parser.parse_args()
    trees = {"this": args.src.resolve(), "baseline": args.baseline_src.resolve()}
    with tempfile.TemporaryDirectory(prefix="veriloop-command-cpu-") as tmp, standin() as url:
        envs, works = {}, {}
        for name, src in trees.items():
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
            env.update(PYTHONPYCACHEPREFIX=str(Path(tmp) / f"pycache-{name}"), PYTHONPATH=str(src), COLUMNS="120",
                       VERILOOP_HOME=str(Path(tmp) / f"home-{name}"))
            envs[name], works[name] = env, Path(tmp) / f"work-{name}"
            works[name].mkdir()
        names = list(commands(url, Path(tmp)))
        seconds: dict[tuple[str, str], list[float]] = {(c, t): [] for c in names for t in trees}
        for round_ in range(args.rounds + 1):  # round 0: warm-up (bytecode, page cache), not counted
            for name in names:
                for tree in trees:
                    spent = cpu(commands(url, works[tree])[name], envs[tree], works[tree])
                    if round_:
                        seconds[(name, tree)].append(spent)
    load = os.getloadavg()[0]
    print(f"{sys.executable}; this: {trees['this']}, baseline: {trees['baseline']}; {args.rounds} rounds; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command (median CPU, user + system)':40} {'this':>8} {'baseline':>9} {'saved':>8} {'ratio':>6}")
    for name in names:
        this, base = (statistics.median(seconds[(name, tree)]) for tree in trees)
        print(f"{name:40} {this * 1000:6.0f}ms {base * 1000:7.0f}ms {(base - this) * 1000:6.0f}ms {this / base:6.2f}")


if __name__ == "__main__":
    main()
