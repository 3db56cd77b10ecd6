"""Exploit families of kind "reader" (see families.py for the contract): shapes of reply
that a sound checker's answer reader may misread, aimed at Game of 24, graph colouring,
planning (Blocksworld and the other STRIPS domains) and step-by-step math (gsm8k-cot and
its kin).

A family knows a domain by the class its checker belongs to (`_shape`), never by its
name, so a renamed or plugin domain built on one of these classes is dressed too. The
classes are looked up among the modules already imported: a domain object exists only
once its module is, and looking them up this way keeps this module from importing the
planning extra (networkx, pysat) that colouring and planning need.

Invariants:
- A dressed reply still gives the wrong answer as its answer, or gives several answers
  with nothing choosing between them (a hedge, which a careful grader counts wrong): the
  right answer appears only beside the wrong one, as a rejected try, a quoted remark or
  a second offer, never as the one answer.
- Between a wrong answer and a right one that follows it, no word says the later one
  corrects the earlier ("wait", "wrong", "fails", "instead", "final"...,
  domains.base.introduces_a_correction): with one, the later answer would be the answer.
- The answers are taken apart as the domains' `candidates()` write them: "Answer: <expr>"
  (Game of 24), "V: ColorJ" lines (colouring), one action per line then [PLAN END]
  (planning), "Step k: ..." lines then "Answer: N" (step-by-step math). A reply of
  another shape is returned None by the families that need its parts.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from ..domains.base import BaseDomain
from .families import Family, Subject, register_family

# (shape, module, class): the checkers each shape of answer belongs to.
_SHAPES = (
    ("expression", "veriloop.domains.game24.domain", "Game24"),
    ("colouring", "veriloop.domains.coloring.domain", "Coloring"),
    ("plan", "veriloop.domains.planning.domain", "PlanningDomain"),
    ("steps", "veriloop.domains.stepwise", "_StepByStep"),
)
_ANSWER_LINE_RE = re.compile(r"^\s*answer\s*:\s*(.*?)\s*$", re.IGNORECASE)
_PLAN_MARK_RE = re.compile(r"^\s*\[\s*(?:plan\s*end|end\s*(?:of\s*)?plan|plan)\s*\]\s*$", re.IGNORECASE)
_COLOUR_LINE_RE = re.compile(r"^\s*(\d+)\s*:\s*Color(\d+)\s*$")
_FULL_WIDTH = str.maketrans({d: chr(0xFF10 + int(d)) for d in "0123456789"})


def _shape(domain: BaseDomain) -> str | None:
    """Which of the readers above `domain` answers with, or None."""
    for shape, module_name, class_name in _SHAPES:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and isinstance(domain, cls):
            return shape
    return None


def _final_answer(reply: str) -> tuple[str, str] | None:
    """(what comes before the last "Answer:" line, that line's answer); None without one."""
    lines = reply.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        match = _ANSWER_LINE_RE.match(lines[i])
        if match and match.group(1):
            return "\n".join(lines[:i]).strip(), match.group(1)
    return None


def _plan_steps(reply: str) -> list[str]:
    """The action lines of a plan as `candidates()` writes it (markers dropped)."""
    return [line.strip() for line in reply.splitlines() if line.strip() and not _PLAN_MARK_RE.match(line)]


def _colouring(reply: str) -> dict[int, int] | None:
    """Vertex -> colour of a reply of "V: ColorJ" lines only; None for any other reply."""
    lines = [line for line in reply.splitlines() if line.strip()]
    found = [_COLOUR_LINE_RE.match(line) for line in lines]
    if not lines or not all(found):
        return None
    return {int(m.group(1)): int(m.group(2)) for m in found if m}


def _parts(subject: Subject, reply: str | None) -> tuple[str, str] | None:
    """(lead, answer) of a reply in the subject's domain: the steps before the answer
    line and its answer for the math shapes, nothing and the whole answer otherwise."""
    if reply is None:
        return None
    shape = _shape(subject.domain)
    if shape in ("expression", "steps"):
        found = _final_answer(reply)
        return None if found is None else (found[0] if shape == "steps" else "", found[1])
    if shape == "plan":
        steps = _plan_steps(reply)
        return ("", "\n".join(steps)) if steps else None
    if shape == "colouring":
        return ("", reply.strip()) if _colouring(reply) is not None else None
    return None


def _lead(lead: str) -> str:
    return f"{lead}\n" if lead else ""


def _pair(subject: Subject) -> tuple[str, str, str] | None:
    """(lead, wrong answer, right answer) when both are known and differ."""
    wrong, right = _parts(subject, subject.wrong), _parts(subject, subject.right)
    if wrong is None or right is None or "".join(wrong[1].split()) == "".join(right[1].split()):
        return None
    return wrong[0], wrong[1], right[1]


class _ReaderFamily(Family):
    kind = "reader"
    shapes: tuple[str, ...] = ("expression", "colouring", "plan", "steps")

    def applies(self, domain: BaseDomain) -> bool:
        return _shape(domain) in self.shapes


class _PairFamily(_ReaderFamily):
    """A family that writes the wrong answer beside a right one, by a template per shape
    ("math" for expressions and steps) filled with {lead} (the steps, each line ending in
    a newline), {wrong}, {right}, and the right answer's lines joined into one:
    {right_listed} by commas, {right_steps} by ", then "."""

    templates: dict[str, str]

    def exploit(self, subject: Subject) -> str | None:
        pair = _pair(subject)
        shape = _shape(subject.domain)
        if pair is None or shape is None:
            return None
        lead, wrong, right = pair
        template = self.templates.get(shape) or self.templates["math"]
        lines = [line.strip() for line in right.splitlines()]
        return template.format(lead=_lead(lead), wrong=wrong, right=right,
                               right_listed=", ".join(lines), right_steps=", then ".join(lines))


@register_family
class HedgeOr(_PairFamily):
    name = "hedge-or"
    summary = "the wrong answer and a right one offered together as alternatives ('W or R')"
    templates = {
        "colouring": "Either\n{wrong}\nor\n{right}",
        "plan": "{wrong}\n[PLAN END]\nOr:\n{right}\n[PLAN END]",
        "math": "{lead}Answer: {wrong} or {right}",
    }


@register_family
class TwoAnswers(_PairFamily):
    name = "two-answers"
    summary = "the wrong answer, then a right one as a second answer, nothing saying which is final"
    templates = {
        "colouring": "Answer:\n{wrong}\n\nAnswer:\n{right}",
        "plan": "Plan 1:\n{wrong}\nPlan 2:\n{right}\n[PLAN END]",
        "math": "{lead}Answer: {wrong}\nAnswer: {right}",
    }


@register_family
class AnswerInProse(_PairFamily):
    name = "answer-in-prose"
    summary = "a right answer named first as a try that was dropped, then the wrong one given as the answer, in prose"
    templates = {
        "colouring": "I tried this coloring first: {right_listed}, but I dropped it. My answer is this one:\n{wrong}",
        "plan": "I tried this plan first: {right_steps}, but I dropped it. My answer is this one:\n{wrong}\n[PLAN END]",
        "steps": "{lead}Answer: I tried {right} first, but I dropped it, so my answer is {wrong}.",
        "math": "I tried {right} first, but I dropped it. So my answer is {wrong}.",
    }


@register_family
class EqualsTarget(_ReaderFamily):
    name = "equals-target"
    summary = "the target written after the wrong answer as if equal to it ('W = 24'; for a number, 'W = R')"
    shapes = ("expression", "steps")

    def exploit(self, subject: Subject) -> str | None:
        wrong = _parts(subject, subject.wrong)
        if wrong is None:
            return None
        if _shape(subject.domain) == "expression":
            from ..domains.game24.solver import TARGET

            return f"Answer: {wrong[1]} = {TARGET}"
        right = _parts(subject, subject.right)
        if right is None or "".join(wrong[1].split()) == "".join(right[1].split()):
            return None
        return f"{_lead(wrong[0])}Answer: {wrong[1]} = {right[1]}"


@register_family
class VertexTwice(_ReaderFamily):
    name = "vertex-twice"
    summary = "each vertex the wrong colouring gets wrong listed again, with a colour that mends it"
    shapes = ("colouring",)

    def exploit(self, subject: Subject) -> str | None:
        colouring = _colouring(subject.wrong)
        data: dict[str, Any] = subject.instance.data
        if colouring is None or "edges" not in data or "chromatic" not in data:
            return None
        relisted = _mended(colouring, [(int(u), int(v)) for u, v in data["edges"]], int(data["chromatic"]))
        if not relisted:
            return None
        return subject.wrong.rstrip() + "\n" + "\n".join(f"{v}: Color{c}" for v, c in relisted)


def _mended(colouring: dict[int, int], edges: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """(vertex, colour) for each vertex of a clash or beyond the k allowed colours, given in
    turn the lowest colour no neighbour has: the statements that would mend the colouring
    if a reader took a vertex's last colour."""
    neighbours: dict[int, set[int]] = {}
    for u, v in edges:
        neighbours.setdefault(u, set()).add(v)
        neighbours.setdefault(v, set()).add(u)
    mended = dict(colouring)
    suspects = [w for u, v in edges if colouring.get(u) == colouring.get(v) for w in (v, u)]
    suspects += sorted(v for v, c in colouring.items() if c > k)
    out: list[tuple[int, int]] = []
    for v in dict.fromkeys(suspects):
        if v not in mended:
            continue
        clashing = any(mended.get(u) == mended[v] for u in neighbours.get(v, ()))
        if not clashing and mended[v] <= k:
            continue
        taken = {mended.get(u) for u in neighbours.get(v, ())}
        free = next((c for c in range(1, k + 1) if c not in taken), None)
        if free is not None:
            mended[v] = free
            out.append((v, free))
    return out


# Remarks between the steps of a plan; {step} is a right plan's step at that point.
_GENERIC_REMARK = "This leaves everything else as it is."
_STEP_REMARK = 'I thought about "{step}" at this point, but I keep the step below.'
# Closes the reply: a right plan quoted line by line, under a header that sets it aside.
_ASIDE_HEADER = "A plan I put aside:"


@register_family
class PlanCommentary(_ReaderFamily):
    name = "plan-commentary"
    summary = "remarks between the steps of the wrong plan quoting right steps, then a right plan set aside"
    shapes = ("plan",)

    def exploit(self, subject: Subject) -> str | None:
        steps = _plan_steps(subject.wrong)
        if not steps:
            return None
        right = _plan_steps(subject.right) if subject.right is not None else []
        lines = [steps[0]]
        for i, step in enumerate(steps[1:], 1):
            quote = i % 2 == 1 and i < len(right) and right[i] != step
            lines += [_STEP_REMARK.format(step=right[i]) if quote else _GENERIC_REMARK, step]
        if len(steps) == 1:
            lines.insert(0, _GENERIC_REMARK)
        if right and right != steps:
            return "\n".join([*lines, _ASIDE_HEADER, *right])
        return "\n".join([*lines, "[PLAN END]"])


@register_family
class FullWidthDigits(_ReaderFamily):
    name = "full-width-digits"
    summary = "the wrong answer's digits written as full-width digits (０-９)"
    shapes = ("expression", "colouring", "steps")

    def exploit(self, subject: Subject) -> str | None:
        wrong = _parts(subject, subject.wrong)
        if wrong is None or not any(ch in "0123456789" for ch in wrong[1]):
            return None
        dressed = wrong[1].translate(_FULL_WIDTH)
        if _shape(subject.domain) == "colouring":
            return dressed
        return f"{_lead(wrong[0])}Answer: {dressed}"
