"""How long does ranking the generated Game of 24 puzzles take, with `_root_hits` memoised?

`Game24().load_instances(None)` orders every solvable multiset of four numbers from 1 to
13 by ease: it asks each multiset for a witness (`solve`) and each solvable one for its
count of roots (`solution_count`). Both walk `_root_hits`, the solver's costliest step;
it is now memoised, so the count reuses the walk the witness made. This script times the
ranking in a fresh interpreter each time (the solver's caches start empty, as in a run or
a test worker), with `_root_hits` as it is and with the memo taken off (the function it
wraps, which is the old code), and checks that both give the same instances.

Run: python bench/game24_ranking.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from veriloop.domains.game24 import Game24, solver
if sys.argv[2] == "unmemoised":
    solver._root_hits = solver._root_hits.__wrapped__
start = time.process_time()
instances = Game24().load_instances(None)
seconds = time.process_time() - start
digest = hashlib.sha256(repr([(i.id, i.data, i.reference) for i in instances]).encode()).hexdigest()
print(json.dumps([seconds, len(instances), digest]))
"""


def ranking(kind: str) -> tuple[float, int, str]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "src"), kind], capture_output=True, text=True,
                         check=True).stdout
    seconds, count, digest = json.loads(out)
    return seconds, count, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    best: dict[str, float] = {}
    results: dict[str, tuple[int, str]] = {}
    for _ in range(args.repeat):
        for kind in ("unmemoised", "memoised"):
            seconds, count, digest = ranking(kind)
            best[kind] = min(best.get(kind, float("inf")), seconds)
            assert results.setdefault(kind, (count, digest)) == (count, digest)
    assert results["unmemoised"] == results["memoised"], results
    old, new = best["unmemoised"], best["memoised"]
    print(f"{results['memoised'][0]} puzzles ranked (same instances both ways), best CPU of {args.repeat}: "
          f"unmemoised {old:.3f} s, memoised {new:.3f} s, {old / new:.2f}x")


if __name__ == "__main__":
    main()
