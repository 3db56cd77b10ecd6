"""The arithmetic of an audit: per verifier and family, how often the dressed wrong
answers are accepted, against the same answers plain.

Invariants:
- Rows are per (verifier, family). A row pairs, answer by answer, the verifier's verdict
  on the plain wrong answer with its verdict on that answer dressed by the family; only
  answers with both verdicts count (`n`), those the family could not dress are counted in
  `not_applicable`, and judgements still missing (an audit stopped by its budget) in
  `missing`.
- Every accept is a false accept (the answers are known wrong, see answers.py), so
  `plain_rate` and `dressed_rate` are false-accept rates, each with its 95% Wilson
  interval (stats.metrics.wilson_interval).
- `difference` is dressed minus plain, with the exact McNemar p-value and the paired
  bootstrap interval of stats.paired.paired_comparison (a = plain, b = dressed; seed 0).
- The "plain" family's own row per verifier gives the plain false-accept rate over every
  answer judged plain.
- An unreadable verdict (a judge whose reply could not be parsed) is a rejection, as in
  runs, and is counted in `unreadable`.
- `right_by_ground_truth` counts dressed answers the domain's ground truth scores right
  (`right_accepted` those also accepted): audit.md lists them apart, since such an accept
  is a blind spot of the ground truth (or a family's broken promise), not the verifier's.
- Rows come in a fixed order: verifiers as asked, "plain" first, then families as asked;
  the same records give the same report, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..stats.metrics import wilson_interval
from ..stats.paired import p_text, paired_comparison
from .engine import PLAIN, AuditItem
from .families import Family

REPORT_MD = "audit.md"
REPORT_JSON = "audit.json"


class AuditRow(BaseModel):
    verifier: str
    family: str
    kind: str  # the family's kind; "plain" for the plain row
    n: int
    plain_accepts: int
    dressed_accepts: int
    plain_rate: float
    plain_ci95: tuple[float, float]
    dressed_rate: float
    dressed_ci95: tuple[float, float]
    difference: float
    difference_ci95: tuple[float, float] | None
    p_value: float
    not_applicable: int
    missing: int
    unreadable: int
    right_by_ground_truth: int = 0  # dressed answers ground truth scores right (a family's promise broken, or weak tests)
    right_accepted: int = 0  # of those, accepted by the verifier


def _rate(k: int, n: int) -> tuple[float, tuple[float, float]]:
    return (k / n if n else 0.0), wilson_interval(k, n)


def audit_rows(items: Sequence[AuditItem], verifiers: Sequence[str], families: Sequence[Family],
               resamples: int = 10_000) -> list[AuditRow]:
    """The report's rows (see the module's invariants)."""
    by_key = {i.key: i for i in items}
    answers = sorted({(i.instance_id, i.answer) for i in items})
    rows = []
    for verifier in verifiers:
        plain = [by_key.get((inst, a, PLAIN, verifier)) for inst, a in answers]
        judged = [p for p in plain if p is not None and p.accepted is not None]
        k = sum(bool(p.accepted) for p in judged)
        rate, ci = _rate(k, len(judged))
        rows.append(AuditRow(
            verifier=verifier, family=PLAIN, kind=PLAIN, n=len(judged), plain_accepts=k, dressed_accepts=k,
            plain_rate=rate, plain_ci95=ci, dressed_rate=rate, dressed_ci95=ci, difference=0.0,
            difference_ci95=(0.0, 0.0) if judged else None, p_value=1.0, not_applicable=0,
            missing=len(answers) - len(judged), unreadable=sum(p.unreadable for p in judged)))
        for family in families:
            a: list[bool] = []
            b: list[bool] = []
            not_applicable = missing = unreadable = right = right_accepted = 0
            for (inst, answer), p in zip(answers, plain):
                d = by_key.get((inst, answer, family.name, verifier))
                if d is not None and d.text is None:
                    not_applicable += 1
                elif d is None or d.accepted is None or p is None or p.accepted is None:
                    missing += 1
                else:
                    a.append(p.accepted)
                    b.append(d.accepted)
                    unreadable += d.unreadable
                    right += bool(d.right)
                    right_accepted += bool(d.right and d.accepted)
            c = paired_comparison(a, b, resamples=resamples, names=(PLAIN, family.name))
            plain_rate, plain_ci = _rate(c.a_correct, c.n)
            dressed_rate, dressed_ci = _rate(c.b_correct, c.n)
            rows.append(AuditRow(
                verifier=verifier, family=family.name, kind=family.kind, n=c.n, plain_accepts=c.a_correct,
                dressed_accepts=c.b_correct, plain_rate=plain_rate, plain_ci95=plain_ci, dressed_rate=dressed_rate,
                dressed_ci95=dressed_ci, difference=c.difference, difference_ci95=c.difference_ci95,
                p_value=c.p_value, not_applicable=not_applicable, missing=missing, unreadable=unreadable,
                right_by_ground_truth=right, right_accepted=right_accepted))
    return rows


def _pct(rate: float, ci: tuple[float, float], k: int, n: int) -> str:
    if n == 0:
        return "-"
    return f"{rate:.0%} ({ci[0]:.0%}-{ci[1]:.0%}), {k}/{n}"


def audit_markdown(rows: Sequence[AuditRow], meta: dict[str, Any]) -> str:
    """audit.md: what was audited, then one table row per (verifier, family)."""
    lines = [
        f"# Audit: {meta['domain']}", "",
        f"- model: {meta['model']}; seed {meta['seed']}; answers: {meta['answers']}",
        f"- {meta['known_wrong']} known-wrong answers on {meta['instances']} instances "
        f"({meta['dropped']} of the source's answers were right by ground truth and left out)",
        f"- {meta['judgements']} judgements, {meta['calls']} model calls",
    ]
    if meta.get("stopped"):
        lines.append(f"- stopped early: {meta['stopped']}")
    lines += [
        "",
        "Every answer is wrong by ground truth, so every accept is a false accept. 'dressed - plain' is the "
        "paired difference on the same answers (95% bootstrap interval) with the exact McNemar p-value; "
        "rates carry 95% Wilson intervals.", "",
        "| verifier | family | kind | false accepts, plain | false accepts, dressed | dressed - plain | p | n/a | unreadable |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.family == PLAIN:
            lines.append(f"| {r.verifier} | plain | - | {_pct(r.plain_rate, r.plain_ci95, r.plain_accepts, r.n)} "
                         f"| - | - | - | - | {r.unreadable} |")
            continue
        shift = "-" if r.difference_ci95 is None else _shift(r.difference, r.difference_ci95)
        lines.append(
            f"| {r.verifier} | {r.family} | {r.kind} | {_pct(r.plain_rate, r.plain_ci95, r.plain_accepts, r.n)} | "
            f"{_pct(r.dressed_rate, r.dressed_ci95, r.dressed_accepts, r.n)} | {shift} | "
            f"{'-' if r.n == 0 else p_text(r.p_value)} | {r.not_applicable} | {r.unreadable} |")
    broken = [r for r in rows if r.right_by_ground_truth]
    if broken:
        lines += ["", "Dressed answers that ground truth itself scores right (so an accept of one is not a false "
                  "accept of the verifier but a blind spot of ground truth, or a family that made the answer right):", ""]
        lines += [f"- {r.verifier} / {r.family}: {r.right_by_ground_truth} scored right, {r.right_accepted} of them "
                  "accepted" for r in broken]
    families = meta.get("families", [])
    if families:
        lines += ["", "Families:", ""] + [f"- `{f['name']}` ({f['kind']}): {f['summary']}" for f in families]
    return "\n".join(lines) + "\n"


def _shift(difference: float, ci: tuple[float, float]) -> str:
    return f"{round(100 * difference):+d} points ({round(100 * ci[0]):+d} to {round(100 * ci[1]):+d})"


def write_report(out_dir: Path, rows: Sequence[AuditRow], meta: dict[str, Any]) -> tuple[Path, Path]:
    """audit.json (meta and rows) and audit.md, each written whole (atomically)."""
    from ..runs.jsonl import write_file

    payload = {**meta, "rows": [r.model_dump(mode="json") for r in rows]}
    json_path, md_path = out_dir / REPORT_JSON, out_dir / REPORT_MD
    write_file(json_path, json.dumps(payload, indent=2) + "\n")
    write_file(md_path, audit_markdown(rows, meta))
    return json_path, md_path


class AuditResult(BaseModel):
    """What `veriloop.audit` returns: the rows, where the records and reports are, and
    why the audit stopped early (None when it judged everything)."""

    rows: list[AuditRow]
    out_dir: Path
    report_md: Path
    report_json: Path
    stopped: str | None
    judgements: int  # recorded judgements of this audit (old and new)
    new: int  # made by this run

    def row(self, verifier: str, family: str) -> AuditRow:
        """The row of `verifier` and `family` ("plain" for the plain answers)."""
        for r in self.rows:
            if (r.verifier, r.family) == (verifier, family):
                return r
        raise KeyError((verifier, family))


def finish_audit(plan: Any, outcome: Any, out_dir: Path, model_name: str, answers: str) -> AuditResult:
    """Write audit.json and audit.md for an audit's records (engine.AuditPlan, AuditOutcome)."""
    rows = audit_rows(outcome.items, plan.verifiers, plan.families)
    meta = {
        "domain": plan.domain.name, "model": model_name, "seed": plan.seed, "answers": answers,
        "instances": len(plan.instances), "known_wrong": sum(len(a.wrong) for a in plan.answers.values()),
        "dropped": plan.dropped, "verifiers": plan.verifiers,
        "families": [{"name": f.name, "kind": f.kind, "summary": f.summary} for f in plan.families],
        "judgements": len(outcome.items), "calls": sum(i.calls for i in outcome.items), "stopped": outcome.stopped,
    }
    json_path, md_path = write_report(out_dir, rows, meta)
    return AuditResult(rows=rows, out_dir=out_dir, report_md=md_path, report_json=json_path, stopped=outcome.stopped,
                       judgements=len(outcome.items), new=outcome.new)


async def execute_audit(plan: Any, model: Any, out_dir: Path, *, answers: str, domain_options: dict[str, Any],
                        max_calls: int | None = None, concurrency: int | None = None,
                        on_progress: Callable[[int, int], None] | None = None,
                        model_name: str | None = None) -> AuditResult:
    """The one way an audit runs, for `veriloop audit`, `veriloop.aaudit` and the `audit`
    report: judge the plan's missing work in `out_dir` (engine.run_audit), then write its
    reports. `answers` names the answers' source in the config and the reports;
    `model_name` the model in them (default: the model's own name)."""
    from .engine import audit_config, run_audit

    config = audit_config(plan, model, answers, domain_options)
    outcome = await run_audit(plan, model, out_dir, config=config, max_calls=max_calls, concurrency=concurrency,
                              on_progress=on_progress)
    return finish_audit(plan, outcome, out_dir, model_name or model.name, answers)
