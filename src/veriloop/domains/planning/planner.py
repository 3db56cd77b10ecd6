"""Optimal plans from pyperplan, and random Blocksworld problems in the style of PlanBench.

The planner only supplies reference plans and optimal lengths: A* with the admissible
LM-cut heuristic returns shortest plans, and every plan it returns is re-checked by our
own simulator before it is trusted.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ...errors import VeriloopError
from .pddl_model import Atom, GroundAction, Task, atom_pddl, load_task, parse_pddl_step

HERE = Path(__file__).resolve().parent
OWN_BLOCKSWORLD = HERE / "domains" / "blocksworld.pddl"

# The generator's own vocabulary; a template's [generator] table maps it onto a domain's.
TOWER_FACTS = ("on", "ontable", "clear", "handempty")
MAX_BLOCKS = 26
DEFAULT_BLOCKS = (3, 5)


class PlannerError(VeriloopError):
    """The reference planner could not read a task or returned an unusable plan."""


@lru_cache(maxsize=4096)
def _search(domain_text: str, problem_text: str) -> tuple[str, ...] | None:
    from pyperplan.planner import HEURISTICS, SEARCHES, search_plan

    with tempfile.TemporaryDirectory(prefix="veriloop-plan-") as tmp:
        dom, prob = Path(tmp) / "domain.pddl", Path(tmp) / "problem.pddl"
        dom.write_text(domain_text, encoding="utf-8")
        prob.write_text(problem_text, encoding="utf-8")
        try:
            solution = search_plan(str(dom), str(prob), SEARCHES["astar"], HEURISTICS["lmcut"])
        except (Exception, SystemExit) as exc:  # pyperplan reports bad input in many ways
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise PlannerError(f"the reference planner (pyperplan) cannot handle this task: {reason}") from None
    return None if solution is None else tuple(op.name for op in solution)


def optimal_plan(task: Task) -> list[GroundAction] | None:
    """A shortest plan for `task`, or None when it has no solution. PlannerError when
    pyperplan cannot read the task or its plan fails our own check (e.g. a domain with
    negative preconditions, which pyperplan does not support)."""
    names = _search(task.domain.text, task.problem.text)
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
