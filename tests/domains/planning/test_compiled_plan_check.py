"""The fast plan check (bare PDDL lines read directly, lines remembered per task, bit-level
simulation in compiled.py) against the full path it shortcuts: the same reads, the same
simulation, the same verdicts and the same feedback texts, line by line and plan by plan."""

from __future__ import annotations

import random

import pytest
from helpers import TEST_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veriloop.domains.base import DOMAIN_FEEDBACK_LEVELS, Instance
from veriloop.domains.planning import Blocksworld, MysteryBlocksworld, PlanningDomain
from veriloop.domains.planning.language import Language, clean_line, plain_pddl_line
from veriloop.domains.planning.pddl_model import GroundAction, Simulation, Task, parse_pddl_step

LOGISTICS = TEST_DATA / "logistics"
BW = Blocksworld()
MY = MysteryBlocksworld()
PDDL_ONLY = PlanningDomain()


def _logistics(number: int) -> tuple[Instance, list[GroundAction]]:
    problem = LOGISTICS / "instances" / f"instance-{number}.pddl"
    instance = PDDL_ONLY.parse_instance({"domain_file": str(LOGISTICS / "domain.pddl"), "problem": str(problem)})
    lines = (LOGISTICS / "plans" / f"instance-{number}.txt").read_text().splitlines()
    plan = [a for a in (parse_pddl_step(line) for line in lines) if a is not None]
    return instance, plan


def _blocksworld(domain: PlanningDomain, n: int) -> list[tuple[Instance, list[GroundAction]]]:
    out = []
    for instance in domain.load_instances(None, n=n):  # generated: each carries its optimal plan
        plan = domain.reference_plan(instance)
        assert plan
        out.append((instance, plan))
    return out


CASES: list[tuple[PlanningDomain, Instance, list[GroundAction]]] = [
    *((BW, i, p) for i, p in _blocksworld(BW, 4)),
    *((MY, i, p) for i, p in _blocksworld(MY, 2)),
    *((PDDL_ONLY, *_logistics(k)) for k in (1, 2)),
]


def _reference_simulation(task: Task, actions: list[GroundAction | None]) -> Simulation:
    """The set-based simulation the bit-level one replaced, step by step with unmet/apply."""
    state = task.problem.init
    failures: list = []
    executed: list[int] = []
    for i, action in enumerate(actions):
        if action is None:
            continue
        missing = task.unmet(state, action)
        if missing:
            failures.append((i, action, missing))
            continue
        executed.append(i)
        state = task.apply(state, action)
    final = state
    return Simulation(failures, executed, task.unmet_goals(state), lambda: final)


@pytest.fixture
def full_path(monkeypatch):
    """Switches the shortcuts off: every line read in full (nothing remembered), every
    action and fact put in words afresh, plans simulated on sets."""
    from veriloop.domains.planning import language

    def read_lines(lang: Language, lines: list[str]) -> list:
        return [r for r in (lang.read_line_in_full(line) for line in lines) if r is not None]

    def use() -> None:
        monkeypatch.setattr(language, "_read_lines", read_lines)
        monkeypatch.setattr(language, "_remember", lambda memory, key, value: None)
        monkeypatch.setattr(Language, "read_line", Language.read_line_in_full)
        monkeypatch.setattr(Task, "simulate", _reference_simulation)

    return use


def _variants(task: Task, plan: list[GroundAction], rng: random.Random) -> list[list[GroundAction]]:
    """The plan, a step dropped, two swapped, an argument changed, and random actions."""
    out = [plan]
    for _ in range(3):
        out += task.one_edit_plans(plan, rng)
    every = task.ground_actions()
    out.append([rng.choice(every) for _ in range(len(plan))])
    return out


def _texts(lang: Language, plan: list[GroundAction], rng: random.Random) -> list[str]:
    """The ways a model writes a plan, some with lines that cannot be read."""
    pddl = [a.pddl() for a in plan]
    words = [lang.action(a) for a in plan]
    broken = list(pddl)
    spot = rng.randrange(len(broken))
    broken[spot] = rng.choice(["(fly-to-moon a b)", f"({plan[spot].name} nobody)", f"({plan[spot].name})", "()"])
    return [
        "\n".join(pddl),
        "\n".join(pddl).upper() + "\n[PLAN END]",
        "\n".join(f"{k}. {line}" for k, line in enumerate(pddl, 1)),
        "Plan:\n" + "\n".join(f"  {line}  " for line in pddl) + "\n[PLAN END]\nThat is all.",
        "\n".join(words),
        "\n".join(f"- **{w}.**" for w in words) + "\n[PLAN END]",
        "\n".join(broken),
        "\n".join(f"{line} ; because" for line in pddl),
        "no plan here",
    ]


def _outcome(domain: PlanningDomain, instance: Instance, text: str) -> tuple:
    verdict = domain.verify(instance, text)
    feedback = tuple(domain.feedback(instance, verdict, level) for level in DOMAIN_FEEDBACK_LEVELS)
    steps = domain.parse_plan(instance, text)
    return verdict.model_dump(), feedback, steps, domain.canonical(instance, text)


def test_verdicts_and_feedback_are_those_of_the_full_path(full_path) -> None:
    rng = random.Random(5)
    jobs: list[tuple[PlanningDomain, Instance, str]] = []
    for domain, instance, plan in CASES:
        task = domain._task(instance)
        lang = domain._language(task)
        for variant in _variants(task, plan, rng):
            jobs += [(domain, instance, text) for text in _texts(lang, variant, rng)]
    first = [_outcome(*job) for job in jobs]
    again = [_outcome(*job) for job in jobs]  # now every line is remembered
    full_path()
    full = [_outcome(*job) for job in jobs]
    assert sum(1 for o in full if o[0]["ok"]) >= len(CASES)  # the correct plans, in several forms
    for job, a, b, c in zip(jobs, first, again, full):
        assert a == c, job[2]
        assert b == c, job[2]


def test_simulation_on_bits_is_the_set_semantics() -> None:
    rng = random.Random(11)
    for domain, instance, plan in CASES:
        task = domain._task(instance)
        every = task.ground_actions()
        for variant in _variants(task, plan, rng):
            well_formed = [a if task.check_arguments(a) is None else None for a in variant]
            noisy = [None if rng.random() < 0.1 else a for a in well_formed]
            for actions in (well_formed, noisy, [rng.choice(every) for _ in range(30)]):
                fast, slow = task.simulate(actions), _reference_simulation(task, actions)
                assert (fast.failures, fast.executed, fast.unmet_goals) == (
                    slow.failures,
                    slow.executed,
                    slow.unmet_goals,
                )
                assert fast.final_state == slow.final_state


_BW_TASK = BW._task(CASES[0][1])
_LOG_TASK = PDDL_ONLY._task(CASES[-1][1])
_WORDS = sorted({*_BW_TASK.objects, *_BW_TASK.domain.actions, *_LOG_TASK.objects, *_LOG_TASK.domain.actions})
_PIECES = st.sampled_from(
    [*_WORDS, *(w.upper() for w in _WORDS), "zz", "1", "12", "step", "plan:", "a)", "Move", "then"]
    + ["(", ")", "[", "]", "**", "__", "_", "`", "-", "#", ";", ".", ":", "!", ",", "//", "—", "(1)"]
)
_SPACE = st.sampled_from(["", " ", "  ", "\t", "\u00a0", "\u2003"])


@st.composite
def _lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_SPACE, _PIECES), max_size=8))
    body = "".join(space + piece for space, piece in parts)
    if draw(st.booleans()):  # the shape the shortcut is for, with whatever inside
        body = draw(_SPACE) + "(" + body + ")" + draw(_SPACE)
    return body


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=_lines())
def test_a_line_reads_the_same_by_every_path(line: str) -> None:
    plain = plain_pddl_line(line)
    if plain is not None:
        # What the shortcut relies on: cleaning leaves the line as it is, and it is this action.
        assert clean_line(line) == plain[0]
        assert parse_pddl_step(plain[0]) == plain[1]
    for domain, instance in ((BW, CASES[0][1]), (MY, CASES[4][1]), (PDDL_ONLY, CASES[-1][1])):
        lang = domain._language(domain._task(instance))
        full = lang.read_line_in_full(line)
        assert lang.read_line(line) == full  # first sight, or remembered from an earlier example
        lang._lines.clear()
        assert lang.read_line(line) == full  # first sight
        assert lang.read_line(line) == full  # remembered


def test_remembered_lines_are_bounded(monkeypatch) -> None:
    from veriloop.domains.planning import language

    monkeypatch.setattr(language, "MAX_REMEMBERED", 5)
    domain, instance, plan = CASES[0]
    lang = domain._language(domain._task(instance))
    lang._lines.clear()
    for k in range(12):
        lang.read_line(f"{k}. {plan[0].pddl()}")
        assert len(lang._lines) <= 5
    lang.read_line("x" * (language.MAX_LINE_CHARS + 1))  # a runaway line is not kept
    assert "x" * (language.MAX_LINE_CHARS + 1) not in lang._lines


def test_problems_of_a_domain_share_compiled_actions_but_not_what_is_well_formed() -> None:
    """An action compiled for one problem is reused by the next, yet whether it may be
    written at all is still asked of each problem: b exists in the first only."""
    first = BW.parse_instance({"problem": _problem("one", "a b", "(on a b)")})
    second = BW.parse_instance({"problem": _problem("two", "a c", "(on a c)")})
    assert BW.verify(first, "(pick-up a)\n(stack a b)").ok
    verdict = BW.verify(second, "(pick-up a)\n(stack a b)")
    assert [e.kind for e in verdict.errors] == ["unknown_object", "unmet_goal"]
    assert "there is no object called b" in verdict.errors[0].message
    assert BW.verify(second, "(pick-up a)\n(stack a c)").ok
    one, two = BW._task(first).compiled(), BW._task(second).compiled()
    assert one.domain is two.domain and GroundAction("pick-up", ("a",)) in two.domain.actions


def _problem(name: str, objects: str, goal: str) -> str:
    clear = " ".join(f"(ontable {o}) (clear {o})" for o in objects.split())
    return (
        f"(define (problem {name}) (:domain blocksworld-4ops) (:objects {objects})\n"
        f" (:init (handempty) {clear}) (:goal (and {goal})))\n"
    )


def test_one_edit_plans_are_each_one_described_edit_away() -> None:
    domain = Blocksworld()
    instance = domain.load_instances(None, n=1)[0]
    task = domain._task(instance)
    plan = domain.reference_plan(instance)
    assert plan is not None and len(plan) >= 2
    dropped, swapped, changed = task.one_edit_plans(plan, random.Random(3))
    assert len(dropped) == len(plan) - 1
    assert any(dropped == plan[:k] + plan[k + 1 :] for k in range(len(plan)))
    assert sorted(swapped) == sorted(plan)
    assert sum(a != b for a, b in zip(swapped, plan)) == 2
    differing = [(a, b) for a, b in zip(changed, plan) if a != b]
    assert len(changed) == len(plan) and len(differing) == 1
    (new, old), = differing
    assert new.name == old.name and sum(x != y for x, y in zip(new.args, old.args)) == 1
    assert set(new.args) <= set(task.objects)


def test_one_edit_plans_change_no_argument_when_no_step_has_one() -> None:
    task = Blocksworld()._task(Blocksworld().load_instances(None, n=1)[0])
    plan = [GroundAction("noop", ()), GroundAction("wait", ())]
    dropped, swapped = task.one_edit_plans(plan, random.Random(0))
    assert len(dropped) == 1 and swapped == plan[::-1]
