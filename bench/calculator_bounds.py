"""What does the calculator pay to refuse a number too large to compute?

A model can ask the calculator tool for `9 ** 99999` or `factorial(1000) ** 50`; the tool
estimates the size of every power and product before computing it and refuses beyond
100,000 bits. This script times those refusals against ordinary calculations through the
same tool (the baseline), alternating the two, and shows what computing the refused
numbers with Python's own integers would have cost instead (for the smaller ones only:
the larger would take far longer).

Run: python bench/calculator_bounds.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.tools.calculator import Calculator  # noqa: E402

HUGE = [
    "(10 ** 30000) * (10 ** 30000) * (10 ** 30000)",
    "factorial(1000) ** 50",
    "9 ** 99999",
    "(10 ** 20000) * (10 ** 20000) * (10 ** 20000)",
]
ORDINARY = ["(17 - 5) * 3 / 4", "2 ^ 10 + 1/4", "sqrt(2) * 100", "factorial(12) / 7"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per side (default 2000)")
    args = parser.parse_args()
    tool = Calculator()
    refused, ordinary = [], []
    for i in range(args.calls):
        huge, small = HUGE[i % len(HUGE)], ORDINARY[i % len(ORDINARY)]
        t0 = time.perf_counter()
        big = tool.run(huge)
        t1 = time.perf_counter()
        fine = tool.run(small)
        t2 = time.perf_counter()
        if big.ok or not fine.ok:
            raise SystemExit(f"expected {huge!r} refused and {small!r} computed: {big.text!r}, {fine.text!r}")
        refused.append(t1 - t0)
        ordinary.append(t2 - t1)
    m_refused, m_ordinary = statistics.median(refused), statistics.median(ordinary)
    t0 = time.perf_counter()
    for _ in range(3):
        9**99999 * 1  # noqa: B018 -- the work the refusal skips
        math.factorial(1000) ** 50  # noqa: B018
    direct = (time.perf_counter() - t0) / 6
    print(f"refused huge expressions: median {m_refused * 1e6:.1f} us per call ({args.calls} calls)")
    print(f"ordinary expressions (baseline): median {m_ordinary * 1e6:.1f} us per call")
    print(f"ratio refusal / ordinary: {m_refused / m_ordinary:.2f}")
    print(f"for scale: computing 9 ** 99999 or factorial(1000) ** 50 with Python ints: {direct * 1e3:.2f} ms each")


if __name__ == "__main__":
    main()
