"""Run an experiment: every cell of its matrix as a resumable run directory, within budget.

A cell is one generator on one domain with one strategy and seed (and the models given
roles in it). Each is run by the ordinary runner in `DIR/<model>/<domain>/<strategy>-seedS`,
so an interrupted experiment resumes cell by cell, trajectory by trajectory, and a
finished one re-runs without a model call. `execute` holds the experiment's directory
(runs.dirlock), and the runner each cell's run directory, while it runs: one process at a
time.

The engine plans the cells and writes the results and the report; running the cells is
an executor's (experiment.executor): here by default (LocalCells, one cell after the
other, a cell's trajectories as many at once as its model allows), or one named in
executor.EXECUTORS, which the engine never imports by module.

`execute` is the one door every entrance goes through (`veriloop eval`, `veriloop run`,
`veriloop reproduce`, `veriloop.evaluate`, `veriloop.eval_experiment`): it plans, opens
the executor by name, runs and closes it. `veriloop run` and `veriloop.evaluate` write
a single run (SingleRun): one run directory holding every strategy, which the same
executors fill as one run (their plans share it), with no experiment files beside it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .. import __version__
from ..domains.base import Domain
from ..errors import VeriloopError
from ..models.base import Model
from ..models.providers import limits_of
from ..runs.dirlock import hold, refuse_if_held
from ..runs.identity import content_sha256
from ..runs.runner import RunResult, check_run_dir
from ..strategies import parse_strategy
from .executor import (
    EXECUTORS,
    CellExecutor,
    CellPlan,
    ClusterStats,
    DomainPlan,
    ExecutorOptions,
    LocalCells,
    Progress,
    load_models,
    open_executor,
    price_notes,
    price_records,
    recorded_in,
    tools_for,
)
from .matrix import Cell
from .schema import DomainEntry, Experiment, TaskEntry

if TYPE_CHECKING:
    from ..strategies.base import Strategy
    from .results import CellResult

# The plans and helpers the executors share are defined in .executor; these names were
# engine's first and are still imported from here.
__all__ = [
    "SPEC_FILE", "CellExecutor", "CellPlan", "ClusterStats", "DomainPlan", "Estimate", "EvalResult", "ExecutorOptions",
    "LocalCells", "Progress", "SingleRun", "build_domain", "estimate", "execute", "executor_names", "load_models", "models_needed",
    "plan", "run_config", "run_eval", "tools_for", "write_spec",
]

SPEC_FILE = "experiment.json"


def build_domain(experiment: Experiment, entry: DomainEntry | TaskEntry) -> DomainPlan:
    """The domain object and its instances, as the cells will run them."""
    from ..domains import get_domain

    n = entry.n or experiment.n
    where = f"{'domain' if isinstance(entry, DomainEntry) else 'task'} {entry.key}"
    if isinstance(entry, TaskEntry):
        from ..checks import DEFAULT_CHECK_TIMEOUT, load_check
        from ..task import Task

        file = experiment.resolve(entry.file)
        assert file is not None
        check = load_check(entry.check) if entry.check else None
        domain: Domain = Task.from_jsonl(file, prompt=entry.prompt, check=check, reference_field=entry.reference_field,
                                         id_field=entry.id_field,
                                         check_timeout=entry.check_timeout or DEFAULT_CHECK_TIMEOUT)
        config: dict[str, object] = {
            "task": file, "task_sha256": content_sha256(file), "prompt": entry.prompt, "check": entry.check,
            "reference_field": entry.reference_field, "id_field": entry.id_field, "offset": entry.offset,
        }
        instances = domain.load_instances(None, n=n, offset=entry.offset)
        data = None
    else:
        try:
            domain = get_domain(entry.name, **entry.options)
        except TypeError as exc:
            raise VeriloopError(f"{where}: bad options {entry.options}: {exc}") from None
        data = experiment.resolve(entry.data, missing_ok=entry.generate_if_missing)
        # A reproduction's missing data falls back to generated instances, from the first.
        fallback = data is not None and not Path(data).exists() and entry.generate_if_missing
        data = None if fallback else data
        offset = 0 if fallback else entry.offset
        instances = domain.load_instances(data, n=n, offset=offset)
        config = {"data": data, "data_sha256": content_sha256(data), "offset": offset, "domain_options": entry.options}
    if not instances:
        raise VeriloopError(f"{where}: no instances selected (n={n}, offset={entry.offset})")
    return DomainPlan(entry.key, domain, instances, data, config)


def experiment_of_config(config: Mapping[str, Any]) -> Experiment:
    """The experiment a run directory's config.json was made from, with the one domain or
    task it ran: `veriloop run` records its whole (flag-filled) experiment as `spec`; an
    eval cell records its own part of the file (`spec`: model, domain entry, strategy, n)
    beside `cell`, with its data path as resolved then. A VeriloopError when neither fits."""
    spec = config.get("spec")
    if not isinstance(spec, Mapping):
        raise VeriloopError("the run's config.json records no spec to rebuild its instances from")
    try:
        if "cell" not in config:
            return Experiment.model_validate(spec)
        entry = dict(spec["domain"])
        is_task = "file" in entry
        # The path as the cell resolved it (below the file's data_root, which the cell's spec lacks).
        resolved = config.get("task") if is_task else config.get("data")
        if resolved is not None:
            entry["file" if is_task else "data"] = resolved
        return Experiment.model_validate({
            "name": str(config.get("experiment") or "cell"), "models": {"main": spec["model"]},
            "tasks" if is_task else "domains": [entry], "strategies": [spec["strategy"]], "n": spec["n"],
            "tools": spec.get("tools") or {},
        })
    except (KeyError, TypeError, ValidationError) as exc:
        raise VeriloopError(f"the run's config.json has a spec this version cannot read ({exc.__class__.__name__}); "
                            "was it written by another veriloop version?") from None


@dataclass(frozen=True)
class SingleRun:
    """`out_dir` as ONE run directory, as `veriloop run` and `veriloop.evaluate` write it:
    every strategy's trajectories in it, under one config.json, and no experiment's files
    beside them (experiment.json, results.*, frontier.png: `veriloop view` and the
    importer tell a run directory from an experiment's by them). For one model, one
    domain or task and one seed, no roles, no cell budget and no report.

    `config`: what the run's config.json records (its identity, runs.identity);
    default: what `veriloop run` records, from the spec. `domain`, `strategies`: given
    from Python (a Task or domain object and its instances, Strategy objects) instead of
    the spec's entries, which a spec file cannot hold."""

    config: Mapping[str, object] | None = None
    domain: DomainPlan | None = None
    strategies: Sequence[Strategy] | None = None


def plan(experiment: Experiment, out_dir: Path, single: SingleRun | None = None) -> list[CellPlan]:
    """Every cell with its domain, strategy, run directory and what it already recorded.
    Loads data and checks each strategy against its domain, but loads no model; writes
    nothing, and refuses a directory another process holds (before any model loads).
    With `single`: the cells of one run, `out_dir` their run directory."""
    if single is not None:
        return _plan_single(experiment, out_dir, single)
    from ..models.openai_compat import url_without_secrets

    refuse_if_held(out_dir)
    domains = {key: build_domain(experiment, experiment.domain_entry(key)) for key in experiment.domain_keys()}
    defaults: dict[str, object] = {"max_rounds": experiment.max_rounds, "k": experiment.k}
    plans = []
    for cell in experiment.cells():
        entry = experiment.strategy_by_name(cell.strategy)
        assert entry is not None
        strategy = parse_strategy(entry.spec, defaults)
        dom = domains[cell.domain]
        try:
            strategy.check_domain(dom.domain)
        except VeriloopError as exc:
            raise VeriloopError(f"cell {cell.title}: {exc}") from None
        model = experiment.models[cell.model]
        config: dict[str, object] = {
            "experiment": experiment.name,
            "cell": {"model": cell.model, "domain": cell.domain, "strategy": cell.strategy, "seed": cell.seed,
                     "roles": dict(cell.roles)},
            "model": model.id, "base_url": url_without_secrets(model.base_url) if model.base_url else None,
            # Checked before any model loads, so a finished cell (which loads none) is
            # refused too when the file now names other models for it.
            "model_id": model.id,
            "role_models": {role: experiment.models[name].id for role, name in cell.roles},
            # What the results' dollars are computed at (not part of the run's identity:
            # a price may change without changing what the model answers).
            "prices": price_records(experiment, dict.fromkeys([cell.model, *(name for _, name in cell.roles)])),
            **dom.config,
            "strategy_defaults": defaults,
            "spec": {
                "model": model.model_dump(), "domain": experiment.domain_entry(cell.domain).model_dump(),
                "strategy": entry.model_dump(), "canonical": strategy.canonical, "seed": cell.seed,
                "roles": {role: {"name": name, **experiment.models[name].model_dump()} for role, name in cell.roles},
                "n": len(dom.instances), "concurrency": experiment.concurrency, "tools": experiment.tools.model_dump(),
            },
            "veriloop_version": __version__,
        }
        # What a model will not do that the strategy may ask (a reasoning model cannot be
        # greedy): said here, before any call, and once on the run's output when it happens.
        limits = {entry.id: found for entry in (model, *(experiment.models[name] for _, name in cell.roles))
                  if (found := limits_of(entry.id, entry.reasoning_effort))}
        if limits:
            config["model_limits"] = limits
        run_dir = out_dir / cell.directory()
        check_run_dir(run_dir, {**config, "domain": dom.domain.name, "seed": cell.seed})
        plans.append(CellPlan(cell, dom, strategy, run_dir, config, recorded_in(run_dir, strategy, cell.seed)))
    return plans


def _plan_single(experiment: Experiment, out_dir: Path, single: SingleRun) -> list[CellPlan]:
    """The cells of a single run (SingleRun): one plan a strategy, all in `out_dir`."""
    refuse_if_held(out_dir)
    generators = experiment.generator_names()
    keys = experiment.domain_keys()
    if len(generators) != 1 or len(experiment.seeds) != 1 or (single.domain is None and len(keys) != 1):
        raise VeriloopError("a single run directory holds one model, one domain or task and one seed: run more "
                            "as an experiment (veriloop eval)")
    if experiment.cell_budget.is_set() or experiment.roles_for(generators[0]) or experiment.report:
        raise VeriloopError("a single run directory has no cell budget, roles or report: run these as an "
                            "experiment (veriloop eval)")
    name, seed = generators[0], experiment.seeds[0]
    dom = single.domain or build_domain(experiment, experiment.domain_entry(keys[0]))
    defaults: dict[str, object] = {"max_rounds": experiment.max_rounds, "k": experiment.k}
    # By label: the spec's entries, or the given strategies' canonical specs.
    strategies = [(s.canonical, s) for s in single.strategies] if single.strategies is not None else [
        (entry.key, parse_strategy(entry.spec, defaults)) for entry in experiment.strategies]
    for _, strategy in strategies:
        strategy.check_domain(dom.domain)  # before the model loads: a strategy that cannot run here fails now
    config = dict(single.config) if single.config is not None else run_config(experiment, dom, defaults)
    check_run_dir(out_dir, {**config, "domain": dom.domain.name, "seed": seed})  # its model's identity once loaded
    return [CellPlan(Cell(name, dom.key, label, seed), dom, strategy, out_dir, config,
                     recorded_in(out_dir, strategy, seed), single_run=True) for label, strategy in strategies]


def run_config(experiment: Experiment, dom: DomainPlan, defaults: Mapping[str, object]) -> dict[str, object]:
    """What `veriloop run` records in its run directory's config.json: the settings that
    define the run (runs.identity), and the whole spec its flags filled, so the run
    can be re-created from it (experiment_of_config)."""
    from ..models.openai_compat import url_without_secrets

    (model,) = (experiment.models[name] for name in experiment.generator_names())
    config: dict[str, object] = {
        "model": model.id, "base_url": url_without_secrets(model.base_url) if model.base_url else None, **dom.config,
        "strategy_defaults": dict(defaults), "spec": experiment.model_dump(), "veriloop_version": __version__,
    }
    config.setdefault("data", None)
    config.setdefault("data_sha256", None)
    if model.id is not None and (found := limits_of(model.id, model.reasoning_effort)):
        config["model_limits"] = {model.id: found}  # what it will not do that a strategy may ask
    return config


@dataclass
class Estimate:
    calls: int | None
    tokens: int | None


def estimate(cell: CellPlan) -> Estimate:
    """At most how many calls the cell's remaining instances make, and roughly how many
    tokens (each call: the first prompt, about 4 characters a token, plus a full answer);
    None where the strategy cannot say."""
    left = cell.planned - cell.finished()
    per = cell.strategy.calls_per_instance()
    if per is None:
        return Estimate(None, None)
    first = cell.domain.domain.prompt(cell.domain.instances[0])
    prompt_tokens = sum(len(m["content"]) for m in first) // 4
    calls = left * per
    return Estimate(calls, calls * (prompt_tokens + cell.domain.domain.answer_tokens))


@dataclass
class EvalResult:
    out_dir: Path
    plans: list[CellPlan]
    stopped: str | None  # why the experiment stopped early (a budget), if it did
    incomplete_cells: list[str]
    new_trajectories: int
    backend_calls: int
    wall_seconds: float
    rows: list[CellResult] = field(default_factory=list)  # one per cell, as in results.csv
    report_files: list[str] = field(default_factory=list)  # the experiment's report wrote them (in out_dir)
    cluster: ClusterStats | None = None  # under --executor ray: its workers, and those it lost
    notes: list[str] = field(default_factory=list)  # one line per model charged $0 for want of a price
    run: RunResult | None = None  # a single run's (SingleRun): its summaries, paired comparisons and counts


def models_needed(experiment: Experiment, plans: list[CellPlan]) -> list[str]:
    """The models to load: those of the cells left to run or of a single run (opened even
    when finished), and with a report every cell's (a report may call them, as the
    self-verification study does)."""
    return experiment.models_used([p.cell for p in plans if experiment.report or p.single_run
                                   or p.finished() < p.planned])


async def run_eval(
    experiment: Experiment, out_dir: Path, models: Mapping[str, Model], progress: Progress | None = None,
    plans: list[CellPlan] | None = None,
) -> EvalResult:
    """`execute` on models already loaded (the caller's: not closed here), in this process."""
    return await execute(experiment, out_dir, executor=LocalCells(models), progress=progress, plans=plans)


def executor_names() -> list[str]:
    """The names `execute` opens an executor by (executor.EXECUTORS): local, ray and any
    plugin's, for an entrance to check a name before any work."""
    return list(EXECUTORS)


async def execute(
    experiment: Experiment, out_dir: Path, *, executor: str | CellExecutor = "local",
    options: ExecutorOptions | None = None, progress: Progress | None = None, plans: list[CellPlan] | None = None,
    single: SingleRun | None = None,
) -> EvalResult:
    """The one door into the engine: plan the experiment (unless given `plans`), open the
    executor called `executor` (executor.EXECUTORS: local, ray, or a plugin's; or one
    given, not started yet) for the models the cells need, start it, run the cells within
    budget, and close it on the way out (cancellation and Ctrl-C included). Then the
    experiment's results files and its report's (a paper's tables), if it names one.

    With `single`, `out_dir` is one run directory (SingleRun): no experiment files are
    written, the runner holds the directory, and the result's `run` holds the run's
    summaries. Otherwise the experiment's directory is held here while the cells run."""
    plans = plans if plans is not None else plan(experiment, out_dir, single)
    cells = executor if not isinstance(executor, str) else open_executor(
        executor, experiment, models_needed(experiment, plans), options or ExecutorOptions())
    try:
        await cells.start(progress)
        with nullcontext() if single is not None else hold(out_dir):
            started = time.perf_counter()
            if single is None:
                write_spec(out_dir, experiment)
            stopped, new = await cells.run_cells(experiment, plans, progress)
            result = EvalResult(
                out_dir=out_dir, plans=plans, stopped=stopped,
                incomplete_cells=[p.cell.title for p in plans if p.finished() < p.planned], new_trajectories=new,
                backend_calls=cells.backend_calls, wall_seconds=round(time.perf_counter() - started, 3),
                cluster=cells.stats(),
            )
            if single is not None:
                result.run = next((p.run for p in plans if p.run is not None), None)
                if result.run is None and stopped is None:
                    raise VeriloopError(f"the executor ended without finishing the run in {out_dir}")
                return result
            return await _write_results(experiment, result, cells, progress, started)
    finally:
        await cells.aclose()


async def _write_results(
    experiment: Experiment, result: EvalResult, cells: CellExecutor, progress: Progress | None, started: float,
) -> EvalResult:
    """The experiment's results files, then its report, on the executor's models."""
    from ..models.counting import CountingModel
    from .results import write_results

    result.notes = price_notes(experiment, experiment.models_used([p.cell for p in result.plans]))
    result.rows = write_results(experiment, result)
    # A report over an experiment that a budget stopped would mix finished and missing
    # cells in a paper's table, and its own work (a study) would spend past the cap.
    if experiment.report and not result.stopped:
        from .reports import run_report

        # A report's own calls go to the executor's models (on a cluster: its workers), counted here.
        counted = {name: CountingModel(m) for name, m in cells.report_models().items()}
        result.report_files = await run_report(experiment, result, counted, progress)
        result.backend_calls = cells.backend_calls + sum(m.backend_calls for m in counted.values())
        result.wall_seconds = round(time.perf_counter() - started, 3)
    return result


def write_spec(out_dir: Path, experiment: Experiment) -> None:
    """The resolved experiment, beside its cells (every default filled in)."""
    import json

    from ..runs.jsonl import write_file

    record = {"veriloop_version": __version__, **experiment.model_dump(), "prices": price_records(experiment)}
    write_file(out_dir / SPEC_FILE, json.dumps(record, indent=2) + "\n")

