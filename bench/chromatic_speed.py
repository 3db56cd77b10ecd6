"""How long does the exact chromatic number take on the stored colouring instances?

Every colouring instance carries its chromatic number, computed (or checked, when the
file states it) by `chromatic_number`, an incremental SAT search. This script times it
on the 320 `.col` graphs of ../shared/data/graph_coloring against a plain exact
baseline run in the same process on the same graphs: backtracking over vertices in order,
trying k = 1, 2, ... colours until one colouring exists. Both must find the same number,
and it must be the one the file states.

Run: python bench/chromatic_speed.py [--data ../shared/data/graph_coloring] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.domains.coloring import chromatic_number, parse_col  # noqa: E402


def colourable(n: int, neighbours: list[set[int]], k: int) -> bool:
    colour = [-1] * n

    def place(v: int) -> bool:
        if v == n:
            return True
        used = {colour[u] for u in neighbours[v] if colour[u] >= 0}
        # Colours are interchangeable: a vertex never needs a colour above max so far + 1.
        top = max(colour[:v], default=-1) + 1
        for c in range(min(k, top + 1)):
            if c not in used:
                colour[v] = c
                if place(v + 1):
                    return True
        colour[v] = -1
        return False

    return place(0)


def backtracking_chromatic(n: int, edges: list[tuple[int, int]]) -> int:
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for u, v in edges:
        neighbours[u].add(v)
        neighbours[v].add(u)
    k = 1 if n else 0
    while n and not colourable(n, neighbours, k):
        k += 1
    return k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "graph_coloring")
    parser.add_argument("--repeats", type=int, default=3, help="passes over all graphs per side; the fastest counts")
    args = parser.parse_args()
    graphs = []
    for path in sorted(args.data.glob("*.col")):
        n, edges, stated = parse_col(path.read_text(), str(path))
        graphs.append((path.name, n, [tuple(e) for e in edges], stated))
    if not graphs:
        raise SystemExit(f"no .col files in {args.data}")
    ours_best = base_best = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ours = [chromatic_number(n, edges)[0] for _, n, edges, _ in graphs]
        t1 = time.perf_counter()
        base = [backtracking_chromatic(n, edges) for _, n, edges, _ in graphs]
        t2 = time.perf_counter()
        ours_best, base_best = min(ours_best, t1 - t0), min(base_best, t2 - t1)
        for (name, _, _, stated), a, b in zip(graphs, ours, base):
            if not a == b == (stated if stated is not None else a):
                raise SystemExit(f"{name}: SAT {a}, backtracking {b}, file states {stated}")
    n = len(graphs)
    print(f"chromatic_number (incremental SAT): {ours_best * 1000:.1f} ms for {n} graphs (best of {args.repeats})")
    print(f"backtracking, k = 1, 2, ... (baseline): {base_best * 1000:.1f} ms")
    print(f"ratio SAT / backtracking: {ours_best / base_best:.2f} (same chromatic numbers on all {n}, as stated)")


if __name__ == "__main__":
    main()
