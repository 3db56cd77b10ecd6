"""A paper's own tables, written after an experiment's cells ran: the reports by name.

An experiment file names one with `report = "..."` and passes it `report_options`. The
report reads the cells' trajectories (and may run more work on the generator, as the
self-verification paper's verification study does), then writes its files beside the
experiment's results. Report modules are imported only when a file names them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from ..registry import Registry

if TYPE_CHECKING:
    from ..models.base import Model
    from .engine import EvalResult, Progress
    from .schema import Experiment

# Name -> the REPORT of its module, imported when a file names it.
REPORTS: Registry[Report] = Registry("report")
REPORTS.register("self-verification", "veriloop.reproduce.self_verification:REPORT")
REPORTS.register("critic", "veriloop.reproduce.critic:REPORT")
REPORTS.register("selfcheck", "veriloop.reproduce.selfcheck:REPORT")
REPORTS.register("audit", "veriloop.audits.experiment:REPORT")

ReportRun = Callable[["Experiment", "EvalResult", Mapping[str, "Model"], "Progress | None"], Awaitable[list[str]]]


@dataclass(frozen=True)
class Report:
    """`options`: the shape of report_options; `check`: what else the report needs of the
    experiment (raises SpecError); `run`: writes the files and returns their names, the
    main table first."""

    options: type[BaseModel]
    run: ReportRun
    check: Callable[[Experiment, BaseModel], None] | None = None


def get_report(name: str) -> Report:
    if name not in REPORTS:
        raise SpecError(("report",), REPORTS.unknown(name))
    return REPORTS[name]


def check_report(experiment: Experiment) -> None:
    """The report's name, its options and its needs, checked when the file is read."""
    assert experiment.report is not None
    report = get_report(experiment.report)
    try:
        options = report.options.model_validate(experiment.report_options)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(str(p) for p in error["loc"])
        message = "unknown option" if error["type"] == "extra_forbidden" else str(error["msg"])
        known = ", ".join(report.options.model_fields) or "none"
        raise SpecError(("report_options", *where),
                        f"{message}; the options of report {experiment.report!r} are: {known}") from None
    if report.check:
        report.check(experiment, options)


async def run_report(
    experiment: Experiment, result: EvalResult, models: Mapping[str, Model], progress: Progress | None
) -> list[str]:
    """Run the experiment's report; the names of the files it wrote."""
    assert experiment.report is not None
    return await get_report(experiment.report).run(experiment, result, models, progress)
