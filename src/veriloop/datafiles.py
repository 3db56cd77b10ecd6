"""Reading the JSON-lines files that domains and tools take as data.

JSON from a file is parsed with `loads`: arrays or objects nested too deeply for Python's
recursive parser are a JSONDecodeError (pointing at the line where the nesting is
deepest) like any other malformed JSON, never a RecursionError.

A file from outside (a recorded release, a run directory's config) is read with
`read_capped`: a regular file of at most a cap of bytes, checked before a byte is read, so
a symlink to /dev/zero, a pipe or a file of many gigabytes never fills memory.

Every value `loads` parses is made storable (lone surrogates from `\\ud800`-style escapes
replaced by U+FFFD, see veriloop.records), so no prompt, cache key or record built from a
data file can fail on its text.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import DataFileError
from .records import storable, storable_text

# A JSON escape of a code point from U+D800 to U+DFFF (json reads only a lower-case "u").
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")

# A run's config.json is a few kilobytes; one larger than this is not a run's.
MAX_CONFIG = 1 << 20


def json_objects(
    path: Path, hint: str, *, file_hint: str | None = None, not_object: str | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file.

    Every problem is a DataFileError naming the file, and the line where there is one.
    `hint` ends messages about a line (what a line should look like); `file_hint`, when
    given, ends those about the file as a whole (which file to give) instead. A line
    that is JSON but not an object is reported as `not_object` when given, since a
    caller may word that as a missing field of its own.
    """
    return json_object_lines(read_text(path, hint if file_hint is None else file_hint), path, hint, not_object)


def json_object_lines(text: str, where: str | Path, hint: str, not_object: str | None = None
                      ) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of JSONL `text` read from `where`
    (a file's name, for messages), with json_objects' errors."""
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = loads(line)
        except ValueError as exc:
            reason = getattr(exc, "msg", str(exc))
            raise DataFileError(f"{where}, line {number}: not valid JSON ({reason}); {hint}") from None
        if not isinstance(item, dict):
            problem = f"expected a JSON object; {hint}" if not_object is None else not_object
            raise DataFileError(f"{where}, line {number}: {problem}")
        rows.append((number, item))
    return rows


def read_text(path: Path, hint: str) -> str:
    """The file's text, or a DataFileError of one line ending in `hint`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFileError(f"{path}: file not found; {hint}") from None
    except IsADirectoryError:
        raise DataFileError(f"{path}: is a folder, not a file; {hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        # The first line only: messages are one line, and decode errors run long.
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DataFileError(f"{path}: cannot read the file ({reason}); {hint}") from None


def json_list_or_lines(path: Path, hint: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) for a JSON list ("item N") or a JSONL file ("line N")."""
    text = read_text(path, hint)
    if not text.lstrip().startswith("["):
        return [(f"line {n}", item) for n, item in json_objects(path, hint)]
    try:
        items = loads(text)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); {hint}") from None
    rows = []
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise DataFileError(f"{path}, item {i}: expected a JSON object; {hint}")
        rows.append((f"item {i}", item))
    return rows


class CappedReadError(Exception):
    """Why `read_capped` read nothing, in a few words ("a folder, not a file", "more than
    256 MiB"), for a message of the caller's that names the file and what to do."""


def read_capped(path: Path, cap: int) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `cap` bytes (checked on
    the opened file before it is read; a pipe is refused, never waited on). A missing file
    is FileNotFoundError; every other reason to read nothing is a CappedReadError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CappedReadError(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise CappedReadError("a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise CappedReadError("a device, pipe or socket, not a file")
        if info.st_size > cap:
            raise CappedReadError(f"more than {size_text(cap)}")
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        raise CappedReadError(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise CappedReadError(f"grew past {size_text(cap)} while it was read")
    return data


def size_text(count: int) -> str:
    """A size in bytes as a person reads it: 1 GiB, 256 MiB, 1000 bytes."""
    if count >= 1 << 30:
        return f"{round(count / (1 << 30), 1):g} GiB"
    return f"{round(count / (1 << 20), 1):g} MiB" if count >= 1 << 20 else f"{count} bytes"


def loads(text: str) -> Any:
    """`json.loads`, with nesting too deep to parse a JSONDecodeError like other bad JSON,
    and the value made storable."""
    try:
        value = json.loads(text)
        # A lone surrogate in a parsed value comes from the text: from one of its own
        # characters or a `\\ud800`-style escape. Text with neither (nearly all) skips the walk.
        if storable_text(text)[1] == 0 and _SURROGATE_ESCAPE.search(text) is None:
            return value
        return storable(value)
    except RecursionError:
        raise json.JSONDecodeError("arrays or objects nested too deeply", text, _deepest_offset(text)) from None


def deepest_line(text: str) -> int:
    """The line (1-based) where brackets ([ and {, outside quoted strings) nest deepest
    first: where to point when a JSON or TOML text is nested too deeply to parse."""
    return text.count("\n", 0, _deepest_offset(text)) + 1


def _deepest_offset(text: str) -> int:
    depth = deepest = at = 0
    quote: str | None = None
    escaped = False
    for offset, char in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, offset
        elif char in "]}":
            depth -= 1
    return at
