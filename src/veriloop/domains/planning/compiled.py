"""A planning domain compiled for checking many plans quickly: facts as bits, actions
as bit masks.

Checking a plan is a loop of "do the preconditions hold? apply the effects", which on
sets of fact tuples costs a few microseconds a step. Here each fact gets one bit of a
Python int, a state is an int, and each ground action is four masks (facts that must
hold, facts that must not, facts added, facts deleted), so a step is a handful of
integer operations. Everything is built lazily, the first time a fact or an action is
seen, because grounding every action up front would cost more than the checks.

Facts and actions are names over the domain's schemas, the same in every problem of the
domain, so their bits and masks are shared by those problems (`CompiledDomain`): the
problems of one domain name their objects alike, and an action compiled for one is
ready for the next. What depends on the problem is kept per task (`CompiledTask`): the
initial state, the goal, and which actions are well formed there (`Task.check_arguments`,
asked once per action). Unmet preconditions and goals, which only a failing plan needs,
are listed from the schema's and the goal's own condition lists, in their order.

This module imports nothing of the planning package at run time (`pddl_model`'s types
are named for type checking only), so `pddl_model` builds on it without a cycle; what a
simulation found (`Simulation`) is defined here and re-exported there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    # The model's types only: pddl_model imports this module (Task.compiled, Task.simulate).
    from .pddl_model import ActionSchema, Atom, DomainModel, GroundAction, Literal, Task

# A schema's conditions as patterns to fill in from an action's arguments. `terms` picks,
# in one C-level call, every term of every condition from the arguments followed by the
# schema's constants; each pattern is a predicate, its slice of those terms and the mask
# the fact goes to. Filling one in is a slice and a tuple, where `Task.instantiate` builds
# a binding dict per action: first sight of an action is much of what a new plan costs.
MUST_HOLD, MUST_NOT_HOLD, ADD, DELETE = range(4)
_Pattern = tuple[str, int, int, int]  # predicate, start, end, mask


class _Schema(NamedTuple):
    constants: tuple[str, ...]
    terms: Callable[[tuple[str, ...]], tuple[str, ...]]
    patterns: tuple[_Pattern, ...]  # preconditions first, in the schema's order, then effects
    signs: tuple[bool, ...]  # of the preconditions, for listing unmet ones as literals


def _picker(positions: list[int]) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    if len(positions) >= 2:
        return itemgetter(*positions)  # type: ignore[return-value]
    return lambda values: tuple(values[k] for k in positions)  # itemgetter(k) gives no tuple


def _compile_schema(schema: ActionSchema) -> _Schema:
    conditions = (*schema.preconditions, *schema.add, *schema.delete)
    constants = tuple(sorted({t for c in conditions for t in c.terms} - set(schema.parameters)))
    slots = {name: k for k, name in enumerate((*schema.parameters, *constants))}
    kinds = [MUST_HOLD if c.positive else MUST_NOT_HOLD for c in schema.preconditions]
    kinds += [ADD] * len(schema.add) + [DELETE] * len(schema.delete)
    positions: list[int] = []
    patterns: list[_Pattern] = []
    for condition, kind in zip(conditions, kinds):
        start = len(positions)
        positions += [slots[t] for t in condition.terms]
        patterns.append((condition.predicate, start, len(positions), kind))
    signs = tuple(c.positive for c in schema.preconditions)
    return _Schema(constants, _picker(positions), tuple(patterns), signs)


class _Action(NamedTuple):
    must_hold: int
    must_not_hold: int
    add: int
    keep: int  # every bit but the deleted facts': applying is `state & keep | add`
    # (fact, sign, bit) per precondition: a failing step lists its unmet ones without
    # hashing a fact, which costs more than the rest of the check.
    preconditions: tuple[tuple[Atom, bool, int], ...]


class CompiledDomain:
    """Bits for the facts and masks for the actions of one domain, made on first sight."""

    def __init__(self, domain: DomainModel) -> None:
        self.bits: dict[Atom, int] = {}
        self.actions: dict[GroundAction, _Action] = {}
        self._schemas = {name: _compile_schema(schema) for name, schema in domain.actions.items()}
        # Bits are handed out on first sight; two threads handing out the same bit to
        # different facts would corrupt every later verdict, so that step is locked.
        self._lock = threading.Lock()

    def state_bits(self, atoms: Iterable[Atom]) -> int:
        with self._lock:
            bits = 0
            table = self.bits
            for atom in atoms:
                bit = table.get(atom)
                if bit is None:
                    bit = table[atom] = 1 << len(table)
                bits |= bit
            return bits

    def compile(self, action: GroundAction) -> _Action:
        """`action`'s masks; its name and number of arguments must fit a schema."""
        known = self.actions.get(action)
        if known is not None:
            return known
        schema = self._schemas[action.name]
        terms = schema.terms(action.args + schema.constants)
        masks = [0, 0, 0, 0]
        conditions: list[tuple[Atom, int]] = []
        with self._lock:
            table = self.bits
            for predicate, start, end, kind in schema.patterns:
                atom = (predicate, *terms[start:end])
                bit = table.get(atom)
                if bit is None:
                    bit = table[atom] = 1 << len(table)
                masks[kind] |= bit
                conditions.append((atom, bit))
        preconditions = tuple((atom, sign, bit) for (atom, bit), sign in zip(conditions, schema.signs))
        compiled = _Action(masks[0], masks[1], masks[2], ~masks[3], preconditions)
        self.actions[action] = compiled
        return compiled


@lru_cache(maxsize=64)  # as many as load_domain keeps; DomainModel hashes by identity
def compiled_domain(domain: DomainModel) -> CompiledDomain:
    return CompiledDomain(domain)


class CompiledTask:
    """Bit-level simulation of one task's plans, equal in every result to the set-based
    semantics of `Task.unmet`, `Task.apply` and `Task.unmet_goals`."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.domain = compiled_domain(task.domain)
        self._well_formed: set[GroundAction] = set()
        goal = task.problem.goal
        self.init = self.domain.state_bits(task.problem.init)
        self.goal_holds = self.domain.state_bits(atom for atom, positive in goal if positive)
        self.goal_fails = self.domain.state_bits(atom for atom, positive in goal if not positive)

    def is_action(self, action: GroundAction) -> bool:
        """Whether `action` is well formed here (`Task.check_arguments` says nothing against
        it). Only well-formed actions are remembered: there are finitely many of them,
        while a model can write any number of wrong ones."""
        if action in self._well_formed:
            return True
        if self.task.check_arguments(action) is not None:
            return False
        self.domain.compile(action)
        self._well_formed.add(action)
        return True

    def atoms(self, state: int) -> frozenset[Atom]:
        """The facts of a state given as bits."""
        return frozenset(atom for atom, bit in list(self.domain.bits.items()) if state & bit)

    def _unmet_goals(self, state: int) -> list[Literal]:
        bits = self.domain.bits
        return [(atom, positive) for atom, positive in self.task.problem.goal if bool(state & bits[atom]) != positive]

    def simulate(self, actions: list[GroundAction | None]) -> Simulation:
        """`Task.simulate`: steps that are None or cannot be carried out are skipped and
        recorded; the first failure is where VAL would stop."""
        state = self.init
        failures: list[tuple[int, GroundAction, list[Literal]]] = []
        executed: list[int] = []
        known = self.domain.actions
        for i, action in enumerate(actions):
            if action is None:
                continue
            compiled = known.get(action)
            if compiled is None:
                compiled = self.domain.compile(action)
            must_hold, must_not_hold, add, keep, preconditions = compiled
            if state & must_hold != must_hold or state & must_not_hold:
                unmet = [(atom, sign) for atom, sign, bit in preconditions if (state & bit != 0) != sign]
                failures.append((i, action, unmet))
                continue
            executed.append(i)
            # PDDL semantics: deletions first, so a fact both deleted and added ends up true.
            state = state & keep | add
        if state & self.goal_holds == self.goal_holds and not state & self.goal_fails:
            unmet_goals: list[Literal] = []
        else:
            unmet_goals = self._unmet_goals(state)
        final = state
        return Simulation(failures, executed, unmet_goals, lambda: self.atoms(final))


class Simulation:
    """What running a plan found. The final state is decoded from bits only when asked for."""

    __slots__ = ("failures", "executed", "unmet_goals", "_final_state", "_decode")

    def __init__(
        self,
        failures: list[tuple[int, GroundAction, list[Literal]]],  # (0-based step, action, unmet preconditions)
        executed: list[int],
        unmet_goals: list[Literal],
        decode_final_state: Callable[[], frozenset[Atom]],
    ) -> None:
        self.failures = failures
        self.executed = executed
        self.unmet_goals = unmet_goals
        self._final_state: frozenset[Atom] | None = None
        self._decode = decode_final_state

    @property
    def final_state(self) -> frozenset[Atom]:
        if self._final_state is None:
            self._final_state = self._decode()
        return self._final_state
