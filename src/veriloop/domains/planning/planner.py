"""Optimal plans, and random Blocksworld problems in the style of PlanBench.

The planner only supplies reference plans and optimal lengths, never a verdict: checking
a plan is simulation alone. A* with the admissible LM-cut heuristic returns shortest
plans, pyperplan's in process first and Fast Downward's (the `up-fast-downward` wheel,
when installed) for problems pyperplan cannot finish within its share of the time limit.
Both are optimal, so the optimal length never depends on which one answered. Every plan
is re-checked by our own simulator before it is trusted, and each problem is solved at
most once per process. pyperplan searches its task in a fixed order (`_in_fixed_order`),
so a problem gets the same plan in every process, whatever its hash seed.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import VeriloopError
from .pddl_model import Atom, GroundAction, Task, atom_pddl, load_task, parse_pddl_step

HERE = Path(__file__).resolve().parent
OWN_BLOCKSWORLD = HERE / "domains" / "blocksworld.pddl"

# The generator's own vocabulary; a template's [generator] table maps it onto a domain's.
TOWER_FACTS = ("on", "ontable", "clear", "handempty")
MAX_BLOCKS = 26
DEFAULT_BLOCKS = (3, 5)

# Seconds one problem may take to solve optimally. PlanBench Blocksworld takes
# milliseconds; a Logistics problem with three cities and four packages takes pyperplan
# minutes and Fast Downward under a second.
DEFAULT_TIME_LIMIT = 60.0
# pyperplan's share of the limit when Fast Downward is there to take over: small problems
# keep pyperplan's plans, large ones do not wait for it.
PYPERPLAN_SHARE = 10.0
_MEMO_SIZE = 4096


class PlannerError(VeriloopError):
    """The reference planner could not read a task or returned an unusable plan."""


class PlanTooLargeError(PlannerError):
    """No optimal plan was found within the time limit."""


class _TimeUp(Exception):
    pass


def _in_fixed_order(task: Any) -> None:
    """Rewrite pyperplan's grounded `task` in place so that its search breaks every tie the
    same way in every process: facts become integers in the order of their names and
    operators are sorted by name. Its facts are strings in sets, whose order follows the
    process's hash seed, and A* and LM-cut break ties by that order: the same problem got
    another optimal plan in another process. An operator without preconditions gets one
    fact that always holds (pyperplan would add a string fact for it)."""
    from pyperplan.task import Operator

    index = {fact: i for i, fact in enumerate(sorted(task.facts))}
    always = len(index)

    def ints(facts: Any) -> frozenset[int]:
        return frozenset(index[f] for f in facts)

    task.operators = [
        Operator(op.name, ints(op.preconditions) or {always}, ints(op.add_effects), ints(op.del_effects))
        for op in sorted(task.operators, key=lambda op: op.name)
    ]
    task.facts = {*index.values(), always}
    task.initial_state = ints(task.initial_state) | {always}
    task.goals = ints(task.goals)


def _timed(heuristic_class: Any, deadline: float) -> Any:
    """`heuristic_class` that raises _TimeUp once past `deadline`: A* evaluates it at
    every node, so pyperplan stops in process, without a thread or a signal. It first puts
    the task in a fixed order (`_in_fixed_order`): pyperplan hands the heuristic the task
    it then searches."""

    class Timed(heuristic_class):  # type: ignore[misc, valid-type]
        def __init__(self, task: Any) -> None:
            if time.monotonic() > deadline:
                raise _TimeUp
            _in_fixed_order(task)
            super().__init__(task)
            # LM-cut prints its facts by name and finds a fact again by it: a name of words.
            for key, fact in list(self.relaxed_facts.items()):
                if isinstance(key, int):
                    fact.name = f"fact{key}"
                    self.relaxed_facts[fact.name] = fact

        def compute_hmax_from_last_cut(self, state: Any, last_cut: Any) -> Any:
            # The cut is a set of objects, in the order of their addresses.
            return super().compute_hmax_from_last_cut(state, sorted(last_cut, key=lambda op: op.name))

        def __call__(self, node: Any) -> Any:
            if time.monotonic() > deadline:
                raise _TimeUp
            return super().__call__(node)

    return Timed


def _write_task(tmp: str, domain_text: str, problem_text: str) -> tuple[Path, Path]:
    dom, prob = Path(tmp) / "domain.pddl", Path(tmp) / "problem.pddl"
    dom.write_text(domain_text, encoding="utf-8")
    prob.write_text(problem_text, encoding="utf-8")
    return dom, prob


def _pyperplan(domain_text: str, problem_text: str, seconds: float) -> tuple[str, ...] | None:
    """pyperplan's shortest plan; None when there is none; _TimeUp past `seconds`."""
    from pyperplan.planner import HEURISTICS, SEARCHES, search_plan

    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix="veriloop-plan-") as tmp:
        dom, prob = _write_task(tmp, domain_text, problem_text)
        try:
            solution = search_plan(str(dom), str(prob), SEARCHES["astar"], _timed(HEURISTICS["lmcut"], deadline))
        except _TimeUp:
            raise
        except (Exception, SystemExit) as exc:  # pyperplan reports bad input in many ways
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise PlannerError(f"the reference planner (pyperplan) cannot handle this task: {reason}") from None
    return None if solution is None else tuple(op.name for op in solution)


def fast_downward_driver() -> Path | None:
    """Fast Downward's driver script from the up-fast-downward wheel, if installed. The
    package itself is not imported: its __init__ needs unified-planning, the driver not."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or not spec.submodule_search_locations:
        return None
    driver = Path(next(iter(spec.submodule_search_locations))) / "downward" / "fast-downward.py"
    return driver if driver.is_file() else None


# The driver's exit codes (driver/returncodes.py) that mean "no plan exists".
_FD_UNSOLVABLE = {10, 11}
_FD_OUT_OF_TIME = {21, 23, 24}


def _fast_downward(driver: Path, domain_text: str, problem_text: str, seconds: float) -> tuple[str, ...] | None:
    """Fast Downward's A* + LM-cut plan; None when there is none; _TimeUp past `seconds`."""
    with tempfile.TemporaryDirectory(prefix="veriloop-fd-") as tmp:
        dom, prob = _write_task(tmp, domain_text, problem_text)
        plan_file = Path(tmp) / "plan"
        command = [sys.executable, str(driver), "--plan-file", str(plan_file), str(dom), str(prob),
                   "--search", "astar(lmcut())"]
        # Its own session, so a time-out ends the search binary the driver started too.
        proc = subprocess.Popen(command, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=max(seconds, 0.0))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise _TimeUp from None
        if proc.returncode in _FD_UNSOLVABLE:
            return None
        if proc.returncode in _FD_OUT_OF_TIME:
            raise _TimeUp
        if proc.returncode != 0 or not plan_file.is_file():
            lines = [line for line in output.splitlines() if line.strip()] or [f"exit status {proc.returncode}"]
            raise PlannerError(f"the reference planner (Fast Downward) cannot handle this task: {lines[-1][:200]}")
        steps = plan_file.read_text(encoding="utf-8").splitlines()
    return tuple(s.strip() for s in steps if s.strip() and not s.startswith(";"))


# Solved problems by (domain text, problem text): a plan, or None for "has no plan".
_SOLVED: dict[tuple[str, str], tuple[str, ...] | None] = {}
# The longest time limit each unsolved problem has already run out of.
_GAVE_UP: dict[tuple[str, str], float] = {}
# One search at a time: a problem is never solved twice, and searches share the cores
# with the model anyway.
_SEARCH_LOCK = threading.Lock()


def _search(task: Task, time_limit: float) -> tuple[str, ...] | None:
    key = (task.domain.text, task.problem.text)
    with _SEARCH_LOCK:
        if key in _SOLVED:
            return _SOLVED[key]
        if _GAVE_UP.get(key, -1.0) >= time_limit:
            raise _too_large(task, time_limit)
        start = time.monotonic()
        driver = fast_downward_driver()
        share = min(time_limit, PYPERPLAN_SHARE) if driver is not None else time_limit
        try:
            try:
                names = _pyperplan(key[0], key[1], share)
            except _TimeUp:
                if driver is None:
                    raise
                names = _fast_downward(driver, key[0], key[1], time_limit - (time.monotonic() - start))
        except _TimeUp:
            _GAVE_UP[key] = max(time_limit, _GAVE_UP.get(key, -1.0))
            raise _too_large(task, time_limit) from None
        if len(_SOLVED) >= _MEMO_SIZE:
            _SOLVED.pop(next(iter(_SOLVED)))
        _SOLVED[key] = names
        return names


def _too_large(task: Task, time_limit: float) -> PlanTooLargeError:
    with_fd = fast_downward_driver() is not None
    planners = "pyperplan and Fast Downward" if with_fd else "pyperplan"
    hint = "" if with_fd else "; pip install up-fast-downward solves larger problems"
    return PlanTooLargeError(
        f"problem {task.problem.name} is too large to solve optimally within {time_limit:g} s ({planners}, "
        f"A* + LM-cut); checking plans does not need it, only reference plans and optimal lengths do{hint}"
    )


def optimal_plan(task: Task, time_limit: float = DEFAULT_TIME_LIMIT) -> list[GroundAction] | None:
    """A shortest plan for `task`, or None when it has no solution; solved once per
    process. PlanTooLargeError when no plan is found within `time_limit` seconds;
    PlannerError when the planner cannot read the task or its plan fails our own check
    (e.g. pyperplan and a domain with negative preconditions)."""
    names = _search(task, time_limit)
    if names is None:
        return None
    plan: list[GroundAction] = []
    for name in names:
        action = parse_pddl_step(name)
        if action is None or task.check_arguments(action) is not None:
            raise PlannerError(f"the reference planner returned the unreadable step {name!r}")
        plan.append(action)
    sim = task.simulate(list(plan))
    if sim.failures or sim.unmet_goals:
        raise PlannerError("the reference planner returned a plan that our simulator rejects")
    return plan


# ---------------------------------------------------------------- generation


@dataclass(frozen=True)
class GeneratedProblem:
    name: str
    blocks: int
    problem_pddl: str
    plan: tuple[str, ...]  # an optimal plan, PDDL syntax
    optimal_length: int


def _towers(blocks: list[str], rng: random.Random) -> list[list[str]]:
    """Blocks dropped one by one, each on the table or on top of a random tower."""
    order = list(blocks)
    rng.shuffle(order)
    towers: list[list[str]] = []
    for block in order:
        if towers and rng.random() < 0.5:
            rng.choice(towers).append(block)
        else:
            towers.append([block])
    return towers


def _tower_facts(towers: list[list[str]]) -> set[Atom]:
    facts: set[Atom] = {("handempty",)}
    for tower in towers:
        facts.add(("ontable", tower[0]))
        facts.update(("on", upper, lower) for lower, upper in zip(tower, tower[1:]))
        facts.add(("clear", tower[-1]))
    return facts


def _block_names(n: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(n)]


def _sizes(blocks: int | tuple[int, int]) -> tuple[int, int]:
    lo, hi = (blocks, blocks) if isinstance(blocks, int) else (int(blocks[0]), int(blocks[1]))
    if not 2 <= lo <= hi <= MAX_BLOCKS:
        raise VeriloopError(f"blocks must be between 2 and {MAX_BLOCKS} (a number or a low, high pair); got {blocks!r}")
    return lo, hi


def random_problems(count: int, blocks: int | tuple[int, int], seed: int) -> list[tuple[int, set[Atom], set[Atom]]]:
    """`count` distinct (blocks, initial facts, goal facts) in tower vocabulary.

    The goal is the `on` facts of a second random arrangement, as in PlanBench; problems
    whose goal already holds are skipped. Problem i depends only on the seed and i, so a
    longer list extends a shorter one.
    """
    if count < 0:
        raise VeriloopError(f"count must not be negative (got {count})")
    lo, hi = _sizes(blocks)
    rng = random.Random(seed)
    seen: set[tuple[int, frozenset[Atom], frozenset[Atom]]] = set()
    out: list[tuple[int, set[Atom], set[Atom]]] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > 1000 * (count + 10):
            raise VeriloopError(f"cannot find {count} different problems with {lo}-{hi} blocks; ask for fewer")
        n = rng.randint(lo, hi)
        names = _block_names(n)
        init = _tower_facts(_towers(names, rng))
        goal = {f for f in _tower_facts(_towers(names, rng)) if f[0] == "on"}
        key = (n, frozenset(init), frozenset(goal))
        if not goal or goal <= init or key in seen:
            continue
        seen.add(key)
        out.append((n, init, goal))
    return out


def _fact_order(atom: Atom) -> tuple[int, Atom]:
    return (TOWER_FACTS.index(atom[0]) if atom[0] in TOWER_FACTS else len(TOWER_FACTS), atom)


def problem_pddl(
    name: str, domain_name: str, blocks: int, init: set[Atom], goal: set[Atom], mapping: dict[str, str]
) -> str:
    def rename(atom: Atom) -> str:
        return atom_pddl((mapping.get(atom[0], atom[0]), *atom[1:]))

    init_lines = "\n".join("    " + rename(a) for a in sorted(init, key=_fact_order))
    goal_lines = "\n".join("      " + rename(a) for a in sorted(goal, key=_fact_order))
    return (
        f"(define (problem {name})\n  (:domain {domain_name})\n"
        f"  (:objects {' '.join(_block_names(blocks))})\n"
        f"  (:init\n{init_lines})\n"
        f"  (:goal\n    (and\n{goal_lines})))\n"
    )


def generate_problems(
    count: int,
    blocks: int | tuple[int, int] = DEFAULT_BLOCKS,
    seed: int = 0,
    domain_text: str | None = None,
    mapping: dict[str, str] | None = None,
    prefix: str = "blocksworld",
) -> list[GeneratedProblem]:
    """Random tower problems, each with an optimal plan from the planner.

    `domain_text` is a domain with the four Blocksworld operators (ours by default) and
    `mapping` renames the generator's facts (on, ontable, clear, handempty) into its
    vocabulary, so an obfuscated copy of Blocksworld gets the same problems.
    """
    domain_text = OWN_BLOCKSWORLD.read_text(encoding="utf-8") if domain_text is None else domain_text
    mapping = dict(mapping or {})
    domain_source = "<generator domain>"
    from .pddl_model import load_domain

    domain_name = load_domain(domain_text, domain_source).name
    out: list[GeneratedProblem] = []
    for i, (n, init, goal) in enumerate(random_problems(count, blocks, seed)):
        name = f"{prefix}-g{i + 1}"
        text = problem_pddl(name, domain_name, n, init, goal, mapping)
        task = load_task(domain_text, text, domain_source, name)
        plan = optimal_plan(task)
        if plan is None:
            raise PlannerError(f"generated problem {name} has no plan; the domain does not behave like Blocksworld")
        out.append(GeneratedProblem(name, n, text, tuple(a.pddl() for a in plan), len(plan)))
    return out
