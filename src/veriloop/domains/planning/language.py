"""How a planning domain reads in words: rendering from a TOML template, and reading
plans back.

A template gives one phrase per predicate and per action with `{0}`, `{1}`, ... for the
objects, and a name per object. The same phrases are compiled into patterns for reading
a plan, so whatever we write we can also read. Without a template a domain is rendered
and read in PDDL syntax, so any STRIPS domain can be checked before it has one.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import DataFileError
from ..base import introduces_a_correction
from .pddl_model import Atom, GroundAction, Literal, Task, atom_pddl, parse_pddl_step

_PLACEHOLDER_RE = re.compile(r"\{(\d+)\}")
_BRACE_RE = re.compile(r"\{[^}]*\}")


@dataclass(frozen=True, eq=False)
class Template:
    path: Path
    name: str
    description: str
    system: str
    intro: str
    rules: str | None
    rule_objects: tuple[str, ...]
    object_names: dict[str, str]
    fallback: str
    predicates: dict[str, str]
    actions: dict[str, str]
    aliases: dict[str, tuple[str, ...]]
    generator: dict[str, str] | None
    domain_file: Path | None


def _text(table: dict[str, Any], key: str, path: Path, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise DataFileError(f"{path}: `{key}` must be a string" + ("" if default is not None else " and is required"))
    return value.strip()


def _phrases(table: Any, section: str, path: Path) -> dict[str, str]:
    if table is None:
        return {}
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise DataFileError(f"{path}: [{section}] must map names to phrases (strings)")
    return {str(k).lower(): v.strip() for k, v in table.items()}


def _check_phrase(phrase: str, arity: int, what: str, path: Path) -> None:
    """Each of {0}..{arity-1} exactly once and no other braces, so a phrase reads back."""
    stray = [b for b in _BRACE_RE.findall(phrase) if not _PLACEHOLDER_RE.fullmatch(b)]
    if stray:
        raise DataFileError(f"{path}: {what} has {stray[0]}; write objects as {{0}}, {{1}}, ...")
    used = [int(i) for i in _PLACEHOLDER_RE.findall(phrase)]
    if sorted(used) != list(range(arity)):
        wanted = ", ".join(f"{{{i}}}" for i in range(arity)) or "no placeholders"
        raise DataFileError(f"{path}: {what} must use {wanted} exactly once each (it takes {arity} object(s))")
    if arity > 1 and re.search(r"\}\s*\{", phrase):
        raise DataFileError(f"{path}: {what} puts two objects side by side; separate them with words")


def load_template(path: Path) -> Template:
    """A template file, or DataFileError with one line naming it."""
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise DataFileError(f"{path}: template file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the template ({exc.strerror or exc})") from None
    objects = raw.get("objects", {})
    if not isinstance(objects, dict):
        raise DataFileError(f"{path}: [objects] must be a table")
    names = _phrases(objects.get("names"), "objects.names", path)
    fallback = _text(objects, "fallback", path, "{name}")
    if "{name}" not in fallback:
        raise DataFileError(f"{path}: [objects] fallback must contain {{name}}")
    predicates = _phrases(raw.get("predicates"), "predicates", path)
    actions = _phrases(raw.get("actions"), "actions", path)
    if not predicates or not actions:
        raise DataFileError(f"{path}: a template needs [predicates] and [actions] tables")
    aliases: dict[str, tuple[str, ...]] = {}
    for key, value in (raw.get("aliases") or {}).items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataFileError(f"{path}: [aliases] {key} must be a list of phrases")
        aliases[str(key).lower()] = tuple(v.strip() for v in value)
    rule_objects = raw.get("rule_objects", [])
    if not isinstance(rule_objects, list) or not all(isinstance(v, str) for v in rule_objects):
        raise DataFileError(f"{path}: rule_objects must be a list of strings")
    generator = raw.get("generator")
    if generator is not None and not (
        isinstance(generator, dict) and all(isinstance(v, str) for v in generator.values())
    ):
        raise DataFileError(f"{path}: [generator] must map on, ontable, clear, handempty to predicate names")
    rules = raw.get("rules")
    if rules is not None and not isinstance(rules, str):
        raise DataFileError(f"{path}: rules must be a string")
    domain_file = raw.get("domain_file")
    if domain_file is not None and not isinstance(domain_file, str):
        raise DataFileError(f"{path}: domain_file must be a path (string)")
    return Template(
        path=path,
        name=_text(raw, "name", path),
        description=_text(raw, "description", path, ""),
        system=_text(raw, "system", path, ""),
        intro=_text(raw, "intro", path, ""),
        rules=rules.strip() if rules else None,
        rule_objects=tuple(rule_objects),
        object_names=names,
        fallback=fallback,
        predicates=predicates,
        actions=actions,
        aliases=aliases,
        generator={k.lower(): v.lower() for k, v in generator.items()} if generator else None,
        domain_file=(path.parent / domain_file).resolve() if domain_file else None,
    )


def check_template(template: Template, task: Task) -> None:
    """DataFileError unless the template describes every predicate and action of the task's
    domain with the right number of objects, and names each object distinctly."""
    domain = task.domain
    where = f"{template.path} (for {domain.source})"
    for pred, arity in domain.predicates.items():
        if pred not in template.predicates:
            raise DataFileError(f"{where}: no phrase for predicate {pred} under [predicates]")
        _check_phrase(template.predicates[pred], arity, f"[predicates] {pred}", template.path)
    for name, schema in domain.actions.items():
        if name not in template.actions:
            raise DataFileError(f"{where}: no phrase for action {name} under [actions]")
        _check_phrase(template.actions[name], schema.arity, f"[actions] {name}", template.path)
        for alias in template.aliases.get(name, ()):
            _check_phrase(alias, schema.arity, f"[aliases] {name}", template.path)
    for name in template.aliases:
        if name not in domain.actions:
            raise DataFileError(f"{where}: [aliases] {name} is not an action of the domain")
    seen: dict[str, str] = {}
    for obj in task.objects:
        key = normalise(_object_phrase(template, obj))
        if key in seen:
            raise DataFileError(f"{where}: objects {seen[key]} and {obj} would read the same")
        seen[key] = obj


def _object_phrase(template: Template, name: str) -> str:
    return template.object_names.get(name) or template.fallback.replace("{name}", name)


# ------------------------------------------------------------------ normalising text

_WORDS_RE = re.compile(r"[\W_]+")
_THE_RE = re.compile(r"\bthe\b")
_SPACES_RE = re.compile(r"\s+")
_CANT_RE = re.compile(r"\bcan['’]t\b", re.IGNORECASE)
_NT_RE = re.compile(r"n['’]t\b", re.IGNORECASE)


def normalise(text: str) -> str:
    """Lower case, words only, without "the": the form phrases are compared in."""
    text = _CANT_RE.sub("can not", text)
    text = _NT_RE.sub(" not", text).lower()
    text = _WORDS_RE.sub(" ", text)
    text = _THE_RE.sub(" ", text)
    return _SPACES_RE.sub(" ", text).strip()


def _compile_phrase(phrase: str, group: str) -> str:
    """A template phrase as a regex over normalised text, {i} replaced by `group` % i."""
    parts: list[str] = []
    pos = 0
    for match in _PLACEHOLDER_RE.finditer(phrase):
        literal = normalise(phrase[pos : match.start()])
        if literal:
            parts.append(re.escape(literal))
        parts.append(group.replace("#", match.group(1)))
        pos = match.end()
    literal = normalise(phrase[pos:])
    if literal:
        parts.append(re.escape(literal))
    return " ".join(parts)


def _fill(phrase: str, args: Iterable[str]) -> str:
    values = list(args)
    return _PLACEHOLDER_RE.sub(lambda m: values[int(m.group(1))], phrase)


def join_words(items: list[str]) -> str:
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------ reading lines

_BULLET_RE = re.compile(r"^\s*(?:[-*+•>#]+|\d+\s*[.)\]:]|\(\d+\)|[a-z]\))\s+", re.IGNORECASE)
_STEP_LABEL_RE = re.compile(r"^\s*(?:step|action|move)\s*#?\s*\d+\s*[:.)\-–—]*\s*", re.IGNORECASE)
_TIMESTAMP_RE = re.compile(r"^\s*\d+(?:\.\d+)?\s*:\s*")
_NUMBER_RE = re.compile(r"^\s*\d+\s*[.)\-–—:]\s*")
_PLAN_LABEL_RE = re.compile(r"^\s*(?:(?:final|corrected|new|my|the)\s+)*plan\s*:\s*(?=\S)", re.IGNORECASE)
_DURATION_RE = re.compile(r"\s*\[\s*\d+(?:\.\d+)?\s*\]\s*$")
_TRAILING_RE = re.compile(r"[\s.,;:!]+$")
_MARKUP_RE = re.compile(r"\*\*|__|`")
_SEQUENCE_RE = re.compile(
    r"^(?:(?:first|firstly|second|secondly|third|then|next|after that|afterwards|finally|lastly|and|now)\s+)+"
)
_COMMENT_RES = (
    re.compile(r"\s*\([^()]*\)\s*$"),  # a trailing parenthetical remark
    re.compile(r"\s+(?:--|—|–|-|#|//|;)\s+.*$"),  # "action - because ..." / "action ; comment"
)
# Verbs a model may use for a move it has no wording for; with an object named, the line
# is an attempted action, not prose.
_GENERIC_VERBS = frozenset(
    {"move", "place", "put", "take", "lift", "grab", "drop", "set", "pick", "remove", "carry", "transfer"}
    | {"stack", "unstack"}
)
_CALL_RE = re.compile(r"^([A-Za-z][\w-]*)\s*\(([^()]*)\)$")
_CLAUSE_WORDS = frozenset(
    {"because", "since", "so", "to", "which", "as", "in", "this", "that", "it", "now", "for", "while", "thus",
     "hence", "leaving", "making", "clearing", "freeing", "thereby"}
)
MAX_LINE_CHARS = 300  # no single action is longer; longer lines are prose or a runaway
MAX_REMEMBERED = 20_000  # lines or phrases per task: far more than a run's plans hold
_UNSEEN = object()


def clean_line(line: str) -> str:
    """The line as the model meant it: without list markers, step labels, markdown and
    closing punctuation."""
    text = _MARKUP_RE.sub("", line).strip()
    for _ in range(3):
        before = text
        text = _STEP_LABEL_RE.sub("", text)
        text = _TIMESTAMP_RE.sub("", text)
        text = _BULLET_RE.sub("", text)
        text = _NUMBER_RE.sub("", text)
        text = _PLAN_LABEL_RE.sub("", text)
        if text == before:
            break
    text = _DURATION_RE.sub("", text)
    return _TRAILING_RE.sub("", text).strip()


@lru_cache(maxsize=16_384)  # the same lines recur across the problems of a domain
def plain_pddl_line(line: str) -> tuple[str, GroundAction] | None:
    """(the line stripped, its action) for a bare `(name arg ...)` line, else None.

    The shortcut for the commonest action line: `clean_line` leaves such a line as it is
    (everything it strips needs markup, a label, a number or a bullet at the start, or
    punctuation or a bracket at the end, and this line starts with "(" and ends with ")"),
    and `parse_pddl_step` reads it as these words, lower-cased. Anything else is None and
    takes the full path."""
    text = line.strip()
    if text[:1] != "(" or text[-1:] != ")" or "`" in text or "**" in text or "__" in text:
        return None
    inner = text[1:-1]
    words = inner.split()
    if not words or "(" in inner or ")" in inner:
        return None
    return text, GroundAction(words[0].lower(), tuple(map(str.lower, words[1:])))


def _remember(memory: dict[Any, Any], key: Any, value: Any) -> None:
    """memory[key] = value, forgetting everything first when the memory is full."""
    if len(memory) >= MAX_REMEMBERED:
        memory.clear()
    memory[key] = value


@dataclass(frozen=True)
class Step:
    """One action line of a plan: read into an action, or kept with why it could not be."""

    number: int  # 1-based position among the plan's action lines
    text: str  # the cleaned line as written
    action: GroundAction | None
    error: str | None = None  # "unknown_action" | "unknown_object"
    detail: str = ""


# (the cleaned line, its action or None, error kind or None, why it could not be read)
_Read = tuple[str, GroundAction | None, str | None, str]


@dataclass
class _Form:
    action: str
    strict: re.Pattern[str]
    loose: re.Pattern[str]
    arity: int


@dataclass
class Language:
    """A task's words: its template bound to its objects (or PDDL when template is None)."""

    template: Template | None
    task: Task
    _forms: list[_Form] = field(default_factory=list, repr=False)
    _objects: dict[str, str] = field(default_factory=dict, repr=False)  # normalised phrase -> name
    _keywords: set[str] = field(default_factory=set, repr=False)
    _facts: list[tuple[str, int, re.Pattern[str]]] = field(default_factory=list, repr=False)
    _mention_re: re.Pattern[str] | None = field(default=None, repr=False)
    _mention_map: dict[str, GroundAction] = field(default_factory=dict, repr=False)
    # Raw line -> how it reads. Plans checked for one problem repeat most of their lines
    # (a backprompt's corrected plan, samples, mutations), and reading is a pure function
    # of the line and this task, so a line is read once. Bounded: cleared when full.
    _lines: dict[str, _Read | None] = field(default_factory=dict, repr=False)
    # Actions and facts in words, as failure messages name them again and again.
    _said_actions: dict[GroundAction, str] = field(default_factory=dict, repr=False)
    _said_literals: dict[Literal, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.template is None:
            self._keywords = set(self.task.domain.actions)
            return
        self._objects = {normalise(self.object(o)): o for o in self.task.objects}
        alternatives = "|".join(re.escape(p) for p in sorted(self._objects, key=len, reverse=True))
        for pred, arity in self.task.domain.predicates.items():
            pattern = _compile_phrase(self.template.predicates[pred], f"(?P<a#>{alternatives})")
            self._facts.append((pred, arity, re.compile(pattern)))
        for name, schema in self.task.domain.actions.items():
            for phrase in (self.template.actions[name], *self.template.aliases.get(name, ())):
                strict = _compile_phrase(phrase, f"(?P<a#>{alternatives})")
                loose = _compile_phrase(phrase, "(?P<a#>.+?)")
                self._forms.append(_Form(name, re.compile(strict), re.compile(loose), schema.arity))
                first = normalise(_PLACEHOLDER_RE.sub(" ", phrase)).split()
                if first and not _PLACEHOLDER_RE.match(phrase.strip()):
                    self._keywords.add(first[0])

    # -------------------------------------------------------------- writing

    @property
    def is_pddl(self) -> bool:
        return self.template is None

    def object(self, name: str) -> str:
        return name if self.template is None else _object_phrase(self.template, name)

    def atom(self, atom: Atom) -> str:
        if self.template is None:
            return atom_pddl(atom)
        return _fill(self.template.predicates[atom[0]], (self.object(a) for a in atom[1:]))

    def literal(self, lit: Literal) -> str:
        said = self._said_literals.get(lit)
        if said is None:
            atom, positive = lit
            if positive:
                said = self.atom(atom)
            elif self.template is None:
                said = f"(not {atom_pddl(atom)})"
            else:
                said = f"it is not the case that {self.atom(atom)}"
            _remember(self._said_literals, lit, said)
        return said

    def action(self, action: GroundAction) -> str:
        said = self._said_actions.get(action)
        if said is None:
            if self.template is None:
                said = action.pddl()
            else:
                said = _fill(self.template.actions[action.name], (self.object(a) for a in action.args))
            _remember(self._said_actions, action, said)
        return said

    def _stand_ins(self, parameters: tuple[str, ...]) -> dict[str, str]:
        if self.template is None:
            return {p: p for p in parameters}
        names = self.template.rule_objects
        return {p: names[i] if i < len(names) else f"object {i + 1}" for i, p in enumerate(parameters)}

    def action_forms(self) -> list[str]:
        """Each action in general terms ("unstack the block from on top of the other block")."""
        out: list[str] = []
        for name, schema in self.task.domain.actions.items():
            stand = self._stand_ins(schema.parameters)
            if self.template is None:
                out.append("(" + " ".join((name, *schema.parameters)) + ")")
            else:
                out.append(_fill(self.template.actions[name], (stand[p] for p in schema.parameters)))
        return out

    def generated_rules(self) -> str:
        """Each action's preconditions and effects in words, straight from the PDDL."""
        lines: list[str] = []
        for name, schema in self.task.domain.actions.items():
            stand = self._stand_ins(schema.parameters)

            def say(cond: Any) -> str:
                args = [stand.get(t) or self.object(t) for t in cond.terms]
                if self.template is None:
                    text = "(" + " ".join((cond.predicate, *args)) + ")"
                    return text if cond.positive else f"(not {text})"
                text = _fill(self.template.predicates[cond.predicate], args)
                return text if cond.positive else f"it is not the case that {text}"

            if self.template is None:
                form = "(" + " ".join((name, *schema.parameters)) + ")"
            else:
                form = _fill(self.template.actions[name], (stand[p] for p in schema.parameters))
                form = form[:1].upper() + form[1:]
            needs = ", ".join(say(c) for c in schema.preconditions) or "nothing"
            parts = [f"- {form}. Needs: {needs}."]
            if schema.add:
                parts.append(f"Makes true: {', '.join(say(c) for c in schema.add)}.")
            if schema.delete:
                parts.append(f"Makes false: {', '.join(say(c) for c in schema.delete)}.")
            lines.append(" ".join(parts))
        return "\n".join(lines)

    def rules(self) -> str:
        if self.template is not None and self.template.rules:
            return self.template.rules
        return self.generated_rules()

    # -------------------------------------------------------------- reading

    def read_line(self, line: str) -> _Read | None:
        """(cleaned text, action, error kind, detail) for an action line; None for prose.

        A line read before for this task is answered from memory, a bare PDDL line naming
        a well-formed action is read directly, and every other line (including every line
        with a mistake to report) takes `read_line_in_full`, which defines the result."""
        known = self._lines.get(line, _UNSEEN)
        if known is not _UNSEEN:
            return known  # type: ignore[return-value]
        plain = plain_pddl_line(line)
        if plain is not None and self.task.compiled().is_action(plain[1]):
            read: _Read | None = (plain[0], plain[1], None, "")
        else:
            read = self.read_line_in_full(line)
        if len(line) <= MAX_LINE_CHARS:
            _remember(self._lines, line, read)
        return read

    def read_line_in_full(self, line: str) -> _Read | None:
        """`read_line` without its shortcuts: every pattern a model's line may follow."""
        text = clean_line(line)
        if not text:
            return None
        pddl = parse_pddl_step(text)
        if pddl is not None:
            return self._read_pddl(text, pddl)
        call = self._read_call(text)
        if call is not None:
            return call
        if self.template is None:
            first = normalise(text).split()[:1]
            if first and first[0] in {normalise(a) for a in self.task.domain.actions}:
                return text, None, "unknown_action", "write actions in PDDL syntax, like (name object ...)"
            return None
        if len(text) > MAX_LINE_CHARS:
            words = normalise(text[:80]).split()
            if words and words[0] in self._keywords:
                return text, None, "unknown_action", "the line is far too long to be one action"
            return None
        variants = [text] + [rx.sub("", text) for rx in _COMMENT_RES if rx.search(text)]
        keys: list[str] = []
        for variant in variants:
            key = normalise(variant)
            keys.append(key)
            stripped = _SEQUENCE_RE.sub("", key)
            if stripped != key:
                keys.append(stripped)
        for key in keys:
            for form in self._forms:
                match = form.strict.fullmatch(key)
                if match:
                    return self._matched(text, form, match)
        for key in keys:
            for form in self._forms:
                match = form.strict.match(key)
                # "unstack the red block from the blue block to free the blue block": an
                # action, then a clause saying why; never "and ...", which may hide a second action.
                if match and key[match.end() :].split()[:1] and key[match.end() :].split()[0] in _CLAUSE_WORDS:
                    return self._matched(text, form, match)
        for key in keys:
            for form in self._forms:
                match = form.loose.fullmatch(key)
                if match:
                    found = [match.group(f"a{i}") for i in range(form.arity)]
                    unknown = [arg for arg in found if arg not in self._objects]
                    return text, None, "unknown_object", f"there is no object called {unknown[0] if unknown else key}"
        for key in keys:
            words = key.split()
            if not words:
                continue
            if words[0] in self._keywords:
                return text, None, "unknown_action", "it does not match any of the allowed actions"
            if words[0] in _GENERIC_VERBS and any(re.search(rf"\b{re.escape(p)}\b", key) for p in self._objects):
                return text, None, "unknown_action", "it does not match any of the allowed actions"
        return None

    def read_fact(self, text: str) -> Atom | None:
        """The fact a phrase states ("the red block is clear" -> ("clear", "a")), or None."""
        if self.template is None:
            action = parse_pddl_step(text.strip())
            if action is None or self.task.domain.predicates.get(action.name) != len(action.args):
                return None
            return (action.name, *action.args)
        key = normalise(text)
        for pred, arity, pattern in self._facts:
            match = pattern.fullmatch(key)
            if match:
                return (pred, *(self._objects[match.group(f"a{i}")] for i in range(arity)))
        return None

    def _matched(self, text: str, form: _Form, match: re.Match[str]) -> _Read:
        args = tuple(self._objects[match.group(f"a{i}")] for i in range(form.arity))
        action = GroundAction(form.action, args)
        problem = self.task.check_arguments(action)
        if problem is not None:
            return text, None, "unknown_object", problem
        return text, action, None, ""

    def _read_call(self, text: str) -> _Read | None:
        """`unstack(b, c)` or `stack(red block, blue block)`: function-call style."""
        match = _CALL_RE.match(text)
        if not match:
            return None
        actions = self.task.domain.actions
        name = match.group(1).lower()
        name = name if name in actions else name.replace("_", "-") if name.replace("_", "-") in actions else name
        args: list[str] = []
        for raw in (a.strip() for a in match.group(2).split(",") if a.strip()):
            obj = raw.lower() if self.task.object_types(raw.lower()) is not None else self._objects.get(normalise(raw))
            if obj is None:
                if name not in actions:
                    return None  # "note(see below)": a remark, not an action
                return text, None, "unknown_object", f"there is no object called {raw}"
            args.append(obj)
        return self._read_pddl(text, GroundAction(name, tuple(args)))

    def _read_pddl(self, text: str, action: GroundAction) -> _Read | None:
        domain = self.task.domain
        known_args = all(self.task.object_types(a) is not None for a in action.args)
        if action.name not in domain.actions:
            # "(fly a b)" is a wrong action; "(see below)" is a remark in brackets.
            if action.args and known_args:
                return text, None, "unknown_action", f"there is no action called {action.name}"
            return None
        schema = domain.actions[action.name]
        if len(action.args) != schema.arity:
            return text, None, "unknown_action", f"{action.name} takes {schema.arity} object(s), not {len(action.args)}"
        problem = self.task.check_arguments(action)
        if problem is not None:
            return text, None, "unknown_object", problem
        return text, action, None, ""

    # -------------------------------------------------------------- finding mentions

    def _mentions_index(self) -> tuple[re.Pattern[str] | None, dict[str, GroundAction]]:
        if self._mention_re is None and self._mention_map == {}:
            phrases: dict[str, GroundAction] = {}
            for action in self.task.ground_actions():
                phrases.setdefault(normalise(self.action(action)), action)
                phrases.setdefault(normalise(action.pddl()), action)
            phrases.pop("", None)
            self._mention_map = phrases
            if phrases:
                body = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
                self._mention_re = re.compile(rf"(?<!\w)(?:{body})(?!\w)")
        return self._mention_re, self._mention_map

    def mentioned_actions(self, normalised_text: str) -> list[tuple[int, GroundAction]]:
        """(position, action) for each action named in already-normalised text."""
        pattern, phrases = self._mentions_index()
        if pattern is None:
            return []
        return [(m.start(), phrases[m.group(0)]) for m in pattern.finditer(normalised_text)]

    def words_for_pddl(self, text: str) -> str:
        """`text` with each PDDL action or fact of this task replaced by its words."""
        if self.template is None:
            return text

        def swap(match: re.Match[str]) -> str:
            inner = match.group(0)
            action = parse_pddl_step(inner)
            if action is None:
                return inner
            if self.task.check_arguments(action) is None:
                return self.action(action)
            atom = (action.name, *action.args)
            arity = self.task.domain.predicates.get(action.name)
            if arity == len(action.args) and all(self.task.object_types(a) is not None for a in action.args):
                return self.atom(atom)
            return inner

        return re.sub(r"\([^()]{0,200}\)", swap, text)


# ------------------------------------------------------------------ whole plans

_END_RE = re.compile(r"\[\s*(?:plan\s*end|end\s*(?:of\s*)?plan)\s*\]", re.IGNORECASE)
_START_RE = re.compile(r"\[\s*plan\s*\]", re.IGNORECASE)
_HEADER_RE = re.compile(r"^[\W_]*(?:[^\n]*\bplan\b[^\n.!?]*:)[\W_]*$", re.IGNORECASE)
MAX_TEXT_CHARS = 100_000  # far beyond any reply; stops a pathological input from stalling a run
# A header that sets its plan aside ("A plan I put aside:", "The plan I rejected:") says
# the lines under it are not the answer: a careful grader reads the plan around them.
# Taking them as the last plan accepted a wrong plan followed by a right one set aside.
_SET_ASIDE_RE = re.compile(
    r"\b(?:reject\w*|discard\w*|abandon\w*|dropped|(?:put|set|laid|lay) aside|not (?:used|chosen|taken)|unused|"
    r"(?:do|did|will) not (?:use|choose|pick|take|keep)|(?:don|didn|won)['’]t (?:use|choose|pick|take|keep)|"
    r"not (?:my|the) (?:answer|plan|final))\b",
    re.IGNORECASE,
)


def _is_header(line: str) -> bool:
    # Cheap tests first: the pattern backtracks badly on long runs of punctuation.
    line = line.strip()
    return (
        len(line) <= MAX_LINE_CHARS
        and ":" in line
        and "plan" in line.lower()
        and _HEADER_RE.match(line) is not None
    )


def _read_lines(language: Language, lines: list[str]) -> list[_Read]:
    remembered = language._lines  # looked up here first: most lines were read before
    reads: list[_Read] = []
    for line in lines:
        read = remembered.get(line, _UNSEEN)
        if read is _UNSEEN:
            read = language.read_line(line)
        if read is not None:
            reads.append(read)  # type: ignore[arg-type]
    return reads


def _read_body(language: Language, body: str) -> list[_Read]:
    starts = list(_START_RE.finditer(body)) if "[" in body else []  # most plans have no markers at all
    if starts:
        after = _read_lines(language, body[starts[-1].end() :].splitlines())
        if after:
            return after
    lines = body.splitlines()
    # A header ends in a colon and says "plan": most plans have no such line at all.
    maybe_header = ":" in body and "plan" in body.lower()
    headers = [i for i, line in enumerate(lines) if _is_header(line)] if maybe_header else []
    if headers:
        lines, headers = _without_plans_set_aside(lines, headers)
    if headers:
        after = _read_lines(language, lines[headers[-1] + 1 :])
        if after:
            return after
    return _read_lines(language, lines)


def _without_plans_set_aside(lines: list[str], headers: list[int]) -> tuple[list[str], list[int]]:
    """The body's lines without those under a header that sets its plan aside (up to the
    next header), and the positions of the headers left among them."""
    if not any(_SET_ASIDE_RE.search(lines[i]) for i in headers):
        return lines, headers
    kept: list[str] = []
    kept_headers: list[int] = []
    aside = False
    starts = set(headers)
    for i, line in enumerate(lines):
        if i in starts:
            aside = _SET_ASIDE_RE.search(line) is not None
            if aside:
                continue
            kept_headers.append(len(kept))
        if not aside:
            kept.append(line)
    return kept, kept_headers


def read_plan(language: Language, text: str) -> list[_Read]:
    """`parse_plan` as (cleaned line, action, error kind, detail) tuples, step k at
    index k - 1: what checking a plan needs, without building a `Step` per line."""
    text = text[:MAX_TEXT_CHARS]
    pieces = _END_RE.split(text) if "]" in text else [text]
    bodies = pieces[:-1] if len(pieces) > 1 else pieces
    for body in reversed(bodies):
        reads = _read_body(language, body)
        if reads:
            return reads
    return []


_MARK_RE = re.compile(r"(\[\s*(?:plan\s*end|end\s*(?:of\s*)?plan)\s*\]|\[\s*plan\s*\])", re.IGNORECASE)
# A header that offers its plan as another option ("Alternatively, another plan:") makes
# the action lines before it a plan on offer too, not reasoning or an echoed example.
_ALTERNATIVE_RE = re.compile(r"\b(?:or|alternatively|alternative|another|option|second|plan\s*\d+)\b", re.IGNORECASE)


@dataclass
class _Segment:
    declared: bool  # after a [PLAN] marker or a plan header, or closed by [PLAN END]
    plan: tuple[tuple[str, GroundAction | None], ...]
    first: int  # index of its first action line among all pieces
    last: int


def competing_plan(language: Language, text: str) -> bool:
    """Whether the reply offers another plan besides the one `read_plan` takes, with
    nothing saying which is final: a second list after [PLAN]/[PLAN END] or a "...plan:"
    header that differs from the chosen one and is not introduced as a correction
    ("Plan 1: ... Plan 2: ...", "... [PLAN END] Or: ... [PLAN END]"). A careful grader
    cannot tell which of such plans is the answer, so accepting either is a guess."""
    text = text[:MAX_TEXT_CHARS]
    if "[" not in text and not (":" in text and "plan" in text.lower()):
        return False
    chosen = tuple((read[0], read[1]) for read in read_plan(language, text))
    pieces: list[str] = []
    for line in text.splitlines():
        if "[" in line:
            pieces.extend(p for p in _MARK_RE.split(line) if p.strip())
        else:
            pieces.append(line)
    segments: list[_Segment] = []
    prose: dict[int, str] = {}
    started = False  # inside a segment opened by a marker or header
    aside = False  # inside a segment whose header sets it aside: no plan on offer
    plan: list[tuple[str, GroundAction | None]] = []
    first = last = -1

    def close(declared: bool) -> None:
        nonlocal plan, first, last
        if plan:
            segments.append(_Segment(declared and not aside, tuple(plan), first, last))
        plan, first, last = [], -1, -1

    for index, piece in enumerate(pieces):
        mark = _MARK_RE.fullmatch(piece.strip())
        if mark is not None or _is_header(piece):
            is_end = mark is not None and _END_RE.fullmatch(piece.strip()) is not None
            close(started or is_end or (mark is None and _ALTERNATIVE_RE.search(piece) is not None))
            started = not is_end
            aside = mark is None and _SET_ASIDE_RE.search(piece) is not None
            prose[index] = piece
            continue
        read = language.read_line(piece)
        if read is None:
            prose[index] = piece
            continue
        plan.append((read[0], read[1]))
        first = index if first < 0 else first
        last = index
    close(started)
    declared = [s for s in segments if s.declared]
    if not any(s.plan != chosen for s in declared):
        return False
    same = [i for i, s in enumerate(declared) if s.plan == chosen]
    if not same:
        return True
    at = declared[same[-1]]
    for other in declared:
        if other.plan == chosen:
            continue
        if other.first > at.first:
            return True
        between = " ".join(prose.get(i, "") for i in range(other.last + 1, at.first))
        if not introduces_a_correction(between):
            return True
    return False


def parse_plan(language: Language, text: str) -> list[Step]:
    """The plan in a reply, one step per action line.

    With [PLAN END] markers, the last block before one that holds actions is the plan
    (the model's final word; text after the last marker is commentary). Inside it, the
    lines after the last [PLAN] or "...plan:" header are used when they hold actions.
    Prose lines are skipped; lines that look like actions but cannot be read are kept
    as steps with an error, so a mistake is reported rather than dropped.
    """
    return [Step(number, *read) for number, read in enumerate(read_plan(language, text), 1)]
