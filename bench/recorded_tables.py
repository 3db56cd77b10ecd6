"""What two paths of the recorded-runs tables cost, against the code paths they replaced,
each baseline measured in the same run.

- game24's generated puzzles (`load_instances(None)`): solved once a process, against
  solving them at every load (the kept rows cleared before each).
- `chromatic_number` of the 100 graphs Table 1 reads: kept per graph, against the SAT
  search at every load.

Run: python bench/recorded_tables.py [--data ../shared/data] [--repeats 3]
CPU seconds (process time), the best of the repeats.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.domains import get_domain  # noqa: E402
from veriloop.domains.coloring import chromatic, parse_col  # noqa: E402
from veriloop.domains.game24 import domain as game24  # noqa: E402


def best(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def row(name: str, baseline: float, ours: float) -> None:
    print(f"{name:<44} baseline {baseline:7.3f} s   ours {ours:7.3f} s   {baseline / ours:5.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    domain = get_domain("game24")
    domain.load_instances(None)

    def solved_each_time() -> None:
        game24._generated_rows.cache_clear()
        domain.load_instances(None)

    baseline = best(args.repeats, solved_each_time)
    row("game24 generated puzzles, one load", baseline, best(args.repeats, lambda: domain.load_instances(None)))

    graphs = [parse_col((args.data / "graph_coloring" / f"instance-{k}.col").read_text()) for k in range(1, 101)]
    edges = [(n, e) for n, e, _ in graphs]

    def searched() -> None:
        for n, e in edges:
            chromatic._search(n, e)

    def kept() -> None:
        for n, e in edges:
            chromatic.chromatic_number(n, e)

    kept()
    row("chromatic number of graphs 1-100", best(args.repeats, searched), best(args.repeats, kept))


if __name__ == "__main__":
    main()
