"""How fast is the sound Game of 24 checker next to the sympy check used in prior work?

The self-verification paper's code judges an answer with
`sympy.simplify(sympy.sympify(expr)) == 24` plus a comparison of the numbers used.
This script times that against `Game24().verify` on the same ~2000 expressions
(every solver answer plus one-error mutations of some of them) and checks that the
two agree on every verdict. sympify runs only on expressions generated here, never
on model output.

Run: python bench/verify_speed.py
"""

from __future__ import annotations

import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.domains.base import Instance  # noqa: E402
from veriloop.domains.game24 import Game24, all_solvable_puzzles, solve  # noqa: E402

TOTAL = 2000
SEED = 24


def mutate(expr: str, rng: random.Random) -> str:
    """One error: a different literal, or a different operator at one spot."""
    if rng.random() < 0.5:
        spans = list(re.finditer(r"\d+", expr))
        span = rng.choice(spans)
        new = rng.choice([v for v in range(1, 14) if v != int(span.group())])
        return expr[: span.start()] + str(new) + expr[span.end() :]
    spots = [m.start() for m in re.finditer(r"[-+*/]", expr)]
    spot = rng.choice(spots)
    new_op = rng.choice([op for op in "+-*/" if op != expr[spot]])
    return expr[:spot] + new_op + expr[spot + 1 :]


def build_cases() -> list[tuple[Instance, str]]:
    rng = random.Random(SEED)
    puzzles = all_solvable_puzzles()
    cases: list[tuple[Instance, str]] = []
    for p in puzzles:
        expr = solve(p)
        assert expr is not None
        cases.append((Instance(id=str(p), data={"numbers": list(p)}), expr))
    for instance, expr in list(cases[: TOTAL - len(cases)]):
        cases.append((instance, mutate(expr, rng)))
    rng.shuffle(cases)
    return cases


def sympy_check(sympy: ModuleType, numbers: list[int], expr: str) -> bool:
    used = [int(n) for n in re.findall(r"\d+", expr)]
    if Counter(used) != Counter(numbers):
        return False
    try:
        return bool(sympy.simplify(sympy.sympify(expr)) == 24)
    except Exception:  # the baseline treats any sympy failure as "not correct"
        return False


def main() -> int:
    try:
        import sympy
    except ImportError:
        print("sympy is not installed; run: pip install sympy==1.14.0")
        return 1

    cases = build_cases()
    game = Game24()
    game.verify(cases[0][0], cases[0][1])  # import and regex compile outside the clock

    start = time.perf_counter()
    ours = [game.verify(instance, expr).ok for instance, expr in cases]
    ours_s = time.perf_counter() - start

    start = time.perf_counter()
    theirs = [sympy_check(sympy, instance.data["numbers"], expr) for instance, expr in cases]
    sympy_s = time.perf_counter() - start

    disagreements = [(c[1], a, b) for c, a, b in zip(cases, ours, theirs) if a != b]
    n = len(cases)
    ours_rate, sympy_rate = n / ours_s, n / sympy_s
    print(f"expressions: {n} ({sum(ours)} correct, {n - sum(ours)} wrong)")
    print(f"Game24.verify     : {ours_rate:12.1f} checks/s  ({ours_s:.3f} s total)")
    print(f"sympy simplify    : {sympy_rate:12.1f} checks/s  ({sympy_s:.3f} s total)")
    print(f"speed-up ours/sympy: {ours_rate / sympy_rate:.1f}x")
    assert not disagreements, f"verdicts differ on {len(disagreements)} expressions, e.g. {disagreements[:3]}"
    print("verdicts agree on every expression")
    return 0


if __name__ == "__main__":
    sys.exit(main())
