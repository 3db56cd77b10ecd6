"""What does isolation cost per model-written program?

CRITIC's math loop runs every program the model writes. This script times the python
tool (new network, mount, PID, IPC and UTS namespaces, a root file system of its own,
uid drop, no capabilities, seccomp filter, rlimits, a memory watch over all its processes) against the bare minimum
any runner pays: a fresh `python -I -S -c <program>` subprocess with no isolation at all,
on the same programs, alternating the two so machine noise hits both alike. Both must
produce the same answers.

Run: python bench/sandbox_overhead.py [--calls 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.tools.sandbox import run_python  # noqa: E402

PROGRAMS = [
    "answer = sum(range(1000))",
    "import math\nanswer = round(math.sqrt(2) * 1000)",
    "prices = [3, 4, 5]\nanswer = sum(p * 2 for p in prices)",
    "from fractions import Fraction\nanswer = str(Fraction(14, 3) + 1)",
]


def bare(code: str) -> str:
    wrapped = f"{code}\nprint(answer)"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", wrapped], capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="programs run per side (default 40)")
    args = parser.parse_args()
    ours, baseline = [], []
    for i in range(args.calls):
        code = PROGRAMS[i % len(PROGRAMS)]
        t0 = time.perf_counter()
        result = run_python(code)
        t1 = time.perf_counter()
        plain = bare(code)
        t2 = time.perf_counter()
        if not result.isolated:
            raise SystemExit("the sandbox could not isolate the program here; nothing to measure")
        if result.answer != plain:
            raise SystemExit(f"answers differ on {code!r}: sandbox {result.answer!r}, bare {plain!r}")
        ours.append(t1 - t0)
        baseline.append(t2 - t1)
    m_ours, m_base = statistics.median(ours), statistics.median(baseline)
    print(f"sandboxed python tool: median {m_ours * 1000:.1f} ms per program ({args.calls} programs)")
    print(f"bare python -I -S subprocess (baseline): median {m_base * 1000:.1f} ms")
    print(f"ratio sandbox / bare: {m_ours / m_base:.2f} (same answers on all {args.calls})")


if __name__ == "__main__":
    main()
