"""An exact Game of 24 solver over fractions: every value a multiset of numbers can
make (memoised per sorted multiset), one witness expression with the fewest brackets,
and the ease scores the generated puzzles are ordered by.

Values are exact rationals held as (numerator, denominator) pairs in lowest terms with a
positive denominator: the same canonical form `Fraction` keeps, so every table holds the
same values in the same order (and so the same witnesses) as over `Fraction`, at a
fraction of the cost (listing every solvable puzzle took 0.47 s of CPU with `Fraction`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache, lru_cache
from itertools import combinations, combinations_with_replacement
from math import gcd

TARGET = Fraction(24)
MIN_NUMBER = 1
MAX_NUMBER = 13

# Precedence of a rendered sub-expression, so the solver can print the fewest brackets
# that keep the value unchanged.
_SUM, _PRODUCT, _ATOM = 1, 2, 3

Rational = tuple[int, int]  # (numerator, denominator), in lowest terms, denominator > 0
Reach = dict[Rational, tuple[str, int]]
_TARGET: Rational = (24, 1)


def _add(x: Rational, y: Rational) -> Rational:
    (a, b), (c, d) = x, y
    if b == d == 1:
        return (a + c, 1)
    n, m = a * d + c * b, b * d
    g = gcd(n, m)
    return (n // g, m // g)


def _sub(x: Rational, y: Rational) -> Rational:
    (a, b), (c, d) = x, y
    if b == d == 1:
        return (a - c, 1)
    n, m = a * d - c * b, b * d
    g = gcd(n, m)
    return (n // g, m // g)


def _mul(x: Rational, y: Rational) -> Rational:
    (a, b), (c, d) = x, y
    n, m = a * c, b * d
    if m == 1:
        return (n, 1)
    g = gcd(n, m)
    return (n // g, m // g)


def _div(x: Rational, y: Rational) -> Rational:
    """x / y, for y != 0."""
    (a, b), (c, d) = x, y
    n, m = (a * d, b * c) if c > 0 else (-a * d, -b * c)
    g = gcd(n, m)
    return (n // g, m // g)


def _literal(n: int) -> tuple[str, int]:
    return (str(n), _ATOM) if n >= 0 else (f"({n})", _ATOM)


def _combine(left: tuple[str, int], op: str, right: tuple[str, int]) -> tuple[str, int]:
    lexpr, lp = left
    rexpr, rp = right
    if op in "*/" and lp == _SUM:
        lexpr = f"({lexpr})"
    # Only the right operand of - and / (and * of a sum) needs brackets: + and * are
    # associative and the exact arithmetic makes a*(b/c) and a*b/c the same number.
    if (op in "-*" and rp == _SUM) or (op == "/" and rp != _ATOM):
        rexpr = f"({rexpr})"
    return f"{lexpr} {op} {rexpr}", (_SUM if op in "+-" else _PRODUCT)


@cache
def _splits(nums: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Each way to cut a sorted multiset in two, listed once, smaller group first."""
    n = len(nums)
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for size in range(1, n // 2 + 1):
        for idx in combinations(range(n), size):
            chosen = set(idx)
            a = tuple(nums[i] for i in idx)
            b = tuple(nums[i] for i in range(n) if i not in chosen)
            # With equal halves the complement shows up as its own combination.
            if 2 * size == n and b < a:
                continue
            if (a, b) not in seen:
                seen.add((a, b))
                out.append((a, b))
    return tuple(out)


@cache
def _reachable(nums: tuple[int, ...]) -> Reach:
    """Every value an expression over exactly this multiset can take, with one witness."""
    if len(nums) == 1:
        return {(nums[0], 1): _literal(nums[0])}
    out: Reach = {}
    for a, b in _splits(nums):
        ra, rb = _reachable(a), _reachable(b)
        for va, ea in ra.items():
            for vb, eb in rb.items():
                # setdefault's witness is built only for a value not seen yet.
                for value, left, op, right in ((_add(va, vb), ea, "+", eb), (_sub(va, vb), ea, "-", eb),
                                               (_sub(vb, va), eb, "-", ea), (_mul(va, vb), ea, "*", eb)):
                    if value not in out:
                        out[value] = _combine(left, op, right)
                if vb[0]:
                    value = _div(va, vb)
                    if value not in out:
                        out[value] = _combine(ea, "/", eb)
                if va[0]:
                    value = _div(vb, va)
                    if value not in out:
                        out[value] = _combine(eb, "/", ea)
    return out


@cache
def _root_hits(nums: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
    """Root combinations reaching 24, found by looking up the value the other side needs.

    Enumerating whole value sets at the root is the expensive step, so only the smaller
    group is walked; the larger group's memoised table answers "can you make b?".
    Memoised: a solvable puzzle's witness (`solve`) and its count (`solution_count`) both
    read it.
    """
    hits: list[tuple[str, int]] = []
    for a_nums, b_nums in _splits(nums):
        ra, rb = _reachable(a_nums), _reachable(b_nums)
        for va, ea in ra.items():
            # (needed b, renders as "a op b" when True or "b op a" when False, operator)
            wants: list[tuple[Rational, bool, str]] = [
                (_sub(_TARGET, va), True, "+"),
                (_sub(va, _TARGET), True, "-"),
                (_add(_TARGET, va), False, "-"),
            ]
            if va[0]:
                wants += [(_div(_TARGET, va), True, "*"), (_div(va, _TARGET), True, "/"), (_mul(_TARGET, va), False, "/")]
            for need, a_first, op in wants:
                eb = rb.get(need)
                if eb is not None:
                    hits.append(_combine(ea, op, eb) if a_first else _combine(eb, op, ea))
    return tuple(hits)


@cache
def _solve_sorted(nums: tuple[int, ...]) -> str | None:
    if not nums:
        return None
    if len(nums) == 1:
        return str(nums[0]) if nums[0] == 24 else None
    hits = _root_hits(nums)
    return hits[0][0] if hits else None


def solve(numbers: Sequence[int]) -> str | None:
    """One expression using every number exactly once that equals 24, or None."""
    return _solve_sorted(tuple(sorted(int(n) for n in numbers)))


@cache
def _solution_count_sorted(nums: tuple[int, ...]) -> int:
    if len(nums) < 2:
        return int(len(nums) == 1 and nums[0] == 24)
    return len(_root_hits(nums))


def solution_count(numbers: Sequence[int]) -> int:
    """How many (split, left value, operator) roots reach 24: a cheap ease score."""
    return _solution_count_sorted(tuple(sorted(int(n) for n in numbers)))


def _neutral(rest: tuple[int, ...]) -> bool:
    """Whether these leftover numbers fold away for free: nothing, 1s (x * 1), or an
    equal pair (x / x = 1, x - x = 0), possibly with 1s."""
    if all(n == 1 for n in rest):
        return True
    counts = Counter(n for n in rest if n != 1)
    return len(counts) == 1 and next(iter(counts.values())) == 2


@cache
def _core_operations_sorted(nums: tuple[int, ...]) -> int:
    best = len(nums) - 1
    for size in range(1, len(nums)):
        for idx in combinations(range(len(nums)), size):
            core = tuple(nums[i] for i in idx)
            rest = tuple(nums[i] for i in range(len(nums)) if i not in idx)
            if _neutral(rest) and _TARGET in _reachable(core):
                best = min(best, size - 1)
    return best


def core_operations(numbers: Sequence[int]) -> int:
    """How many real operations a solution needs once free leftovers (1s, an equal pair)
    are folded away: 1 for 1 1 4 6 (4 * 6), 3 for 4 9 10 13. The main ease proxy: human
    solve times on 4nums.com and small models' success both favour few real steps."""
    return _core_operations_sorted(tuple(sorted(int(n) for n in numbers)))


@lru_cache(maxsize=1)
def _all_solvable() -> tuple[tuple[int, int, int, int], ...]:
    puzzles = combinations_with_replacement(range(MIN_NUMBER, MAX_NUMBER + 1), 4)
    return tuple(p for p in puzzles if _solve_sorted(p) is not None)


def all_solvable_puzzles() -> list[tuple[int, int, int, int]]:
    """Every solvable multiset of four numbers from 1 to 13, as sorted tuples."""
    return list(_all_solvable())
