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
  `veriloop.cli`).
- A sample that errored or has no output is an empty reply (a recorded wrong answer),
  never a crash and never a gap.
- A file that is not an inspect log, or a log whose eval did not succeed, is one
  VeriloopError naming the file; so is a folder holding no log.
- A folder's logs are read in the order of their paths, so an import is the same whatever
  order the files were written in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import VeriloopError

SUFFIXES = (".eval", ".json")
# inspect's own index of a log folder (`write_log_dir_manifest`): log headers, not a log.
MANIFEST = "logs.json"
CONDITION_PREFIX = "inspect:"


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


def inspect_answers(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, answers line) for each sample of each inspect log at `path` (a log file or a folder)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise VeriloopError("--format inspect reads logs with inspect_ai: pip install 'veriloop[inspect]'") from None
    for file in log_files(path):
        try:
            log = read_eval_log(str(file), resolve_attachments=True)
        except Exception as exc:  # a foreign file fails inspect's reader in many ways
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise VeriloopError(f"{file}: not an inspect log that inspect_ai can read ({reason})") from None
        yield from _log_answers(file, log)


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
