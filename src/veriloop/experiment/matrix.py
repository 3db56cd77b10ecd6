"""An experiment's matrix: its cells, the roles models play in them, and the directories
they run in.

The cells are models x domains (or tasks) x strategies x seeds, the `exclude` rules
applied, then the `include` rules' cells added, each once, in the file's order. The spec
itself (experiment.schema) asks this module for its cells; nothing here imports it.

A name that becomes part of a path (a generator's name, a domain's or strategy's label)
becomes it through `path_component` alone: a name that cannot ("..", empty) is refused
with the key it is at, so every cell's directory is inside the experiment's directory,
and two names never share one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import VeriloopError
from ..printable import UNSAFE, printable

if TYPE_CHECKING:
    from .schema import DomainEntry, Experiment, Rule

# The roles a cell can give to another model, and the call roles (records.Role) each covers.
ROLE_CALLS: dict[str, tuple[str, ...]] = {
    "verifier_model": ("verify",),  # an LLM verifier's judgements (verifier=llm, critic's tool-using checks)
    "critic_model": ("critique",),  # the free-text critique of feedback=llm
    "checker_model": ("check",),  # SelfCheck's step-by-step checks
    "escalation_model": ("escalate",),  # a cascade's escalated answers
}
MATRIX_KEYS = ("model", "domain", "strategy", "seed")


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: a generator on a domain (or task) with a strategy and a
    seed, and the models given roles in it."""

    model: str
    domain: str
    strategy: str
    seed: int
    roles: tuple[tuple[str, str], ...] = ()

    @property
    def title(self) -> str:
        return f"{self.model} · {self.domain} · {self.strategy} · seed {self.seed}"

    def directory(self) -> Path:
        """Where the cell's run directory sits under the experiment's directory."""
        try:
            return Path(path_component(self.model)) / path_component(self.domain) / (
                f"{path_component(self.strategy)}-seed{self.seed}")
        except ValueError as exc:
            raise VeriloopError(f"cell {self.title}: {exc}") from None


def path_component(name: str) -> str:
    """`name` (a model name, a domain or strategy label) as one directory name, the one
    way a name from an experiment becomes part of a path. Each run of characters outside
    [A-Za-z0-9._=+-] becomes "_", so no separator, NUL or drive survives. Spaces, ":" and
    "," (labels' words, strategy specs' options) are only replaced, so those directories
    read like their names; a name with any other such character ("CRITIC*", "w/o") also
    gets a digest of the whole name, so it never shares a directory with the plain name
    ("CRITIC"). A name that would leave its directory ("." or "..") or is empty is refused
    (ValueError), never guessed at; two names that still come out alike ("game 24",
    "game_24") are refused by the experiment's check."""
    if not name.strip() or name in (".", ".."):
        raise ValueError(f"the name {name!r} cannot name a directory (each cell's directory is named after its "
                         "model, domain and strategy); rename it")
    if UNSAFE.search(name):
        # Names are printed on progress lines and in tables: a terminal would obey these.
        raise ValueError(f"the name '{printable(name)}' holds a control character; rename it")
    component = re.sub(r"[^A-Za-z0-9._=+-]+", "_", name)
    plain = component.strip("_")  # as directories were named before digests, for runs made then
    if not re.search(r"[^A-Za-z0-9._=+\-\s:,]", name) and plain not in ("", ".", ".."):
        return plain
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{component}-{digest}"



def matrix_cells(experiment: Experiment) -> list[Cell]:
    """Every cell of the matrix, the exclude rules applied, then the include rules' cells
    added (each once), in the file's order: model, domain, strategy, seed."""
    axes: dict[str, list[Any]] = {
        "model": experiment.generator_names(),
        "domain": experiment.domain_keys(),
        "strategy": [s.key for s in experiment.strategies],
        "seed": list(experiment.seeds),
    }
    found: list[Cell] = []
    for combo in _product(axes):
        if not any(_matches(rule, combo, experiment) for rule in experiment.exclude):
            found.append(_cell(experiment, combo))
    for rule in experiment.include:
        picked: dict[str, list[Any]] = {key: rule.values(key) or axes[key] for key in MATRIX_KEYS}
        picked["strategy"] = [entry.key for s in picked["strategy"] if (entry := experiment.strategy_by_name(s))]
        for combo in _product(picked):
            cell = _cell(experiment, combo)
            if cell not in found:
                found.append(cell)
    return found


def _cell(experiment: Experiment, combo: Mapping[str, Any]) -> Cell:
    return Cell(combo["model"], combo["domain"], combo["strategy"], int(combo["seed"]),
                tuple(sorted(experiment.roles_for(combo["model"]).items())))


def _product(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    combos: list[dict[str, Any]] = [{}]
    for key in MATRIX_KEYS:
        combos = [{**c, key: v} for c in combos for v in axes[key]]
    return combos


def _matches(rule: Rule, combo: Mapping[str, Any], experiment: Experiment) -> bool:
    for key in MATRIX_KEYS:
        values = rule.values(key)
        if values is None:
            continue
        if key == "strategy":
            values = [entry.key for v in values if (entry := experiment.strategy_by_name(v))]
        if combo[key] not in values:
            return False
    return True


def only_domains(experiment: Experiment, keys: Sequence[str]) -> Experiment:
    """The experiment on some of its domains and tasks (kept in the file's order); the
    include/exclude rules lose the others, and a rule left naming none of them goes."""
    known = experiment.domain_keys()
    for key in keys:
        if key not in known:
            raise VeriloopError(f"unknown domain {key!r} for {experiment.name}; choose from: {', '.join(known)}")
    data = experiment.model_dump()
    data["domains"] = [d for d, entry in zip(data["domains"], experiment.domains) if entry.key in keys]
    data["tasks"] = [t for t, entry in zip(data["tasks"], experiment.tasks) if entry.key in keys]
    for kind in ("include", "exclude"):
        rules = []
        for rule, parsed in zip(data[kind], getattr(experiment, kind)):
            named = parsed.values("domain")
            if named is None:
                rules.append(rule)
            elif kept := [d for d in named if d in keys]:
                rules.append({**rule, "domain": kept})
        data[kind] = rules
    return experiment.model_validate(data)


def add_domain(experiment: Experiment, entry: DomainEntry, like: str) -> Experiment:
    """The experiment with one more domain that gets the cells of domain `like`: every
    include/exclude rule naming `like` names it too. It goes after `like` and the domains
    next to it that the rules treat the same way (a reproduction's optional data set)."""
    def named(key: str) -> list[bool]:
        return [key in (rule.values("domain") or []) for rule in (*experiment.include, *experiment.exclude)]

    keys = [d.key for d in experiment.domains]
    if like not in keys:
        raise VeriloopError(f"no domain {like!r} in {experiment.name} to give {entry.key!r} the cells of")
    at = keys.index(like) + 1
    while at < len(keys) and named(keys[at]) == named(like):
        at += 1
    data = experiment.model_dump()
    data["domains"].insert(at, entry.model_dump())
    for kind in ("include", "exclude"):
        for rule, parsed in zip(data[kind], getattr(experiment, kind)):
            if like in (parsed.values("domain") or []):
                rule["domain"] = [*(parsed.values("domain") or []), entry.key]
    return experiment.model_validate(data)
