"""Run an experiment: every cell of its matrix as a resumable run directory, within budget.

A cell is one generator on one domain with one strategy and seed (and the models given
roles in it). Each is run by the ordinary runner in `DIR/<model>/<domain>/<strategy>-seedS`,
so an interrupted experiment resumes cell by cell, trajectory by trajectory, and a
finished one re-runs without a model call. `run_eval` holds the experiment's directory
(experiment.dirlock) and each cell's run directory while it runs: one process at a time. Cells run one after the other: a cell's
trajectories already run as many at once as its model allows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import __version__
from ..domains.base import Domain, Instance
from ..errors import VeriloopError
from ..models.base import Model
from ..records import Trajectory
from ..strategies import Strategy, parse_strategy
from ..tools.base import Toolbox
from .budget import BudgetReached, Meter, MeteredModel, Usage, usage_of
from .dirlock import hold, refuse_if_held
from .identity import content_sha256
from .runner import TRAJECTORIES, check_run_dir, load_trajectories, run_experiment
from .spec import ROLE_CALLS, Cell, DomainEntry, Experiment, TaskEntry

if TYPE_CHECKING:
    from ..cluster.driver import ClusterStats
    from .results import CellResult

SPEC_FILE = "experiment.json"


@dataclass
class DomainPlan:
    """A domain (or task) of the experiment, built, with its instances chosen."""

    key: str
    domain: Domain
    instances: list[Instance]
    data: str | None
    config: dict[str, object]


@dataclass
class CellPlan:
    cell: Cell
    domain: DomainPlan
    strategy: Strategy
    run_dir: Path
    config: dict[str, object]
    recorded: list[Trajectory] = field(default_factory=list)

    @property
    def planned(self) -> int:
        return len(self.domain.instances)

    def finished(self) -> int:
        ids = {i.id for i in self.domain.instances}
        return len({t.instance_id for t in self.recorded if t.instance_id in ids})


def role_of_call(call_role: str) -> str | None:
    """The experiment role (verifier_model...) whose model answers calls of this role."""
    return next((role for role, calls in ROLE_CALLS.items() if call_role in calls), None)


def price_of(experiment: Experiment, cell: Cell) -> Callable[[str, int, int], float]:
    """Dollars of a call in this cell, at the price of the model that played its role."""
    roles = dict(cell.roles)

    def usd(call_role: str, prompt_tokens: int, completion_tokens: int) -> float:
        role = role_of_call(call_role)
        name = roles.get(role, cell.model) if role else cell.model
        return experiment.models[name].usd(prompt_tokens, completion_tokens)

    return usd


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
        data = experiment.resolve(entry.data)
        # A reproduction's missing data falls back to generated instances, from the first.
        fallback = data is not None and not Path(data).exists() and entry.generate_if_missing
        data = None if fallback else data
        offset = 0 if fallback else entry.offset
        instances = domain.load_instances(data, n=n, offset=offset)
        config = {"data": data, "data_sha256": content_sha256(data), "offset": offset, "domain_options": entry.options}
    if not instances:
        raise VeriloopError(f"{where}: no instances selected (n={n}, offset={entry.offset})")
    return DomainPlan(entry.key, domain, instances, data, config)


def plan(experiment: Experiment, out_dir: Path) -> list[CellPlan]:
    """Every cell with its domain, strategy, run directory and what it already recorded.
    Loads data and checks each strategy against its domain, but loads no model; writes
    nothing, and refuses a directory another process holds (before any model loads)."""
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
        run_dir = out_dir / cell.directory()
        check_run_dir(run_dir, {**config, "domain": dom.domain.name, "seed": cell.seed})
        plans.append(CellPlan(cell, dom, strategy, run_dir, config, recorded_in(run_dir, strategy, cell.seed)))
    return plans


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


class CellExecutor(Protocol):
    """Somewhere else to run the cells (cluster.cells.RayCells): it writes the same run
    directories as `run_cells`, and serves a report's models."""

    @property
    def backend_calls(self) -> int:
        """Samples its backends generated for the cells (not the report's: those are counted here)."""

    async def run_cells(self, experiment: Experiment, plans: list[CellPlan],
                        progress: Progress | None) -> tuple[str | None, int]: ...

    def report_models(self) -> dict[str, Model]: ...

    def stats(self) -> ClusterStats: ...


class Progress:
    """What the engine reports: the overall trajectories done, the cell running, tokens."""

    def __init__(self, update: Callable[[str, int, int], None] | None = None,
                 tokens: Callable[[int], None] | None = None) -> None:
        self.update = update
        self.tokens = tokens


def tools_for(experiment: Experiment, dom: DomainPlan) -> Toolbox | None:
    from ..domains.base import CriticTask
    from ..tools.config import ALL_TOOLS, ToolSettings, build_toolbox

    if not isinstance(dom.domain, CriticTask):
        return None
    t = experiment.tools
    settings = ToolSettings(
        names=tuple(ALL_TOOLS), search_corpus=Path(t.search_corpus) if t.search_corpus else None,
        search_url=t.search_url, toxicity_backend=t.toxicity, allow_unisolated=t.allow_unisolated,
    )
    return build_toolbox(settings, dom.domain, dom.data)


async def run_cells(
    experiment: Experiment, plans: list[CellPlan], models: Mapping[str, Model], progress: Progress | None = None,
) -> tuple[str | None, int]:
    """Run the cells in order within the budgets; return why it stopped early (None: it
    did not) and how many trajectories were new."""
    # What each cell's records already spent: the start of its meter and of the experiment's.
    spent = [usage_of(p.recorded, price_of(experiment, p.cell)) for p in plans]
    whole = Usage()
    for used in spent:
        whole.add(used)
    overall = Meter("experiment", experiment.budget, whole)
    total = sum(p.planned for p in plans)
    done = [p.finished() for p in plans]
    tools: dict[str, Toolbox | None] = {}
    new = 0
    for index, p in enumerate(plans):
        if p.finished() == p.planned:
            continue
        title = f"cell {index + 1}/{len(plans)}: {p.cell.title}"
        cell_meter = Meter("cell", experiment.cell_budget, spent[index])
        generator, role_models = metered_models(
            p.cell, models, [overall, cell_meter], price_of(experiment, p.cell), progress.tokens if progress else None
        )
        if p.domain.key not in tools:
            tools[p.domain.key] = tools_for(experiment, p.domain)

        def report(finished: int, _total: int, i: int = index, t: str = title) -> None:
            done[i] = finished
            if progress and progress.update:
                progress.update(t, sum(done), total)

        before = p.finished()
        stop: BudgetReached | None = None
        try:
            await run_experiment(
                generator, p.domain.domain, [p.strategy], p.domain.instances, p.run_dir, seed=p.cell.seed,
                concurrency=experiment.concurrency, config=p.config,
                on_progress=report, tools=tools[p.domain.key], role_models=role_models,
            )
        except BudgetReached as exc:
            stop = exc  # what finished is on disk; a cell's cap moves on to the next cell
        p.recorded = recorded_in(p.run_dir, p.strategy, p.cell.seed)
        new += p.finished() - before
        if stop is not None and stop.scope == "experiment":
            return str(stop), new
    return None, new


def metered_models(
    cell: Cell, models: Mapping[str, Model], meters: list[Meter], usd: Callable[[str, int, int], float],
    on_tokens: Callable[[int], None] | None,
) -> tuple[Model, dict[str, Model]]:
    """The cell's generator and its role models (by call role), each charging `meters`."""

    def metered(name: str, call_role: str) -> MeteredModel:
        return MeteredModel(models[name], meters, lambda pt, ct: usd(call_role, pt, ct), on_tokens=on_tokens)

    role_models: dict[str, Model] = {}
    for role, name in cell.roles:
        for call_role in ROLE_CALLS[role]:
            role_models[call_role] = metered(name, call_role)
    return metered(cell.model, "generate"), role_models


def recorded_in(run_dir: Path, strategy: Strategy, seed: int) -> list[Trajectory]:
    """The trajectories a cell's run directory holds for its strategy and seed."""
    key = (strategy.canonical, seed)
    return [t for t in load_trajectories(run_dir / TRAJECTORIES) if (t.strategy, t.seed) == key]


def models_needed(experiment: Experiment, plans: list[CellPlan]) -> list[str]:
    """The models to load: those of the cells left to run, and with a report every
    cell's (a report may call them, as the self-verification study does)."""
    return experiment.models_used([p.cell for p in plans if experiment.report or p.finished() < p.planned])


def load_models(experiment: Experiment, names: list[str], *, cache_path: Path | None = None,
                use_cache: bool = True, given: Mapping[str, Any] | None = None,
                api_keys: Mapping[str, str] | None = None) -> dict[str, Model]:
    """The models the cells need, loaded (each once); `given` supplies models by name
    instead of their entries' ids (anything `veriloop.model` accepts: a function, an
    object with generate(), a Model), cached like the others. `api_keys`: keys by model
    name, as a command's --api-key gives one (never written to the experiment)."""

    from ..models import as_model, load_model

    loaded: dict[str, Model] = {}
    for name in names:
        entry = experiment.models[name]
        if given and name in given:
            cache: bool | Path = (cache_path or True) if use_cache and entry.cache else False
            loaded[name] = as_model(given[name], cache=cache, concurrency=entry.concurrency,
                                    deployment=entry.deployment, **entry.server_limits())
            continue
        if entry.id is None:
            raise VeriloopError(f"models.{name} has no id: give it one (a pack, a .gguf path, openai/MODEL), or pass "
                                f"the model itself from Python (eval_experiment(..., models={{{name!r}: ...}}))")
        loaded[name] = load_model(
            entry.id, base_url=entry.base_url, api_key=api_key_of(experiment, name, api_keys), cache_path=cache_path,
            use_cache=use_cache and entry.cache, threads=entry.threads, context=entry.context,
            # Without its own, a model is used at the experiment's concurrency: a server's
            # requests in flight are then bounded by it, every sample counted.
            concurrency=entry.concurrency or experiment.concurrency, deployment=entry.deployment,
            **entry.server_limits(),
        )
    return loaded


def api_key_of(experiment: Experiment, name: str, api_keys: Mapping[str, str] | None) -> str | None:
    """A model's API key: given by name (a command's --api-key), else read from the
    variable its entry names (an error when that is not set); None for neither."""
    import os

    entry = experiment.models[name]
    api_key = (api_keys or {}).get(name)
    if api_key is None and entry.api_key_env:
        api_key = os.environ.get(entry.api_key_env)
        if not api_key:
            raise VeriloopError(f"models.{name}.api_key_env names {entry.api_key_env}, which is not set")
    return api_key


async def run_eval(
    experiment: Experiment, out_dir: Path, models: Mapping[str, Model], progress: Progress | None = None,
    plans: list[CellPlan] | None = None, executor: CellExecutor | None = None,
) -> EvalResult:
    """Run every cell (of `plans`, default: planned here) within budget, write the
    experiment's results files, then its report's (a paper's tables), if it names one.
    With `executor` (started), the cells run there (on a cluster's workers), not on `models`."""
    with hold(out_dir):
        return await _run_eval_held(experiment, out_dir, models, progress, plans, executor)


async def _run_eval_held(
    experiment: Experiment, out_dir: Path, models: Mapping[str, Model], progress: Progress | None,
    plans: list[CellPlan] | None, executor: CellExecutor | None,
) -> EvalResult:
    from ..models.counting import CountingModel
    from .results import write_results

    started = time.perf_counter()
    plans = plans if plans is not None else plan(experiment, out_dir)
    write_spec(out_dir, experiment)
    if executor is None:
        counted = {name: CountingModel(m) for name, m in models.items()}
        stopped, new = await run_cells(experiment, plans, counted, progress)
    else:
        stopped, new = await executor.run_cells(experiment, plans, progress)
        # A report's own calls go to the executor's workers too.
        counted = {name: CountingModel(m) for name, m in executor.report_models().items()}
    elsewhere = executor.backend_calls if executor is not None else 0
    incomplete = [p.cell.title for p in plans if p.finished() < p.planned]
    result = EvalResult(
        out_dir=out_dir, plans=plans, stopped=stopped, incomplete_cells=incomplete, new_trajectories=new,
        backend_calls=elsewhere + sum(m.backend_calls for m in counted.values()),
        wall_seconds=round(time.perf_counter() - started, 3),
        cluster=executor.stats() if executor is not None else None,
    )
    result.rows = write_results(experiment, result)
    # A report over an experiment that a budget stopped would mix finished and missing
    # cells in a paper's table, and its own work (a study) would spend past the cap.
    if experiment.report and not stopped:
        from .reports import run_report

        result.report_files = await run_report(experiment, result, counted, progress)
        result.backend_calls = (executor.backend_calls if executor is not None else 0) + sum(
            m.backend_calls for m in counted.values())
        result.wall_seconds = round(time.perf_counter() - started, 3)
    return result


def write_spec(out_dir: Path, experiment: Experiment) -> None:
    """The resolved experiment, beside its cells (every default filled in)."""
    import json

    from .jsonl import write_file

    write_file(out_dir / SPEC_FILE, json.dumps({"veriloop_version": __version__, **experiment.model_dump()}, indent=2)
               + "\n")

