"""Files replaced whole: the one way veriloop writes a file that a reader may open at any
moment (a run's config.json and summary, an experiment's results, a report page, a
search corpus, a model's weights).

Invariants:
- A reader sees the old file or the new one, never part of either: the content goes to a
  temporary file beside the target (same directory, so the same file system), which is
  then renamed over it. Two writers of one file each use a temporary name of their own,
  so the last rename wins with a whole file.
- A failed write leaves the old file as it was and no temporary file behind, and is a
  `VeriloopError` of one line: the file, the system's reason, and what to do.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

from .errors import VeriloopError

# What a run's files (records, config, summaries, tables) add to a write error: every
# finished piece of work is on disk, and the same command resumes.
RESUMES = "; what was written before is kept, and running again once it can be written resumes from it"

Content = str | bytes | Callable[[BinaryIO], None]


def write_file(path: Path, content: Content, *, advice: str = RESUMES) -> None:
    """Replace `path` with `content` whole: text (UTF-8), bytes, or a function that writes
    to the open temporary file (for content too large to hold in memory; whatever it
    raises leaves `path` untouched and propagates). An OSError of the write or the rename
    becomes `write_error(path, exc, advice)`."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        if isinstance(content, str):
            temporary.write_text(content, encoding="utf-8")
        elif isinstance(content, bytes):
            temporary.write_bytes(content)
        else:
            with open(temporary, "wb") as handle:
                content(handle)
        os.replace(temporary, path)
    except OSError as exc:
        raise write_error(path, exc, advice) from None
    finally:
        with suppress(OSError):  # gone already after the rename; a failure here changes nothing
            temporary.unlink()


def write_error(path: Path, exc: OSError, advice: str = RESUMES) -> VeriloopError:
    """A failed write to `path` in one line: the file, the system's reason, `advice`."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return VeriloopError(f"cannot write {path}: {reason}{advice}")
