"""Paths in, one HTML report out: what `veriloop view` and bench/view_scale.py call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import data, page


@dataclass
class Built:
    html: str
    trajectories: int
    audits: int = 0

    @property
    def size(self) -> int:
        return len(self.html.encode("utf-8"))

    @property
    def bytes_per_trajectory(self) -> float:
        return self.size / self.trajectories if self.trajectories else 0.0


def title_for(paths: Sequence[Path]) -> str:
    return "veriloop · " + ", ".join(p.resolve().name or str(p) for p in paths)


def build(
    paths: Sequence[Path], title: str | None = None, *, live: bool = False, version: str = "",
    references: bool = True, allow_empty: bool = False,
) -> Built:
    """The report of every trajectory and audit under `paths`. `live`: the page polls the server
    for `version` and reloads when it changes. `references`: show each instance's
    reference answer, as the run recorded it (data.load_references; nothing is rebuilt)."""
    loaded = data.load(paths, allow_empty=allow_empty)
    refs = data.load_references(loaded.sources) if references else None
    payload = data.build_payload(loaded, title or title_for(paths), live=live, references=refs)
    payload["version"] = version
    return Built(page.render(payload), len(loaded.trajectories), len(loaded.audits))
