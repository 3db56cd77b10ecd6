"""Append-only JSON-lines record files that survive a crash.

A record is appended whole and fsynced; a last line left without its newline by a crash
is cut off before the next append, so the file always parses and resumes cleanly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import VeriloopError

R = TypeVar("R", bound=BaseModel)


def drop_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as f:
        f.truncate(data.rfind(b"\n") + 1)


def load_records(path: Path, record: type[R]) -> list[R]:
    """Every record in the file, after dropping a torn last line."""
    drop_torn_tail(path)
    if not path.exists():
        return []
    found: list[R] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                found.append(record.model_validate_json(line))
            except ValidationError:
                raise VeriloopError(f"{path}, line {lineno}: not a {record.__name__} record; use a fresh --out") from None
    return found


def append_record(path: Path, record: BaseModel) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(record.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())
