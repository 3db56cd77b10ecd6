"""Append-only JSON-lines record files that survive a crash.

A record is appended whole and fsynced; a last line left without its newline by a crash
is cut off before the next append, so the file always parses and resumes cleanly.

`RecordWriter` does the appending on a thread of its own, so a run's event loop never
waits on the disk: records handed to it while one batch is being fsynced go out together
in the next (group commit), and `await writer.append(record)` returns only once that
record's batch is on disk. A crash (kill -9) therefore loses no acknowledged record; a
record of the batch in flight may or may not be there whole, and a torn last line is cut
off on the next load, so a resumed run finds each finished record once.

A write that fails (a full disk, a lost permission) is a VeriloopError of one line naming
the file and the system's reason, for the records and for the small files beside them
(`write_file`, veriloop.files' one atomic write, named here for the run directory's
writers: config.json, summary.json, experiment.json, results); what was written before
it stays, and running again resumes from it.

Reading is not writing: `load_records` (the writer's side: a run resuming in the
directory it holds) cuts a torn last line; every reader of a run directory it does not
own (the viewer, `rescore`'s source) uses `read_records`, which ignores that line and
changes nothing, and `run_file`, which refuses a run's file that is a symbolic link or
resolves outside its directory (reading through it would read, or for a writer cut,
a file elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import VeriloopError
from ..files import write_error, write_file
from ..groupcommit import GroupCommit

R = TypeVar("R", bound=BaseModel)

__all__ = ["RecordWriter", "drop_torn_tail", "load_records", "parse_records", "read_records", "run_file", "write_error",
           "write_file"]


def drop_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as f:
        f.truncate(data.rfind(b"\n") + 1)


def parse_records(path: Path, lines: Iterable[str | bytes], record: type[R], what: str, advice: str = "") -> list[R]:
    """The records of `path`'s complete lines, blank ones skipped; a line that is not one
    is an error naming it, as `what` (e.g. "trajectory"), followed by `advice`."""
    found: list[R] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(record.model_validate_json(line))
        except ValidationError:
            raise VeriloopError(f"{path}, line {lineno}: not a {what} record{advice}") from None
    return found


def run_file(directory: Path, name: str) -> Path:
    """`directory / name`, a file of a run directory read by someone who does not own it:
    a VeriloopError (one line) when it is a symbolic link or resolves outside the
    directory. Whether it exists is the caller's question."""
    path = directory / name
    if path.is_symlink():
        raise VeriloopError(f"{path} is a symbolic link; a run directory's {name} must be a file in it "
                            "(copy the file in, or name the directory it points into)")
    if path.exists() and not path.resolve().is_relative_to(directory.resolve()):
        raise VeriloopError(f"{path} resolves outside {directory}; a run directory's {name} must be a file in it")
    return path


def read_records(path: Path, record: type[R], what: str | None = None) -> list[R]:
    """Every complete record in the file, read only: a last line without its newline is a
    record a run is still appending (or one a crash tore) and is left as it is, unread;
    a missing file holds none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise VeriloopError(f"{path}: cannot read it ({exc.strerror})") from None
    complete = data[: data.rfind(b"\n") + 1]
    return parse_records(path, complete.split(b"\n"), record, what or record.__name__)


def load_records(path: Path, record: type[R]) -> list[R]:
    """Every record in the file, after dropping a torn last line: for the writer that
    holds the file's directory only (see the module docstring)."""
    drop_torn_tail(path)
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return parse_records(path, f, record, record.__name__, "; use a fresh --out")


class RecordWriter:
    """Appends records to one JSON-lines file from a background thread, one write and one
    fsync per batch (see the module docstring). One writer per file and process; `append`
    may be awaited from any event loop.

    A failed write (a full disk, a lost permission) fails every record of its batch and
    every later one, with the same error: the batch may have left part of a line, so
    nothing more is appended after it (the next load cuts the torn line off)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._commits = GroupCommit(self._write, f"record writer for {path.name}", stop_on_error=True)

    async def append(self, record: BaseModel) -> None:
        """Return once `record` is on disk (fsynced); raise what the write raised if it failed."""
        # Serialised here, not on the writer thread: what is written is the record as it
        # was when handed over, and one that cannot be serialised fails only its caller.
        await self._commits.submit((record.model_dump_json() + "\n").encode("utf-8"))

    async def aclose(self) -> None:
        """Write what is pending and stop the thread, without blocking the event loop."""
        await self._commits.aclose()

    def close(self) -> None:
        self._commits.close()

    def _write(self, lines: list[bytes]) -> None:
        created = not self.path.exists()
        try:
            with open(self.path, "ab") as f:
                f.write(b"".join(lines))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise write_error(self.path, exc) from None
        if created:  # the new file's directory entry too, so a power cut cannot lose the whole file
            _fsync_dir(self.path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # not every platform opens directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
