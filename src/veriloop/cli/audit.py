"""`veriloop audit`: how often verifiers accept answers known to be wrong, plain and
dressed by exploit families (veriloop.audits)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError
from .common import out, run_on_model, slug
from .options import TYPED, CacheFlags, ModelFlags, grouped
from .run import domain_options

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..audits.report import AuditResult
    from ..models.base import Model


@grouped
def audit(
    domain: Annotated[str, typer.Option(help="Domain whose answers are audited (game24, coloring, blocksworld, "
                                             "gsm8k-cot, humaneval, ...).")] = "game24",
    verifier: Annotated[list[str] | None, typer.Option(
        help="A verifier to audit, repeatable: sound, llm, llm-cot, critic-notool, selfcheck, visible, hidden, "
             "generated, or a plugin's (NAME@T sets a threshold).")] = None,
    family: Annotated[list[str] | None, typer.Option(
        help="An exploit family, repeatable (default: every family that applies to the domain; "
             "--list-families shows them).")] = None,
    list_families: Annotated[bool, typer.Option("--list-families", help="List the exploit families and exit.")] = False,
    model: ModelFlags = TYPED,
    n: Annotated[int, typer.Option("-n", help="Instances.", min=1)] = 10,
    offset: Annotated[int, typer.Option(help="Skip this many instances first.", min=0)] = 0,
    data: Annotated[Path | None, typer.Option(help="Instance file or folder (default: the domain's own).")] = None,
    domain_option: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", help="A domain setting KEY=VALUE, repeatable (VALUE read as JSON when it parses).")] = None,
    answers: Annotated[Path | None, typer.Option(
        help="A run directory: audit the final replies of its trajectories that ground truth scores wrong "
             "(default: the domain's own wrong answers).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Audit directory (resumable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the answers' and families' choices and for calls.")] = 0,
    max_calls: Annotated[int | None, typer.Option(
        help="Stop once the records hold this many model calls (cached ones count).", min=0)] = None,
    concurrency: Annotated[int | None, typer.Option(
        help="Judgements at once (default: as many as the model prefers; 4 sandbox runs without a model).",
        min=1)] = None,
    cache: CacheFlags = TYPED,
) -> None:
    """Audit verifiers: how often each accepts known-wrong answers, plain and dressed by
    exploit families (appended claims, forged tests, hedged answers, ...). Prints per
    verifier and family the false-accept rates with 95% Wilson intervals and the paired
    difference with McNemar's p; writes audit.md, audit.json and one record per
    judgement (kill it and run it again: it resumes)."""
    from ..audits import FAMILIES, families_for
    from ..audits.engine import NoModel, plan_audit
    from ..audits.report import execute_audit
    from ..domains import get_domain
    from ..domains.base import as_base_domain
    from ..progress import ProgressReporter
    from ..tables import print_markdown

    if list_families:
        for name in FAMILIES:
            f = FAMILIES[name]
            out.print(f"{name} ({f.kind}): {f.summary}", highlight=False)
        return
    if not verifier:
        raise VeriloopError("give at least one --verifier (sound, llm, hidden, ...)")
    options = domain_options(domain_option or [])
    dom = get_domain(domain, **options)
    instances = dom.load_instances(str(data) if data else None, n=n, offset=offset)
    plan = plan_audit(dom, verifier, families_for(as_base_domain(dom), family), instances, seed=seed,
                      answers_run=answers)
    label = slug(model.model) if plan.needs_model else "no-model"
    audit_dir = out_dir or Path("runs") / f"audit-{domain}-{label}-seed{seed}"
    source = str(answers) if answers else "the domain's own"
    title = f"audit {domain}: {len(plan.work)} judgements"

    async def job(lm: Model, on_progress: Callable[[int, int], None]) -> AuditResult:
        return await execute_audit(plan, lm, audit_dir, answers=source, domain_options=options, max_calls=max_calls,
                                   concurrency=concurrency, on_progress=on_progress, model_name=model.model
                                   if plan.needs_model else None)

    if not plan.needs_model:
        with ProgressReporter(title) as bar:
            result = asyncio.run(job(NoModel(), bar.update))
        calls = 0
    else:
        result, calls = run_on_model(model.choice(cache), lambda s: job(s.model, s.progress.update), progress=title,
                                     kept_in=audit_dir)
    print_markdown(out, result.report_md.read_text())
    if result.stopped:
        out.print(f"stopped early: {result.stopped}; run again with a higher --max-calls to go on", highlight=False)
    out.print(f"{result.judgements} judgements ({result.new} new), {calls} backend calls; records in {audit_dir}/",
              highlight=False)
