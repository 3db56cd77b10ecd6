"""How long does the command line take to start?

Every command pays the interpreter's start and the imports of what it runs. This script
times two commands, each in a fresh process of this interpreter, against the baseline
any Python command pays, `python -c pass`:

- `veriloop verify game24 --instance "1 1 4 6" --answer "4 * 6 * 1 * 1"`, the cheapest
  command that does something (imports typer, its own module, the domain and the records);
- `veriloop --help`, which lists every command without importing any.

The three are run in turn, round after round, so machine noise hits all alike; the
medians are compared (target: each command at most 0.3 s above the baseline). Commands
run as `python -m veriloop.cli` on this checkout's src/. Bytecode is cached as an
installed package has it: PYTHONDONTWRITEBYTECODE is dropped and the compiled files go to
a temporary PYTHONPYCACHEPREFIX, filled by untimed warm-up rounds, so the tree is not
written to.

Run: python bench/startup.py [--rounds 40] [--src DIR]  (--src: another checkout's src/,
to time the code before a change in the same run conditions)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.3  # seconds above the baseline

BASELINE = "python -c pass"
COMMANDS = {
    BASELINE: ["-c", "pass"],
    "veriloop verify game24": ["-m", "veriloop.cli", "verify", "game24", "--instance", "1 1 4 6",
                               "--answer", "4 * 6 * 1 * 1"],
    "veriloop --help": ["-m", "veriloop.cli", "--help"],
}


def run(args: list[str], env: dict[str, str]) -> float:
    """Seconds from start to exit of `python ARGS`; its output checked."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)
    seconds = time.perf_counter() - start
    if args[:2] == ["-m", "veriloop.cli"]:
        expected = "Commands:" if args[-1] == "--help" else '{"ok":true,'
        if proc.returncode != 0 or expected not in proc.stdout:
            raise SystemExit(f"python {' '.join(args)} failed (status {proc.returncode}): {proc.stderr or proc.stdout}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="runs of each command (default 40)")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the veriloop sources to time (default: this checkout's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="veriloop-startup-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.src), env.get("PYTHONPATH")]))
        env["COLUMNS"] = "80"
        for _ in range(2):  # warm-up: bytecode compiled and cached, files in the page cache
            for command in COMMANDS.values():
                run(command, env)
        times: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.rounds):
            for name, command in COMMANDS.items():
                times[name].append(run(command, env))
    load = os.getloadavg()[0]
    print(f"{sys.executable}, veriloop from {args.src}, {args.rounds} rounds; load average {load:.1f} on {os.cpu_count()} CPUs")
    base = statistics.median(times[BASELINE])
    for name, seconds in times.items():
        quartiles = statistics.quantiles(seconds, n=4)
        line = (f"{name:24} median {statistics.median(seconds) * 1000:6.0f} ms "
                f"(quartiles {quartiles[0] * 1000:.0f}-{quartiles[2] * 1000:.0f} ms)")
        if name == BASELINE:
            line += "  (baseline)"
        else:
            above = statistics.median(seconds) - base
            line += f"  {above:+.3f} s over the baseline ({'within' if above <= TARGET else 'over'} {TARGET} s)"
        print(line)


if __name__ == "__main__":
    main()
