"""veriloop's interchange format for recorded answers ("answers"): JSON lines, one object
per instance and condition.

A line holds `instance_id` (the domain's id, as `veriloop run --data` names the instance)
and either `response` (one reply) or `responses` (the attempts in order: a loop's rounds
or independent samples), with optional `condition` (the strategy column, default
"imported"), `model`, `feedback` (the texts sent back between attempts), `messages` (the
first prompt as sent) and `final` ("last", the default: the system's answer is its last
attempt; "first-accepted": a loop stopped by a sound verifier, whose answer is the first
attempt the domain's verifier accepts). Other keys ride along unread, so another system's
metadata does not stop an import.

Invariants:
- Reading never raises on a line's content: every line is either an `AnswerLine` or a
  `Problem` naming the file, the line and what is wrong, in one line.
- A reply that is `null` is kept as an empty reply: a recorded wrong answer, not a gap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..errors import VeriloopError
from ..records import Message, storable

DEFAULT_CONDITION = "imported"
DEFAULT_MODEL = "imported"


@dataclass(frozen=True)
class Problem:
    """A line that was not imported (or imported with a note), and why, in one line."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class AnswerLine(BaseModel):
    """One instance under one condition: its recorded attempts, in order."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instance_id: str
    responses: list[str]
    condition: str = DEFAULT_CONDITION
    model: str = DEFAULT_MODEL
    feedback: list[str] = []
    messages: list[Message] | None = None
    final: Literal["last", "first-accepted"] = "last"

    @model_validator(mode="before")
    @classmethod
    def _one_or_many(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        has_one, has_many = "response" in raw, "responses" in raw
        if has_one == has_many:
            raise ValueError('give "response" (one reply) or "responses" (the attempts in order), exactly one')
        raw = dict(raw)
        if has_one:
            raw["responses"] = [raw.pop("response")]
        replies = raw["responses"]
        if not isinstance(replies, list) or not replies:
            raise ValueError('"responses" must be a non-empty list of replies')
        bad = [i for i, r in enumerate(replies) if r is not None and not isinstance(r, str)]
        if bad:
            raise ValueError(f"reply {bad[0] + 1} is {type(replies[bad[0]]).__name__}, not a string")
        raw["responses"] = ["" if r is None else r for r in replies]
        return raw

    @field_validator("instance_id", "condition", "model")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _feedback_between_attempts(self) -> AnswerLine:
        if len(self.feedback) > len(self.responses):
            raise ValueError(f'{len(self.feedback)} "feedback" texts for {len(self.responses)} replies: '
                             "at most one after each reply")
        return self


def parse_line(where: str, raw: Any) -> AnswerLine | Problem:
    """`raw` (a decoded JSON value) as an AnswerLine, or the Problem with it."""
    if not isinstance(raw, dict):
        return Problem(where, f"a JSON {type(raw).__name__}, not an object with instance_id and response(s)")
    try:
        return AnswerLine.model_validate(storable(raw))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "missing":
            return Problem(where, f'no "{field}"')
        return Problem(where, f'"{field}": {message}' if field else message)


def read_answers(path: Path) -> Iterator[tuple[str, AnswerLine | Problem]]:
    """Each non-blank line of an answers file (JSON lines): (where, line or problem)."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise VeriloopError(f"{path}: no such file; give an answers file (JSON lines)") from None
    except IsADirectoryError:
        raise VeriloopError(f"{path} is a folder; --format answers reads one JSON lines file") from None
    with handle:
        lineno = 0
        try:
            for lineno, text in enumerate(handle, start=1):  # noqa: B007 (lineno is read after the loop)
                if not text.strip():
                    continue
                where = f"{path}:{lineno}"
                try:
                    raw = json.loads(text)
                except json.JSONDecodeError as exc:
                    yield where, Problem(where, f"not JSON ({exc.msg} at column {exc.colno})")
                    continue
                yield where, parse_line(where, raw)
        except UnicodeDecodeError:
            raise VeriloopError(f"{path}:{lineno + 1}: not UTF-8 text; an answers file is JSON lines in UTF-8") from None
