"""The audits a report shows: audit directories (`veriloop audit --out DIR`, or an
experiment's `<model>/<domain>/audit-seed<S>/`) read into the page's payload.

Invariants (as for runs, see data.py):
- Reading never runs code or writes. An audit's audit.json and audit.jsonl are read
  through runs.jsonl.run_file, so one that is a symbolic link or resolves outside its
  directory is refused; directories found by searching a tree are never reached through
  a linked directory (rglob follows none).
- audit.json must have the shape audits.report.write_report gives it (its meta and rows
  of AuditRow), checked field by field; anything else is one line naming the file. The
  records are audits.engine.AuditItem lines, read without cutting a torn last line (an
  audit may still be appending).
- Per (verifier, family) of the report's rows, the page gets the dressed answers the
  verifier accepted (every one a false accept: the answers are known wrong), each text
  stored once in the payload's `S` table, with whether the same answer plain was
  accepted too (then the dressing did not make the difference).
- veriloop.audits is imported only when an audit directory is found: a report of runs
  alone does not pay for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..errors import VeriloopError
from ..runs.jsonl import read_records, run_file

if TYPE_CHECKING:
    from ..audits.report import AuditRow
    from .data import Interner

REPORT = "audit.json"  # audits.report.REPORT_JSON
RECORDS = "audit.jsonl"  # audits.engine.RECORDS
PLAIN = "plain"  # audits.engine.PLAIN


@dataclass
class AuditSource:
    """One audit directory and how the page names it."""

    label: str
    directory: Path


def audit_directories(path: Path) -> list[Path]:
    """`path` itself when it holds audit.json (or is one), else every directory below it
    that does, in path order. A linked audit.json is refused (run_file)."""
    if path.is_file():
        return [run_file(path.parent, REPORT).parent] if path.name == REPORT else []
    if (path / REPORT).is_file() or (path / REPORT).is_symlink():
        return [run_file(path, REPORT).parent]
    found = [run_file(f.parent, REPORT).parent for f in path.rglob(REPORT)]
    return sorted((d for d in found if (d / REPORT).is_file()), key=str)


def discover_audits(paths: Sequence[Path]) -> list[AuditSource]:
    """The audit directories the paths hold, each once, labelled by its path under the
    path given (its own name when it was given itself), prefixed by that path's name when
    several paths share the report."""
    sources: list[AuditSource] = []
    seen: set[Path] = set()
    for path in paths:
        if not path.exists():
            continue  # data.discover says so
        for directory in audit_directories(path):
            if directory.resolve() in seen:
                continue
            seen.add(directory.resolve())
            base = path if path.is_dir() and directory != path else directory.parent
            label = directory.relative_to(base).as_posix()
            if len(paths) > 1 and base == path:
                label = f"{path.resolve().name}/{label}"
            sources.append(AuditSource(label, directory))
    return sources


class _Family(BaseModel):
    name: str
    kind: str
    summary: str


class AuditReport(BaseModel):
    """audit.json as audits.report.write_report writes it (meta and rows)."""

    domain: str
    model: str
    seed: int
    answers: str
    instances: int
    known_wrong: int
    dropped: int
    verifiers: list[str]
    families: list[_Family]
    judgements: int
    calls: int
    stopped: str | None = None
    rows: list[AuditRow]


def _report_model() -> type[AuditReport]:
    if not AuditReport.__pydantic_complete__:  # AuditRow is imported only once an audit is read
        from ..audits.report import AuditRow

        AuditReport.model_rebuild(_types_namespace={"AuditRow": AuditRow})
    return AuditReport


def read_report(directory: Path) -> AuditReport:
    """The directory's audit.json, its shape checked (see the module's invariants)."""
    path = run_file(directory, REPORT)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise VeriloopError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return _report_model().model_validate(json.loads(raw))
    except (ValueError, ValidationError):  # bad JSON, bad UTF-8 or the wrong shape
        raise VeriloopError(f"{path} is not an audit report (audit.json as `veriloop audit` writes it); "
                            "run the audit again to rewrite it") from None


def accepted_answers(directory: Path, rows: Sequence[AuditRow], intern: Interner) -> list[dict[str, Any]]:
    """Per (verifier, family) row but the plain ones, the dressed answers accepted, in
    record order: [instance id, answer index, answer kind, text (in S), plain accepted]."""
    from ..audits.engine import AuditItem

    # A key judged again (its text changed since) is read from its last line, as the audit does.
    items = list({i.key: i for i in read_records(run_file(directory, RECORDS), AuditItem, "judgement")}.values())
    plain = {i.key: i.accepted for i in items if i.family == PLAIN}
    accepted: dict[tuple[str, str], list[AuditItem]] = {}
    for i in items:
        if i.accepted is True and i.text is not None and i.family != PLAIN:
            accepted.setdefault((i.verifier, i.family), []).append(i)
    return [{"verifier": row.verifier, "family": row.family, "items": [
        [i.instance_id, i.answer, i.answer_kind, intern.text(i.text),
         int(plain.get((i.instance_id, i.answer, PLAIN, i.verifier)) is True)]
        for i in accepted.get((row.verifier, row.family), [])]} for row in rows if row.family != PLAIN]


def audit_payload(sources: Sequence[AuditSource], intern: Interner) -> list[dict[str, Any]]:
    """The page's audits: each one's meta, rows and accepted dressed answers."""
    out = []
    for source in sources:
        report = read_report(source.directory)
        meta = report.model_dump(mode="json", exclude={"rows"})
        out.append({
            "label": source.label, "path": str(source.directory), **meta,
            "rows": [r.model_dump(mode="json") for r in report.rows],
            "accepted": accepted_answers(source.directory, report.rows, intern),
        })
    return out
