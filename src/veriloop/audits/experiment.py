"""An audit as an experiment's report: `report = "audit"` in an experiment file.

After the cells ran, each domain of the experiment is audited on the experiment's model
and seed: the known-wrong answers are the domain's own (`answers = "domain"`) or the
cells' wrong final replies, the model's own mistakes (`answers = "cells"`). Each domain's
audit lives in `audit-seed<S>/` beside its cells' run directories (resumable like any
audit), and the experiment's `audit.md` gathers their tables. A verifier that cannot
judge a domain (a code verifier on Game of 24) is left out of that domain's audit, and
audit.md says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import SpecError, VeriloopError
from ..experiment.reports import Report

if TYPE_CHECKING:
    from ..experiment.engine import EvalResult, Progress
    from ..experiment.executor import CellPlan
    from ..experiment.schema import Experiment
    from ..models.base import Model

NAME = "audit"


class Options(BaseModel):
    """The report's options (report_options in the file)."""

    model_config = ConfigDict(extra="forbid")

    verifiers: list[str] = Field(min_length=1)
    families: list[str] | None = None  # default: every family that applies to each domain
    answers: Literal["domain", "cells"] = "domain"
    instances: int | None = Field(default=None, ge=1)  # the first N instances of each domain (default: all)
    max_calls: int | None = Field(default=None, ge=0)  # per domain's audit
    concurrency: int | None = Field(default=None, ge=1)  # default: what the model prefers


def check(experiment: Experiment, options: BaseModel) -> None:
    from ..verifiers import get_verifier
    from . import get_family

    assert isinstance(options, Options)
    generators, seeds = experiment.generator_names(), experiment.seeds
    if len(generators) != 1 or len(seeds) != 1:
        raise SpecError(("report",), f"the {NAME} report audits with one model at one seed, not "
                        f"{len(generators)} models and {len(seeds)} seeds; split the experiment")
    for i, name in enumerate(options.verifiers):
        try:
            get_verifier(name)
        except VeriloopError as exc:
            raise SpecError(("report_options", "verifiers", str(i)), str(exc)) from None
    for i, name in enumerate(options.families or []):
        try:
            get_family(name)
        except VeriloopError as exc:
            raise SpecError(("report_options", "families", str(i)), str(exc)) from None


def _fitting(verifiers: list[str], domain: object) -> tuple[list[str], list[str]]:
    """The verifiers that can judge `domain`, and those that cannot."""
    from ..verifiers import get_verifier
    from ..verifiers.base import ChecksDomain

    fit, left = [], []
    for name in verifiers:
        verifier = get_verifier(name)
        try:
            if isinstance(verifier, ChecksDomain):
                verifier.check_domain(domain)  # type: ignore[arg-type]
            fit.append(name)
        except VeriloopError:
            left.append(name)
    return fit, left


async def report(
    experiment: Experiment, result: EvalResult, models: Mapping[str, Model], progress: Progress | None
) -> list[str]:
    """Audit each domain of the experiment; audit.md gathers their tables."""
    from ..domains.base import as_base_domain
    from ..experiment.results import cell_trajectories
    from ..runs.jsonl import write_file
    from . import families_for
    from .answers import answers_from_trajectories
    from .engine import plan_audit
    from .report import execute_audit

    options = Options.model_validate(experiment.report_options)
    generator, seed = experiment.generator_names()[0], experiment.seeds[0]
    model = models[generator]
    update = progress.update if progress else None
    by_domain: dict[str, list[CellPlan]] = {}
    for p in result.plans:
        if p.cell.model == generator:
            by_domain.setdefault(p.cell.domain, []).append(p)
    parts = [f"# Audit of {experiment.name}\n", f"Model: {model.name}; seed {seed}; answers: "
             + ("the domains' own wrong answers" if options.answers == "domain" else "the cells' wrong final replies")
             + "\n"]
    for key, cells in by_domain.items():
        dom = cells[0].domain
        domain = as_base_domain(dom.domain)
        instances = dom.instances[: options.instances or len(dom.instances)]
        verifiers, left = _fitting(options.verifiers, domain)
        if not verifiers:
            parts.append(f"\n## {key}\n\nNo verifier of {', '.join(left)} can judge {domain.name}.\n")
            continue
        answers = None
        if options.answers == "cells":
            answers = answers_from_trajectories([t for p in cells for t in cell_trajectories(p)], domain, instances, seed)
        try:
            plan = plan_audit(domain, verifiers, families_for(domain, options.families), instances, seed=seed,
                              answers=answers)
        except VeriloopError as exc:
            parts.append(f"\n## {key}\n\nNot audited: {exc}\n")
            continue
        audit_dir = cells[0].run_dir.parent / f"audit-seed{seed}"
        domain_options = dom.config.get("domain_options")
        done = await execute_audit(plan, model, audit_dir, answers=options.answers,
                                   domain_options=dict(domain_options) if isinstance(domain_options, dict) else {},
                                   max_calls=options.max_calls, concurrency=options.concurrency,
                                   on_progress=_staged(update, f"{key}: audit"))
        table = done.report_md.read_text().split("\n", 1)[1]  # its own "# Audit: ..." title becomes a section
        parts.append(f"\n## {key}\n" + (f"\nLeft out (cannot judge {domain.name}): {', '.join(left)}.\n" if left else "")
                     + table)
    write_file(result.out_dir / "audit.md", "".join(parts))
    return ["audit.md"]


def _staged(update: Callable[[str, int, int], None] | None, stage: str) -> Callable[[int, int], None] | None:
    """A (done, total) progress callback reporting under `stage`, or None."""
    if update is None:
        return None
    report = update
    return lambda done, total: report(stage, done, total)


REPORT = Report(options=Options, run=report, check=check)
