"""`batches.jsonl`: a run directory's record of the batches its model calls went in.

One JSON object per line, each appended and fsynced before the step it records is
taken or right after it is done, so a kill -9 at any moment leaves a journal that says
which batch holds which call:

    {"event": "intent", "intent": I, "provider": P, "identity": M, "time": T,
     "calls": [[custom_id, call key, first sample, count], ...]}      before the submit request
    {"event": "submitted", "intent": I, "batch": B}                    once the provider named it
    {"event": "collected", "intent": I}                                every result is in the call cache
    {"event": "failed", "intent": I, "why": ...}                       the batch failed as a whole
    {"event": "abandoned", "intent": I}                                the provider never made it

An intent without a later line was cut by a kill during its submit: whether the batch
exists is asked of the provider before anything is sent again. The file is read as
hostile data: a torn last line or a line of the wrong shape is skipped, never run. No
key, URL or prompt is written: call keys are hashes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOURNAL = "batches.jsonl"
ENDED = ("collected", "failed", "abandoned")


@dataclass
class Intent:
    """One batch as the journal knows it: its calls by custom_id ((key, first, count))."""

    intent: str
    provider: str
    identity: str
    time: float
    calls: dict[str, tuple[str, int, int]]
    batch: str | None = None
    ended: str | None = None  # one of ENDED


class Journal:
    """The journal of one run directory (its process holds the directory)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / JOURNAL

    def append(self, entry: dict[str, Any]) -> None:
        """Write one line and make it durable before returning."""
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        new = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            # A torn last line (a kill mid-write) would glue itself to this one: start afresh.
            if not new and os.fstat(fd).st_size and not _ends_with_newline(self.path):
                line = "\n" + line
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:  # the file's name in its directory is durable too
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def intents(self, provider: str, identity: str) -> list[Intent]:
        """The intents of this model (provider and identity), in journal order, with what
        later lines say of each."""
        found: dict[str, Intent] = {}
        for entry in self._entries():
            name = entry.get("intent")
            event = entry.get("event")
            if not isinstance(name, str):
                continue
            if event == "intent":
                calls = _calls(entry.get("calls"))
                stamp = entry.get("time")
                if (calls is not None and entry.get("provider") == provider and entry.get("identity") == identity
                        and isinstance(stamp, (int, float)) and name not in found):
                    found[name] = Intent(name, provider, identity, float(stamp), calls)
            elif name in found:
                if event == "submitted" and isinstance(entry.get("batch"), str):
                    found[name].batch = entry["batch"]
                elif event in ENDED:
                    found[name].ended = event
        return list(found.values())

    def _entries(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return []
        entries = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn line
            if isinstance(entry, dict):
                entries.append(entry)
        return entries


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _calls(value: Any) -> dict[str, tuple[str, int, int]] | None:
    if not isinstance(value, list):
        return None
    calls = {}
    for item in value:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str) and isinstance(item[1], str)
                and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in item[2:])):
            return None
        calls[item[0]] = (item[1], item[2], item[3])
    return calls
