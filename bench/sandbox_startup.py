"""What does the sandbox cost to start, before and after a change?

Times `run_python("answer = 1")` (the whole call: launcher, namespaces, the program's
root, PID 1, the program, the record) for two versions of the sandbox in the same run,
and a bare `python -c pass` subprocess as the floor any runner pays. With `--humaneval`
the call is one HumanEval verdict instead: the hidden tests of HumanEval/53 against its
canonical solution (the harness, its worker interpreter, seven tests), the run's cache
left out.

- "before": the sandbox at git revision 4c8b027 (its src/ extracted to a temporary
  directory), or any other src/ given with --baseline-src;
- "after": this checkout's src/.

Each version is timed in a child process of its own (the package is imported once there,
as a long-running caller has it), in rounds that alternate the three, so machine noise
hits all alike; medians are compared, of the wall time and of the CPU time the call's
processes used (the steadier figure on a busy machine).

Run: python bench/sandbox_startup.py [--runs 60] [--rounds 6] [--baseline-src DIR] [--humaneval]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REV = "4c8b027"

# Runs in the child: `n` timed calls after two untimed ones; the wall seconds of each and
# the CPU seconds its processes used (reaped descendants: launcher, PID 1, program), as JSON.
TIMER = """
import json, resource, sys, time
from veriloop.tools.sandbox import run_python
n, humaneval = int(sys.argv[1]), sys.argv[2] == "humaneval"
if humaneval:
    from veriloop.domains.humaneval import read_problems
    from veriloop.domains.humaneval.runner import TestRunner
    problem = next(p.data for p in read_problems() if p.data["task_id"] == "HumanEval/53")
    def call():
        run = TestRunner().run(problem["prompt"], problem["prompt"] + problem["canonical_solution"],
                               problem["entry_point"], "check", problem["test"])
        assert run.ok and run.passed > 0, run
else:
    def call():
        result = run_python("answer = 1")
        assert (result.answer, result.isolated) == ("1", True), result
for _ in range(2):
    call()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
times = []
for _ in range(n):
    start, used = time.perf_counter(), cpu()
    call()
    times.append((time.perf_counter() - start, cpu() - used))
print(json.dumps(times))
"""


def extract(rev: str, into: Path) -> Path:
    """src/ of `rev` of this repository, under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def sandbox_times(src: Path, runs: int, kind: str) -> list[list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", TIMER, str(runs), kind], capture_output=True, text=True, env=env,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"the sandbox from {src} failed: {out.stderr.strip().splitlines()[-1:]}")
    return list(json.loads(out.stdout))


def bare_times(runs: int) -> list[list[float]]:
    times = []
    for _ in range(runs):
        start, used = time.perf_counter(), os.times()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        done = os.times()
        times.append([time.perf_counter() - start,
                      done.children_user + done.children_system - used.children_user - used.children_system])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="timed calls of each, in all (default 60)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds the calls are split into (default 6)")
    parser.add_argument("--baseline-src", type=Path, help=f"the src/ to compare with (default: git {BASELINE_REV})")
    parser.add_argument("--humaneval", action="store_true", help="time one HumanEval verdict rather than answer = 1")
    args = parser.parse_args()
    kind = "humaneval" if args.humaneval else "answer"
    per_round = max(1, args.runs // args.rounds)
    with tempfile.TemporaryDirectory(prefix="veriloop-sandbox-bench-") as tmp:
        before = args.baseline_src or extract(BASELINE_REV, Path(tmp))
        times: dict[str, list[list[float]]] = {"python -c pass": [], "before": [], "after": []}
        for _ in range(args.rounds):
            times["python -c pass"] += bare_times(per_round)
            times["before"] += sandbox_times(before, per_round, kind)
            times["after"] += sandbox_times(ROOT / "src", per_round, kind)
    load = os.getloadavg()[0]
    print(f"{sys.executable}, uid {os.geteuid()}, {kind}, {args.rounds} rounds of {per_round}; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    print(f"before: {before}\nafter:  {ROOT / 'src'}")
    wall = {name: [t[0] for t in runs] for name, runs in times.items()}
    cpu = {name: statistics.median(t[1] for t in runs) for name, runs in times.items()}
    floor = statistics.median(wall["python -c pass"])
    for name, seconds in wall.items():
        median = statistics.median(seconds)
        quartiles = statistics.quantiles(seconds, n=4)
        print(f"{name:15} median {median * 1000:6.1f} ms (quartiles {quartiles[0] * 1000:.1f}-{quartiles[2] * 1000:.1f} ms)"
              f"  {median / floor:.2f}x python -c pass; CPU {cpu[name] * 1000:.1f} ms")
    ratio = statistics.median(wall["after"]) / statistics.median(wall["before"])
    print(f"after / before: wall {ratio:.2f}, CPU {cpu['after'] / cpu['before']:.2f}")


if __name__ == "__main__":
    main()
