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
  `Problem` naming the file, the line and what is wrong, in one line (a line that is not
  UTF-8, one nested too deeply to parse, one longer than MAX_LINE too). Only a file that
  cannot be read at all (missing, a folder, a device, UTF-16, more than MAX_FILE bytes) is
  a VeriloopError.
- What is read is bounded before it is read: the file must be a regular file (or a pipe)
  of at most MAX_FILE bytes (1 GiB) and a line is read at most MAX_LINE bytes (64 MiB) at
  a time, so no source makes an import hold more than that of its text.
- A reply that is `null` is kept as an empty reply: a recorded wrong answer, not a gap.
- An optional key that is `null` is absent (other systems write `"model": null`).
- `messages` are kept as {role, content} pairs of strings; a message's other keys (an API's
  `name`, ...) are dropped, since nothing downstream reads them.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..datafiles import loads, size_text
from ..errors import VeriloopError
from ..records import Message, storable

DEFAULT_CONDITION = "imported"
DEFAULT_MODEL = "imported"
OPTIONAL = ("condition", "model", "feedback", "messages", "final")
# The most an answers file and one of its lines may hold. Lines are read one at a time, but
# every imported trajectory is held until the run directory is written, so the file's size
# bounds the import's memory; a line bounds what one reply may cost before it is checked.
MAX_FILE = 1 << 30
MAX_LINE = 64 << 20


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words (for messages naming a wrong type)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


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
        raw = {k: v for k, v in raw.items() if not (k in OPTIONAL and v is None)}
        has_one, has_many = "response" in raw, "responses" in raw
        if has_one == has_many:
            raise ValueError('give "response" (one reply) or "responses" (the attempts in order), exactly one')
        if has_one:
            reply = raw.pop("response")
            if reply is not None and not isinstance(reply, str):
                raise ValueError(f'"response" must be a string (the reply) or null, not {json_kind(reply)}')
            raw["responses"] = [reply]
        replies = raw["responses"]
        if not isinstance(replies, list) or not replies:
            raise ValueError('"responses" must be a non-empty list of replies, not '
                             + ("an empty list" if isinstance(replies, list) else json_kind(replies)))
        bad = [i for i, r in enumerate(replies) if r is not None and not isinstance(r, str)]
        if bad:
            raise ValueError(f'"responses" item {bad[0] + 1} must be a string (a reply) or null, '
                             f"not {json_kind(replies[bad[0]])}")
        raw["responses"] = ["" if r is None else r for r in replies]
        return raw

    @field_validator("messages", mode="before")
    @classmethod
    def _role_and_content(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        kept = []
        for i, m in enumerate(value, start=1):
            if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise ValueError(f'message {i} is not an object with "role" and "content" strings')
            kept.append({"role": m["role"], "content": m["content"]})
        return kept

    @field_validator("instance_id", "condition", "model")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _feedback_between_attempts(self) -> AnswerLine:
        if len(self.feedback) > len(self.responses):
            replies = f"{len(self.responses)} repl{'y' if len(self.responses) == 1 else 'ies'}"
            raise ValueError(f'{len(self.feedback)} "feedback" texts for {replies}: at most one after each reply')
        return self


def parse_line(where: str, raw: Any) -> AnswerLine | Problem:
    """`raw` (a decoded JSON value) as an AnswerLine, or the Problem with it."""
    if not isinstance(raw, dict):
        return Problem(where, f"the line is {json_kind(raw)}, not an object with instance_id and response(s)")
    try:
        return AnswerLine.model_validate(storable(raw))
    except ValidationError as exc:
        return Problem(where, _reason(exc.errors()[0]))


def _reason(error: Any) -> str:
    """pydantic's first error in our words: which key, what it must be, what it was."""
    loc = [part for part in error["loc"] if part != "function-after"]
    key = f'"{loc[0]}"' if loc else ""
    if len(loc) > 1 and isinstance(loc[1], int):
        key += f" item {loc[1] + 1}"
    kind, given = error["type"], error.get("input")
    if kind == "missing":
        return f"no {key}"
    if kind == "string_type":
        return f"{key} must be a string, not {json_kind(given)}"
    if kind == "list_type":
        return f"{key} must be a list, not {json_kind(given)}"
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", "")).replace("'", '"')
        return f"{key} must be {expected}, not {json.dumps(given)[:60]}"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{key}: {message}" if key else message


# A UTF-16 file (PowerShell's `>` writes one) has a byte-order mark and NUL bytes on every line.
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def read_answers(path: Path) -> Iterator[tuple[str, AnswerLine | Problem]]:
    """Each non-blank line of an answers file (JSON lines in UTF-8; a byte-order mark is
    allowed): (where, line or problem). A regular file or a pipe, read up to MAX_FILE
    bytes, each line up to MAX_LINE. The file is opened and checked when this is called,
    not when the first line is asked for."""
    return _lines(path, _open(path))


def _lines(path: Path, handle: BinaryIO) -> Iterator[tuple[str, AnswerLine | Problem]]:
    with handle:
        lineno = total = 0
        while data := handle.readline(MAX_LINE + 1):
            lineno += 1
            total += len(data)
            where = f"{path}:{lineno}"
            if len(data) > MAX_LINE and not data.endswith(b"\n"):
                total += _skip_line(handle, path, total)
                yield where, Problem(where, f"a line longer than {size_text(MAX_LINE)}: not read (no recorded "
                                            "answer is that long; check what wrote the file)")
                continue
            _check_total(path, total)
            if lineno == 1:
                if data.startswith(_UTF16_MARKS):
                    raise VeriloopError(f"{path} is UTF-16 text; an answers file is JSON lines in UTF-8: "
                                        "save it as UTF-8")
                data = data.removeprefix(b"\xef\xbb\xbf")
            try:
                text = data.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield where, Problem(where, f"not UTF-8 text (byte {data[exc.start]:#04x} at column {exc.start + 1})")
                continue
            if not text.strip():
                continue
            try:
                raw = loads(text)
            except json.JSONDecodeError as exc:
                yield where, Problem(where, f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            yield where, parse_line(where, raw)


def _open(path: Path) -> BinaryIO:
    """The answers file, opened for reading once it is known to be a regular file (or a
    pipe) of at most MAX_FILE bytes: a device such as /dev/zero is never read."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise VeriloopError(f"{path}: no such file; give an answers file (JSON lines)") from None
    except IsADirectoryError:
        raise VeriloopError(f"{path} is a folder; --format answers reads one JSON lines file") from None
    except OSError as exc:
        raise VeriloopError(f"{path}: cannot be opened ({exc.strerror or type(exc).__name__}); give an answers "
                            "file (JSON lines) you can read") from None
    # The opened file's own status: the path may have been replaced since it was named.
    mode, size = (info := os.fstat(handle.fileno())).st_mode, info.st_size
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        handle.close()
        raise VeriloopError(f"{path} is not a regular file (a device or a socket); --format answers reads one JSON "
                            "lines file")
    if stat.S_ISREG(mode):
        _check_total(path, size, handle)
    return handle


def _check_total(path: Path, size: int, handle: BinaryIO | None = None) -> None:
    if size > MAX_FILE:
        if handle is not None:
            handle.close()
        raise VeriloopError(f"{path} holds more than {size_text(MAX_FILE)}, the most an answers file may hold: "
                            "split it (say, one file per condition) and import each with its own --out")


def _skip_line(handle: BinaryIO, path: Path, read: int) -> int:
    """Read past the rest of an overlong line a block at a time; the bytes skipped."""
    skipped = 0
    while block := handle.readline(1 << 20):
        skipped += len(block)
        _check_total(path, read + skipped)
        if block.endswith(b"\n"):
            break
    return skipped
