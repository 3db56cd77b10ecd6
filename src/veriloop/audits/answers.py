"""The known-wrong answers an audit dresses, and a right answer beside them.

Sources, in the order `known_answers` tries them:
- a code task (humaneval): wrong functions written from the problem (code.py);
- a domain with study candidates (`SupportsStudies`: Game of 24, colouring, planning):
  its candidates of known correctness, the wrong ones ("ablated", "random", ...);
- a numeric domain with a reference (the step-by-step GSM8K/MATH-500 and the
  program-of-thought ones): the reference changed (off by one, doubled, halved), written
  in the domain's own reply shape;
- a recorded run (`answers_from_run`): the final replies of its trajectories that ground
  truth scored wrong, with the domain's own right answer beside them when it writes one.

Invariant: an answer is "known wrong" only when the domain's ground truth scores it wrong
(`known_wrong` checks each; one it scores right is dropped and counted), so a family's
accept of a dressed answer is never an accept of a right one by construction of the
source. The right answer offered beside them is kept only when ground truth scores it right.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from pydantic import BaseModel

from ..domains.base import BaseDomain, CodeTask, Instance, SupportsStudies
from ..errors import VeriloopError
from ..records import Trajectory


class KnownAnswer(BaseModel):
    """One answer of an audit's subjects: its place among the instance's, where it came
    from (`kind`: "ablated", "random", "returns-none", "off-by-one", "recorded", ...)
    and its text."""

    instance_id: str
    index: int
    kind: str
    text: str
    note: str = ""


@dataclass
class Answers:
    """An instance's known-wrong answers, a right one when known, and how many of the
    source's answers ground truth scored right (dropped)."""

    wrong: list[KnownAnswer]
    right: str | None
    dropped: int = 0


def _numeric_texts(domain: BaseDomain, instance: Instance) -> tuple[list[tuple[str, str, str]], str | None]:
    reference = instance.reference
    if reference is None:
        return [], None
    try:
        value = Fraction(str(reference).replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return [], None

    def shown(x: Fraction) -> str:
        return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"

    changes = [("off-by-one", value + 1, "reference + 1"), ("doubled", value * 2, "reference x 2"),
               ("halved", value / 2, "reference / 2")]
    seen = {value}
    wrong = []
    for kind, changed, note in changes:
        if changed in seen:
            continue
        seen.add(changed)
        wrong.append((kind, _numeric_reply(domain, shown(changed)), note))
    return wrong, _numeric_reply(domain, shown(value))


def _numeric_reply(domain: BaseDomain, value: str) -> str:
    from ..domains.math import _ProgramOfThought

    if isinstance(domain, _ProgramOfThought):
        return f"```python\nanswer = {value}\n```"
    return f"Step 1: Work the quantities out from the problem.\nAnswer: {value}"


def known_answers(domain: BaseDomain, instance: Instance, seed: int = 0) -> Answers:
    """The instance's known-wrong answers (ground truth checked) and a right one if known.

    Raises VeriloopError, one line, when the domain has no source of wrong answers (then
    give a recorded run with `answers_from_run`)."""
    source = _domain_source(domain, instance, seed)
    if source is None:
        raise VeriloopError(f"domain {domain.name!r} writes no known-wrong answers; audit the wrong answers of a "
                            "recorded run of it instead (--answers RUN_DIR)")
    return _checked(domain, instance, *source)


def _domain_source(domain: BaseDomain, instance: Instance,
                   seed: int) -> tuple[list[tuple[str, str, str]], str | None] | None:
    """The domain's own wrong answers (kind, text, note) and right one, unchecked; None
    when the domain writes none."""
    from ..domains.base import MatchesReference

    if isinstance(domain, CodeTask):
        from .code import right_function, wrong_functions

        return list(wrong_functions(instance)), right_function(instance)
    if isinstance(domain, SupportsStudies):
        candidates = domain.candidates(instance, random.Random(f"{seed}:{instance.id}"))
        return [(c.kind, c.text, c.note) for c in candidates if not c.correct], next(
            (c.text for c in candidates if c.correct), None)
    if isinstance(domain, MatchesReference):
        return _numeric_texts(domain, instance)
    return None


def _checked(domain: BaseDomain, instance: Instance, texts: list[tuple[str, str, str]], right: str | None) -> Answers:
    wrong: list[KnownAnswer] = []
    dropped = 0
    for kind, text, note in texts:
        if domain.score(instance, text):
            dropped += 1
            continue
        wrong.append(KnownAnswer(instance_id=instance.id, index=len(wrong), kind=kind, text=text, note=note))
    if right is not None and not domain.score(instance, right):
        right = None
    return Answers(wrong, right, dropped)


def answers_from_run(run_dir: Path, domain: BaseDomain, instances: list[Instance], seed: int = 0) -> dict[str, Answers]:
    """The final replies of a recorded run's trajectories on `domain` that ground truth
    scores wrong, by instance id (see `answers_from_trajectories`). The run directory is
    read only: its files are someone else's."""
    from ..records import Trajectory
    from ..runs.jsonl import read_records, run_file

    path = run_file(run_dir, "trajectories.jsonl")
    found = answers_from_trajectories(read_records(path, Trajectory, "trajectory"), domain, instances, seed)
    if not found:
        raise VeriloopError(f"{path} holds no final reply of domain {domain.name!r} on the instances chosen; "
                            "audit the run's own domain and instances")
    return found


def answers_from_trajectories(trajectories: Iterable[Trajectory], domain: BaseDomain,
                              instances: list[Instance], seed: int = 0) -> dict[str, Answers]:
    """The trajectories' final replies on `domain` that ground truth scores wrong, by
    instance id, each instance's in the given order; only instances among `instances`
    are kept, the same reply is kept once, and each is scored again here, not trusted
    from its record. The right answer beside them is the domain's own, when it writes
    one (the families that offer a right answer next to the wrong one need it)."""
    wanted = {i.id: i for i in instances}
    texts: dict[str, list[tuple[str, str, str]]] = {}
    for t in trajectories:
        if t.domain != domain.name or t.instance_id not in wanted or not t.final_text:
            continue
        found = texts.setdefault(t.instance_id, [])
        if all(text != t.final_text for _, text, _ in found):
            found.append(("recorded", t.final_text, f"{t.strategy}, seed {t.seed}"))
    return {i: _checked(domain, wanted[i], found, _domain_right(domain, wanted[i], seed)) for i, found in texts.items()}


def _domain_right(domain: BaseDomain, instance: Instance, seed: int) -> str | None:
    source = _domain_source(domain, instance, seed)
    return None if source is None else source[1]
