"""STRIPS planning tasks: PDDL parsing (with the `pddl` library), grounding and simulation.
Simulation runs on bits (`compiled.py`, which this module imports and which names this
module's types only for type checking, so the two form no import cycle).

Only what the sound checker needs is kept: conjunctions of facts and negated facts as
preconditions, goals and effects, optionally typed. Anything richer (disjunctions,
quantifiers, conditional or numeric effects, equality) is refused with one line naming
the file, so a domain is never checked under rules other than its own.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from ...errors import DataFileError
from .compiled import CompiledTask, Simulation

Atom = tuple[str, ...]  # ("on", "a", "b"); ("handempty",) for a fact without arguments
Literal = tuple[Atom, bool]  # a fact and whether it must hold (False: must not hold)

ROOT_TYPE = "object"


class GroundAction(NamedTuple):
    """An action schema applied to objects: ("stack", ("a", "b"))."""

    name: str
    args: tuple[str, ...]

    def pddl(self) -> str:
        return "(" + " ".join((self.name, *self.args)) + ")"


def atom_pddl(atom: Atom) -> str:
    return "(" + " ".join(atom) + ")"


@dataclass(frozen=True)
class Condition:
    """A fact of a schema: its terms are parameters ("?ob") or domain constants."""

    predicate: str
    terms: tuple[str, ...]
    positive: bool = True


@dataclass(frozen=True)
class ActionSchema:
    name: str
    parameters: tuple[str, ...]
    parameter_types: tuple[frozenset[str], ...]
    preconditions: tuple[Condition, ...]
    add: tuple[Condition, ...]
    delete: tuple[Condition, ...]

    @property
    def arity(self) -> int:
        return len(self.parameters)


@dataclass(frozen=True, eq=False)
class DomainModel:
    name: str
    predicates: dict[str, int]  # name -> arity, in the order the file declares them
    actions: dict[str, ActionSchema]  # in the order the file defines them
    constants: dict[str, frozenset[str]]
    types: dict[str, str | None]  # type -> parent
    text: str
    source: str


@dataclass(frozen=True, eq=False)
class ProblemModel:
    name: str
    domain_name: str
    objects: dict[str, frozenset[str]]  # sorted by name
    init: frozenset[Atom]
    goal: tuple[Literal, ...]
    text: str
    source: str


@dataclass(eq=False)
class Task:
    """A problem together with its domain: what simulation and grounding work on."""

    domain: DomainModel
    problem: ProblemModel
    _effects: dict[GroundAction, tuple[tuple[Literal, ...], frozenset[Atom], frozenset[Atom]]] = field(
        default_factory=dict, repr=False
    )
    _compiled: CompiledTask | None = field(default=None, repr=False)
    _ground: tuple[GroundAction, ...] | None = field(default=None, repr=False)

    @property
    def objects(self) -> list[str]:
        """Every object an action may name: the problem's objects, then domain constants."""
        names = list(self.problem.objects)
        return names + [c for c in self.domain.constants if c not in self.problem.objects]

    def object_types(self, name: str) -> frozenset[str] | None:
        if name in self.problem.objects:
            return self.problem.objects[name]
        return self.domain.constants.get(name)

    def fits(self, name: str, wanted: frozenset[str]) -> bool:
        """Whether an object may fill a parameter typed `wanted` (untyped: anything)."""
        if not wanted or ROOT_TYPE in wanted:
            return True
        own = self.object_types(name) or frozenset({ROOT_TYPE})
        for start in own:
            seen: set[str] = set()
            current: str | None = start
            while current is not None and current not in seen:
                if current in wanted:
                    return True
                seen.add(current)
                current = self.domain.types.get(current)
        return False

    def check_arguments(self, action: GroundAction) -> str | None:
        """Why `action` cannot even be formed here (unknown name, arity, object, type), or None."""
        schema = self.domain.actions.get(action.name)
        if schema is None:
            return f"there is no action called {action.name}"
        if len(action.args) != schema.arity:
            return f"{action.name} takes {schema.arity} object(s), not {len(action.args)}"
        for arg, wanted in zip(action.args, schema.parameter_types):
            if self.object_types(arg) is None:
                return f"there is no object called {arg}"
            if not self.fits(arg, wanted):
                return f"{arg} is not of type {' or '.join(sorted(wanted))}"
        return None

    def instantiate(self, action: GroundAction) -> tuple[tuple[Literal, ...], frozenset[Atom], frozenset[Atom]]:
        """Preconditions, add list and delete list of a well-formed ground action."""
        cached = self._effects.get(action)
        if cached is not None:
            return cached
        schema = self.domain.actions[action.name]
        binding = dict(zip(schema.parameters, action.args))

        def bind(cond: Condition) -> Atom:
            return (cond.predicate, *(binding.get(t, t) for t in cond.terms))

        result = (
            tuple((bind(c), c.positive) for c in schema.preconditions),
            frozenset(bind(c) for c in schema.add),
            frozenset(bind(c) for c in schema.delete),
        )
        self._effects[action] = result
        return result

    def unmet(self, state: frozenset[Atom], action: GroundAction) -> list[Literal]:
        pre, _, _ = self.instantiate(action)
        return [(atom, positive) for atom, positive in pre if (atom in state) != positive]

    def apply(self, state: frozenset[Atom], action: GroundAction) -> frozenset[Atom]:
        # PDDL semantics: deletions first, so a fact both deleted and added ends up true.
        _, add, delete = self.instantiate(action)
        return (state - delete) | add

    def unmet_goals(self, state: frozenset[Atom]) -> list[Literal]:
        return [(atom, positive) for atom, positive in self.problem.goal if (atom in state) != positive]

    def one_edit_plans(self, plan: list[GroundAction], rng: Any) -> list[list[GroundAction]]:
        """Plans one edit away from `plan` (of at least two steps), for testing checkers
        and timing them: a step dropped, two steps swapped, and one argument of one step
        replaced by another of this task's objects (when some step has arguments).
        `rng` is a `random.Random`; mostly, though not always, the results are invalid."""
        dropped = list(plan)
        del dropped[rng.randrange(len(plan))]
        swapped = list(plan)
        i, j = rng.sample(range(len(plan)), 2)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        out = [dropped, swapped]
        with_args = [k for k, action in enumerate(plan) if action.args]
        if with_args:
            k = rng.choice(with_args)
            arg = rng.randrange(len(plan[k].args))
            other = rng.choice([o for o in self.objects if o != plan[k].args[arg]])
            changed = list(plan)
            changed[k] = GroundAction(plan[k].name, plan[k].args[:arg] + (other,) + plan[k].args[arg + 1 :])
            out.append(changed)
        return out

    def ground_actions(self) -> list[GroundAction]:
        """Every well-typed ground action, schemas in file order, arguments in object order:
        a new list each call, built on the first (domain and problem never change)."""
        if self._ground is None:
            objects = self.objects
            out: list[GroundAction] = []
            for schema in self.domain.actions.values():
                # One check per object and distinct parameter type, not per parameter.
                fitting = {t: [o for o in objects if self.fits(o, t)] for t in set(schema.parameter_types)}
                combos: list[tuple[str, ...]] = [()]
                for t in schema.parameter_types:
                    combos = [c + (o,) for c in combos for o in fitting[t]]
                out.extend(GroundAction(schema.name, c) for c in combos)
            self._ground = tuple(out)
        return list(self._ground)

    def compiled(self) -> CompiledTask:
        """This task compiled for fast plan checks (`compiled.py`), built on first use."""
        if self._compiled is None:
            self._compiled = CompiledTask(self)
        return self._compiled

    def simulate(self, actions: list[GroundAction | None]) -> Simulation:
        """Run a plan from the initial state. A step that is None (unreadable) or cannot be
        carried out is skipped and recorded; the first failure is where VAL would stop.
        The same as stepping with `unmet` and `apply`, on bits (`compiled.py`)."""
        return self.compiled().simulate(actions)


# --------------------------------------------------------------------------- parsing

_PARSER_LOCK = threading.Lock()
_PARSERS: dict[str, Any] = {}


def _lark_cache(kind: str) -> str | bool:
    try:
        from ...paths import home

        return str(home() / f"pddl-{kind}.lark")
    except OSError:  # no writable home: build the tables every time
        return False


def _parser(kind: str) -> Any:
    """A parse function for a PDDL domain or problem, built once per process; the lock in
    `_parse` also covers the transformer, which is not safe to share between threads.

    Building the LALR tables from the pddl library's grammar takes about 0.2 s each, most
    of a one-plan `veriloop verify`, so they are built from its grammar and transformers
    here with Lark's cache file, which Lark rebuilds whenever grammar, options or version
    change. The result is the pddl library's own Domain or Problem object."""
    if kind not in _PARSERS:
        from lark import Lark
        from pddl.parser import GRAMMAR_FILE, PARSERS_DIRECTORY

        if kind == "domain":
            from pddl.parser.domain import DomainTransformer as transformer
        else:
            from pddl.parser.problem import ProblemTransformer as transformer  # type: ignore[assignment]
        lark = Lark(
            GRAMMAR_FILE.read_text(),
            parser="lalr",
            import_paths=[PARSERS_DIRECTORY],
            start=kind,
            transformer=transformer(),
            cache=_lark_cache(kind),
        )
        _PARSERS[kind] = lark.parse
    return _PARSERS[kind]


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0].strip()


def _lark_reason(exc: Exception) -> tuple[int | None, str]:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

    if isinstance(exc, VisitError):
        return None, _first_line(str(exc.orig_exc)) or type(exc.orig_exc).__name__
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            return exc.line if exc.line and exc.line > 0 else None, "the text ends too early (unbalanced parentheses?)"
        return exc.line, f"unexpected `{token}` at column {exc.column}"
    if isinstance(exc, UnexpectedCharacters):
        return exc.line, f"unexpected character {exc.char!r} at column {exc.column}"
    if isinstance(exc, UnexpectedEOF):
        return None, "the text ends too early (unbalanced parentheses?)"
    return getattr(exc, "line", None), _first_line(str(exc)) or type(exc).__name__


def _parse(kind: str, text: str, source: str) -> Any:
    # The pddl library sets sys.tracebacklimit to 0 while parsing and, when parsing
    # fails, leaves it there: every later traceback in the process would be hidden.
    with _PARSER_LOCK:
        parser = _parser(kind)
        had_limit = hasattr(sys, "tracebacklimit")
        saved = getattr(sys, "tracebacklimit", None)
        try:
            return parser(text)
        except RecursionError:
            raise DataFileError(f"{source}: not a readable PDDL {kind} (nested too deeply)") from None
        except Exception as exc:  # whatever the third-party parser raises, the cause is the input
            line, reason = _lark_reason(exc)
            where = f"{source}, line {line}" if line else source
            raise DataFileError(f"{where}: not a readable PDDL {kind} ({reason})") from None
        finally:
            if had_limit:
                sys.tracebacklimit = saved  # type: ignore[assignment]
            elif hasattr(sys, "tracebacklimit"):
                del sys.tracebacklimit


def _line_of(text: str, pattern: str) -> int | None:
    match = re.search(pattern, text, re.IGNORECASE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _at(source: str, text: str, pattern: str | None) -> str:
    line = _line_of(text, pattern) if pattern else None
    return f"{source}, line {line}" if line else source


def _name(x: Any) -> str:
    return str(x.name).lower()


def _flatten(formula: Any) -> list[Any]:
    from pddl.logic.base import And

    if formula is None:
        return []
    if isinstance(formula, And):
        out: list[Any] = []
        for op in formula.operands:
            out.extend(_flatten(op))
        return out
    return [formula]


def _literal(formula: Any) -> tuple[Any, bool] | None:
    """(predicate, positive) for a fact or a negated fact, else None."""
    from pddl.logic.base import Not
    from pddl.logic.predicates import Predicate

    if isinstance(formula, Predicate):
        return formula, True
    if isinstance(formula, Not) and isinstance(formula.argument, Predicate):
        return formula.argument, False
    return None


def _snippet(formula: Any) -> str:
    text = " ".join(str(formula).split())
    return text if len(text) <= 60 else text[:57] + "..."


def parse_domain(text: str, source: str) -> DomainModel:
    """A STRIPS domain from PDDL text; DataFileError (one line naming `source`) otherwise."""
    from pddl.logic.terms import Variable

    raw = _parse("domain", text, source)
    predicates_unordered = {_name(p): p.arity for p in raw.predicates}
    # The library hands back sets; the file's order is kept for rendering states.
    predicates = dict(
        sorted(predicates_unordered.items(), key=lambda kv: _line_pos(text, r"\(\s*" + re.escape(kv[0]) + r"[\s)]"))
    )
    constants = {_name(c): frozenset(str(t).lower() for t in c.type_tags) for c in raw.constants}
    types = {str(k).lower(): (str(v).lower() if v else None) for k, v in (raw.types or {}).items()}
    actions: dict[str, ActionSchema] = {}
    for act in sorted(raw.actions, key=lambda a: _line_pos(text, r":action\s+" + re.escape(_name(a)) + r"\b")):
        name = _name(act)
        where = _at(source, text, r":action\s+" + re.escape(name) + r"\b")
        params = tuple("?" + _name(v) for v in act.parameters)
        if len(set(params)) != len(params):
            raise DataFileError(f"{where}: action {name} names a parameter twice")
        ptypes = tuple(frozenset(str(t).lower() for t in v.type_tags) for v in act.parameters)

        def condition(pred: Any, positive: bool, role: str) -> Condition:
            pname = _name(pred)
            if pname not in predicates:
                raise DataFileError(f"{where}: action {name} uses the undeclared predicate {pname} in its {role}")
            if pred.arity != predicates[pname]:
                raise DataFileError(
                    f"{where}: action {name} gives {pname} {pred.arity} argument(s) in its {role}, "
                    f"but it is declared with {predicates[pname]}"
                )
            terms: list[str] = []
            for term in pred.terms:
                if isinstance(term, Variable):
                    var = "?" + _name(term)
                    if var not in params:
                        raise DataFileError(f"{where}: action {name} uses {var}, which is not one of its parameters")
                    terms.append(var)
                else:
                    const = _name(term)
                    if const not in constants:
                        raise DataFileError(f"{where}: action {name} uses {const}, which is not a declared constant")
                    terms.append(const)
            return Condition(pname, tuple(terms), positive)

        pre: list[Condition] = []
        for part in _flatten(act.precondition):
            lit = _literal(part)
            if lit is None:
                raise DataFileError(
                    f"{where}: action {name} has the precondition {_snippet(part)}; only facts and negated "
                    "facts joined by `and` are supported (STRIPS)"
                )
            pre.append(condition(lit[0], lit[1], "precondition"))
        add: list[Condition] = []
        delete: list[Condition] = []
        for part in _flatten(act.effect):
            lit = _literal(part)
            if lit is None:
                raise DataFileError(
                    f"{where}: action {name} has the effect {_snippet(part)}; only facts made true or false "
                    "(`(p ?x)`, `(not (p ?x))`) joined by `and` are supported (STRIPS)"
                )
            (add if lit[1] else delete).append(condition(lit[0], True, "effect"))
        actions[name] = ActionSchema(name, params, ptypes, tuple(pre), tuple(add), tuple(delete))
    if not actions:
        raise DataFileError(f"{source}: the domain defines no actions")
    return DomainModel(
        name=_name(raw),
        predicates=predicates,
        actions=actions,
        constants=constants,
        types=types,
        text=text,
        source=source,
    )


def _line_pos(text: str, pattern: str) -> int:
    match = re.search(pattern, text, re.IGNORECASE)
    return match.start() if match else len(text)


@lru_cache(maxsize=1024)
def _problem_tree(text: str) -> Any:
    """The pddl library's tree of a problem's text, which depends on the text alone: a
    problem read against two domains (Blocksworld's and a renamed copy), or by several
    domain objects, is parsed once. Only read, never changed; a text that does not parse
    is not kept (its error must name each caller's source)."""
    return _parse("problem", text, "")


def parse_problem(text: str, source: str, domain: DomainModel) -> ProblemModel:
    """A problem of `domain` from PDDL text; DataFileError (one line naming `source`) otherwise."""
    try:
        raw = _problem_tree(text)
    except DataFileError:
        raw = _parse("problem", text, source)  # raises the same error, naming this source
    domain_name = str(raw.domain_name).lower()
    if domain_name != domain.name:
        raise DataFileError(
            f"{_at(source, text, r':domain')}: the problem is for domain {domain_name}, "
            f"but {domain.source} defines {domain.name}"
        )
    objects = {_name(o): frozenset(str(t).lower() for t in o.type_tags) for o in raw.objects}
    objects = dict(sorted(objects.items()))
    for obj, tags in objects.items():
        unknown = [t for t in tags if t != ROOT_TYPE and t not in domain.types]
        if unknown:
            raise DataFileError(f"{_at(source, text, ':objects')}: object {obj} has the undeclared type {unknown[0]}")
    known = set(objects) | set(domain.constants)

    def atom(pred: Any, role: str, pattern: str) -> Atom:
        pname = _name(pred)
        where = _at(source, text, pattern)
        if pname not in domain.predicates:
            raise DataFileError(f"{where}: the {role} uses {pname}, which the domain does not declare")
        if pred.arity != domain.predicates[pname]:
            raise DataFileError(
                f"{where}: the {role} gives {pname} {pred.arity} argument(s), "
                f"but the domain declares {domain.predicates[pname]}"
            )
        args = tuple(_name(t) for t in pred.terms)
        for arg in args:
            if arg not in known:
                raise DataFileError(f"{where}: the {role} mentions {arg}, which is not a declared object")
        return (pname, *args)

    from pddl.logic.predicates import Predicate

    strange = [p for p in raw.init if not isinstance(p, Predicate)]
    if strange:
        raise DataFileError(
            f"{_at(source, text, ':init')}: the initial state has {_snippet(strange[0])}; "
            "only plain facts are supported"
        )
    init = frozenset(atom(p, "initial state", r":init") for p in raw.init)
    goal: list[Literal] = []
    for part in _flatten(raw.goal):
        lit = _literal(part)
        if lit is None:
            raise DataFileError(
                f"{_at(source, text, ':goal')}: the goal has {_snippet(part)}; only facts and negated facts "
                "joined by `and` are supported"
            )
        goal.append((atom(lit[0], "goal", r":goal"), lit[1]))
    if not goal:
        raise DataFileError(f"{_at(source, text, ':goal')}: the goal is empty")
    return ProblemModel(
        name=_name(raw),
        domain_name=domain_name,
        objects=objects,
        init=init,
        goal=tuple(goal),
        text=text,
        source=source,
    )


@lru_cache(maxsize=64)
def load_domain(text: str, source: str) -> DomainModel:
    return parse_domain(text, source)


@lru_cache(maxsize=2048)
def load_task(domain_text: str, problem_text: str, domain_source: str, problem_source: str) -> Task:
    domain = load_domain(domain_text, domain_source)
    return Task(domain, parse_problem(problem_text, problem_source, domain))


def read_text(path: Any, what: str) -> str:
    """A PDDL file's text, or DataFileError naming it."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise DataFileError(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = _first_line(str(exc)) or type(exc).__name__
        raise DataFileError(f"{path}: cannot read the {what} file ({reason})") from None


# ------------------------------------------------------------------ PDDL plan lines

_PDDL_STEP_RE = re.compile(r"^\(\s*([^\s()]+)((?:\s+[^\s()]+)*)\s*\)$")


def parse_pddl_step(line: str) -> GroundAction | None:
    """`(stack a b)` -> GroundAction("stack", ("a", "b")); None when the line has another shape."""
    match = _PDDL_STEP_RE.match(line.strip())
    if not match:
        return None
    return GroundAction(match.group(1).lower(), tuple(a.lower() for a in match.group(2).split()))
