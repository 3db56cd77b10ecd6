"""One process at a time in a run or experiment directory.

A process that writes a directory (`veriloop run`'s run directory, an experiment's
directory, each cell's run directory) holds it first: an OS lock (flock) on the file
`.veriloop.lock` inside it, with the holder's PID written in the file for the message a
second process gets. The lock belongs to the open file, so it ends with its holder
however that ends (kill -9 included): nothing is left to clean up. The file stays; only
the OS lock means anything (deleting a held lock file would let a second process lock a
new file of the same name).

A second process is refused at once, in one line naming the holder's PID, rather than
made to wait: a run that waits on another run of its directory could wait for hours
without a word, and would then only find its work done.

flock locks belong to an open file description: one process opening the lock file twice
would conflict with itself. Holds are therefore also kept per process, by the lock
file's identity (device, inode): a second hold of one directory in one process is
refused in words of its own (two runs of one directory at once, from one program), and
`refuse_if_held` passes a directory this process holds. An experiment's directory and
its cells' run directories are separate locks, so holding both is no conflict.

Readers take no lock: the viewer (`veriloop view`, `--serve`) reads complete lines only
and writes nothing. Commands that will write check early, before any model loads
(`refuse_if_held`: `check_run_dir`, an experiment's plan, so `--dry-run` too), and hold
the directory once they write. Without fcntl (Windows) only the per-process part applies.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from ..errors import VeriloopError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".veriloop.lock"
# A holder may have just taken the lock and not yet written its PID, or a `refuse_if_held`
# probe may hold it for an instant: a few short retries before refusing.
_RETRIES = 4
_RETRY_SECONDS = 0.05

_held: dict[tuple[int, int], Path] = {}
_guard = threading.Lock()


class DirectoryHold:
    """A held directory; `release()` (or leaving the `with` block) lets it go."""

    def __init__(self, directory: Path, fd: int, key: tuple[int, int]) -> None:
        self.directory = directory
        self._fd: int | None = fd
        self._key = key

    def release(self) -> None:
        with _guard:
            if self._fd is None:
                return
            _held.pop(self._key, None)
            os.close(self._fd)  # closing the only descriptor of the open file ends its flock
            self._fd = None

    def __enter__(self) -> DirectoryHold:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


def hold(directory: Path) -> DirectoryHold:
    """Hold `directory` (made if missing) for this process, or raise a VeriloopError of one
    line: another process holds it (its PID named), or this process already does."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise VeriloopError(f"cannot use {directory}: {exc.strerror or exc}; choose another --out") from None
    stat = os.fstat(fd)
    key = (stat.st_dev, stat.st_ino)
    with _guard:
        if key in _held:
            os.close(fd)  # another descriptor: closing it leaves this process's flock alone
            raise VeriloopError(f"{directory} is already in use by another run in this process; give each run "
                                "its own --out")
        try:
            _lock(fd, directory)
        except BaseException:
            os.close(fd)
            raise
        _held[key] = directory
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return DirectoryHold(directory, fd, key)


def is_held(directory: Path) -> bool:
    """Whether this process holds `directory`."""
    try:
        stat = (directory / LOCK_FILE).stat()
    except OSError:
        return False
    with _guard:
        return (stat.st_dev, stat.st_ino) in _held


def refuse_if_held(directory: Path) -> None:
    """Raise hold()'s refusal now if another process holds `directory`; pass if nobody
    does or this process does. Writes nothing (a directory that is not there is free)."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # no lock file: never held (or unreadable, and hold() will say so)
    try:
        stat = os.fstat(fd)
        with _guard:
            if (stat.st_dev, stat.st_ino) in _held:
                return
            _lock(fd, directory)
    finally:
        os.close(fd)  # the probe's lock, if it took one, ends here


def _lock(fd: int, directory: Path) -> None:
    if fcntl is None:
        return
    for attempt in range(_RETRIES + 1):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise VeriloopError(f"cannot lock {directory / LOCK_FILE}: {exc.strerror or exc}; choose an --out "
                                    "on a file system that supports file locks") from None
        if attempt < _RETRIES:
            time.sleep(_RETRY_SECONDS)
    pid = _holder_pid(fd)
    holder = f"veriloop process (PID {pid})" if pid else "veriloop process"
    raise VeriloopError(f"{directory} is in use by another {holder}; wait for it to end or choose another --out")


def _holder_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
