"""inspect_ai evaluation logs as recorded answers (`veriloop import --format inspect`).

A log is read by inspect_ai's own reader (`inspect_ai.log.read_eval_log`, the optional
extra `veriloop[inspect]`), so both of its formats (.eval, .json) and its attachments are
read as inspect reads them. Each sample of a log becomes one answers line: its epochs are
independent samples of one prompt, so their completions, in epoch order, are the line's
`responses` (a pool, not a loop's rounds).

Mapping: `instance_id` is the sample's `metadata["instance_id"]` when present, else its
id; `condition` is "inspect:<task>"; `model` is the eval's model; `messages` are the
sample's input as chat messages (a plain string input is one user message).

Invariants:
- inspect_ai is imported inside `inspect_answers`, never at veriloop's start-up: its
  import takes about 1 s (measured 1.0 s on the two-core machine, against 0.2 s for
  `veriloop.cli`), and only once every log has passed `check_log`: a refused log
  never imports it.
- A sample that errored or has no output is an empty reply (a recorded wrong answer),
  never a crash and never a gap.
- A file that is not an inspect log, or a log whose eval did not succeed, is one
  VeriloopError naming the file; so is a folder holding no log.
- What inspect_ai's reader is given is bounded first (`check_log`): a regular file of at
  most MAX_LOG bytes, and for a .eval (a zip) at most MAX_ENTRIES entries of at most
  MAX_ENTRY bytes each and MAX_LOG in all, uncompressed, checked as declared and while
  decompressing. A zip bomb is one error line, read in blocks of 1 MiB.
- A folder's logs are read in the order of their paths, so an import is the same whatever
  order the files were written in.
"""

from __future__ import annotations

import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from ..datafiles import size_text
from ..errors import VeriloopError
from ..extras import install_command, require

SUFFIXES = (".eval", ".json")
# inspect's own index of a log folder (`write_log_dir_manifest`): log headers, not a log.
MANIFEST = "logs.json"
CONDITION_PREFIX = "inspect:"
# What inspect_ai's reader is given at most (see check_log). A log is read whole into
# memory, so these bound an import's memory; inspect's own logs of thousands of samples
# with full transcripts stay well below them.
MAX_LOG = 1 << 30  # a .json log's size, or the sum of a .eval's entries uncompressed
MAX_ENTRY = 256 << 20  # one entry of a .eval, uncompressed
MAX_ENTRIES = 100_000  # entries of a .eval (a sample is one, and its epochs one each)
MAX_DIRECTORY = 32 << 20  # a .eval's central directory, parsed whole by zipfile
BLOCK = 1 << 20  # what an entry's check holds decompressed at a time
ZIP_ZSTANDARD = 93  # inspect_ai's compression (zipfile knows it once inspect_ai patched it)


def log_files(path: Path) -> list[Path]:
    """The log files `path` names: itself, or every .eval/.json below the folder."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and p.name != MANIFEST)
        if not found:
            raise VeriloopError(f"{path}: no inspect log (.eval or .json) in this folder; give a log file or its folder")
        return found
    if not path.exists():
        raise VeriloopError(f"{path}: no such file; give an inspect log (.eval or .json) or a folder of them")
    if path.suffix not in SUFFIXES:
        raise VeriloopError(f"{path}: not an inspect log (.eval or .json); give a log file or a folder of them")
    return [path]


def check_log(file: Path) -> None:
    """Refuse, in one VeriloopError naming the file and the cap, a log inspect_ai's reader
    should not be given: not a regular file, more than MAX_LOG bytes, or (.eval, a zip) more
    than MAX_ENTRIES entries, an entry of more than MAX_ENTRY bytes uncompressed or more
    than MAX_LOG in all. An entry's size is checked as declared and again as decompressed,
    a block at a time, so a zip bomb costs a block of memory, never its size."""
    try:
        info = file.stat()
    except OSError as exc:
        raise VeriloopError(f"{file}: cannot be read ({exc.strerror or type(exc).__name__}); give an inspect log "
                            "(.eval or .json) you can read") from None
    if not stat.S_ISREG(info.st_mode):
        raise VeriloopError(f"{file}: not a regular file (a device, pipe or socket); give an inspect log file")
    if info.st_size > MAX_LOG:
        raise VeriloopError(f"{file}: more than {size_text(MAX_LOG)}, the most veriloop reads of one log; import a "
                            "log of fewer samples (inspect eval --limit, or one task per log)")
    if file.suffix == ".eval":
        _check_archive(file)


def _check_archive(file: Path) -> None:
    def refuse(what: str) -> NoReturn:
        raise VeriloopError(f"{file}: {what}; import a log of fewer samples (inspect eval --limit, or one task "
                            "per log), or check what wrote the file")

    try:
        with file.open("rb") as handle:
            # The central directory is parsed whole by zipfile: its size bounds it before.
            end = zipfile._EndRecData(handle)  # type: ignore[attr-defined]
            if end is None:
                return  # not a zip: inspect_ai's reader says what it is not, decompressing nothing
            if end[zipfile._ECD_ENTRIES_TOTAL] > MAX_ENTRIES or end[zipfile._ECD_SIZE] > MAX_DIRECTORY:  # type: ignore[attr-defined]
                refuse(f"more than {MAX_ENTRIES} entries in the archive, the most veriloop reads")
            entries = zipfile.ZipFile(handle).infolist()
            if len(entries) > MAX_ENTRIES:
                refuse(f"{len(entries)} entries in the archive, more than the {MAX_ENTRIES} veriloop reads")
            total = 0
            for entry in entries:
                if entry.file_size > MAX_ENTRY:
                    refuse(f"entry {entry.filename[:80]!r} holds {size_text(entry.file_size)} uncompressed, more than "
                           f"the {size_text(MAX_ENTRY)} veriloop reads of one entry")
                total += entry.file_size
                if total > MAX_LOG:
                    refuse(f"its entries hold more than {size_text(MAX_LOG)} uncompressed, the most veriloop reads "
                           "of one log")
            for entry in entries:
                read = 0
                for block in _decompressed(handle, entry):
                    read += len(block)
                    if read > entry.file_size:
                        refuse(f"entry {entry.filename[:80]!r} decompresses to more than the "
                               f"{size_text(entry.file_size)} it declares")
    except VeriloopError:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, struct.error) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise VeriloopError(f"{file}: not an inspect log that inspect_ai can read (not a readable zip archive: "
                            f"{reason}); give a .eval log inspect wrote") from None
    except Exception as exc:  # zstandard's errors
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise VeriloopError(f"{file}: not an inspect log that inspect_ai can read (an entry does not decompress: "
                            f"{reason}); give a .eval log inspect wrote") from None


class _Compressed:
    """An entry's compressed bytes in the archive file, and no further."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.left = handle, size

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(data)
        return data


def _decompressed(handle: BinaryIO, entry: zipfile.ZipInfo) -> Iterator[bytes]:
    """The entry's bytes, decompressed a block of at most BLOCK bytes at a time (zipfile's
    own reader decompresses a zstd read whole, however large it turns out)."""
    handle.seek(entry.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"entry {entry.filename[:80]!r} has no local header")
    name, extra = struct.unpack("<HH", header[26:30])
    handle.seek(entry.header_offset + 30 + name + extra)
    raw = _Compressed(handle, entry.compress_size)
    if entry.flag_bits & 1:
        raise zipfile.BadZipFile(f"entry {entry.filename[:80]!r} is encrypted")
    if entry.compress_type == zipfile.ZIP_STORED:
        while block := raw.read(BLOCK):
            yield block
    elif entry.compress_type == zipfile.ZIP_DEFLATED:
        inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        while not inflate.eof and (data := inflate.unconsumed_tail or raw.read(1 << 16)):
            yield inflate.decompress(data, BLOCK)
    elif entry.compress_type == ZIP_ZSTANDARD:
        import zstandard  # inspect_ai's own dependency: its logs are zstd-compressed

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[arg-type]
        while block := reader.read(BLOCK):
            yield block
    else:
        raise zipfile.BadZipFile(f"entry {entry.filename[:80]!r} is compressed with method {entry.compress_type}, "
                                 "which inspect_ai does not write")


def inspect_answers(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, answers line) for each sample of each inspect log at `path` (a log file or a
    folder). Every log is checked (`check_log`) when this is called, before any is read."""
    require("inspect", "veriloop import --format inspect")
    files = log_files(path)
    for file in files:
        check_log(file)
    # Imported once every log has passed its checks: a refused log costs no import of
    # inspect_ai (a second of CPU).
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:  # found but broken
        raise VeriloopError(f"--format inspect: inspect_ai is installed but does not import ({exc}); "
                            f"reinstall it with: {install_command('inspect')} --force-reinstall") from None

    def answers() -> Iterator[tuple[str, dict[str, Any]]]:
        for file in files:
            try:
                log = read_eval_log(str(file), resolve_attachments=True)
            except Exception as exc:  # a foreign file fails inspect's reader in many ways
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise VeriloopError(f"{file}: not an inspect log that inspect_ai can read ({reason})") from None
            yield from _log_answers(file, log)

    return answers()


def _log_answers(file: Path, log: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if log.status != "success":
        why = f": {log.error.message.strip().splitlines()[0]}" if log.error and log.error.message.strip() else ""
        raise VeriloopError(f"{file}: the eval did not succeed (status {log.status}{why}); "
                            "import a finished log, or finish it with `inspect eval-retry`")
    if not log.samples:
        raise VeriloopError(f"{file}: the log holds no samples; import a log written with its samples")
    by_sample: dict[Any, list[Any]] = {}
    for sample in log.samples:
        by_sample.setdefault(sample.id, []).append(sample)
    for sample_id, epochs in by_sample.items():
        epochs.sort(key=lambda s: s.epoch)
        first = epochs[0]
        instance_id = (first.metadata or {}).get("instance_id")
        yield f"{file}, sample {sample_id}", {
            "instance_id": str(sample_id if instance_id is None else instance_id),
            "responses": [_completion(s) for s in epochs],
            "condition": CONDITION_PREFIX + log.eval.task,
            "model": log.eval.model,
            "messages": _messages(first.input),
        }


def _completion(sample: Any) -> str:
    # An errored sample may hold a partial output; the source counted it as failed, so do we.
    if sample.error is not None or sample.output is None:
        return ""
    return str(sample.output.completion)


def _messages(given: Any) -> list[dict[str, str]]:
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return [{"role": str(message.role), "content": message.text} for message in given]
