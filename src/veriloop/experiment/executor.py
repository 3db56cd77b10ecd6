"""Where an experiment's cells run: the seam between the engine and its executors.

The engine (experiment.engine) plans the cells, then hands them to a `CellExecutor`,
which fills their run directories, and writes the results and the report. Two
executors exist, found by name in `EXECUTORS`:

    local  local_cells -> LocalCells: this process, one cell after another
    ray    veriloop.cluster.cells:ray_cells -> RayCells: shards of instances on a Ray cluster's workers

An entry (veriloop.registry) is a "module:factory" string, imported only when its name is
asked for, so nothing under experiment/ imports the cluster, and Ray stays an optional
extra. The cluster in turn needs only this module and public records of the lower
layers (experiment.schema, .matrix, .budget; runs.runner, .dirlock, .jsonl): the plans it runs
(`CellPlan`, `DomainPlan`), what it reports (`Progress`, `ClusterStats`) and the rules
every executor applies to a cell (`price_of`, `model_prices`, `recorded_in`, `tools_for`, `api_key_of`,
`budget_meters`, `run_groups`, `to_run`).

Invariants every executor keeps: it writes the run directories as `runner.run_experiment`
does (through `runner.open_run` and `runner.finish_run`), so either one resumes the
other's run; the plans that share a run directory (a single run's, engine.SingleRun) run
as one run of all their strategies, opened even when finished (`run_groups`, `to_run`);
it charges every call to the experiment's and the cell's budget meters, which start
from what the records already spent; after `run_cells` each plan's `recorded` is what
its run directory holds and its `run` what finish_run said of it (None if it did not
finish); `backend_calls` counts the samples its backends generated for the cells (not
those replayed from a cache).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import VeriloopError
from ..records import Trajectory
from ..registry import Registry
from ..runs.jsonl import read_records
from ..runs.runner import TRAJECTORIES, RunResult, run_experiment
from .budget import BackendCalls, BudgetReached, CallPrice, Meter, MeteredModel, Usage, usage_of
from .matrix import ROLE_CALLS, Cell
from .schema import Experiment

if TYPE_CHECKING:
    from ..domains.base import Domain, Instance
    from ..models.base import Model
    from ..models.cache import CallCache
    from ..models.prices import Price
    from ..strategies.base import Strategy
    from ..tools.base import Toolbox


@dataclass
class DomainPlan:
    """A domain (or task) of the experiment, built, with its instances chosen. `toolbox`
    with `tools_given`: the toolbox its cells use, given from Python (veriloop.evaluate's
    tools=, None included) instead of the one the experiment's tool settings build."""

    key: str
    domain: Domain
    instances: list[Instance]
    data: str | None
    config: dict[str, object]
    toolbox: Toolbox | None = None
    tools_given: bool = False


@dataclass
class CellPlan:
    """One cell as the executors run it: its domain, strategy, run directory and the
    settings its config.json records; `recorded` is what the directory already holds."""

    cell: Cell
    domain: DomainPlan
    strategy: Strategy
    run_dir: Path
    config: dict[str, object]
    recorded: list[Trajectory] = field(default_factory=list)
    # Part of a single run (engine.SingleRun): the plans of one run directory run as one,
    # opened (the model's identity checked, summary.json written) even when finished.
    single_run: bool = False
    # What runner.finish_run said of the plan's run directory, once an executor finished it.
    run: RunResult | None = None

    @property
    def planned(self) -> int:
        return len(self.domain.instances)

    def finished(self) -> int:
        ids = {i.id for i in self.domain.instances}
        return len({t.instance_id for t in self.recorded if t.instance_id in ids})


class Progress:
    """What the engine reports: the overall trajectories done, the cell running, tokens."""

    def __init__(self, update: Callable[[str, int, int], None] | None = None,
                 tokens: Callable[[int], None] | None = None) -> None:
        self.update = update
        self.tokens = tokens


@dataclass(frozen=True)
class ClusterStats:
    """What a run on a cluster did besides its trajectories."""

    workers: int
    worker_failures: int  # shards whose worker died (or was restarted) before they ended
    requeued: int  # trajectories those shards had not sent, run again elsewhere
    duplicates: int  # trajectories received twice and written once

    def note(self) -> str:
        note = f"ran on {self.workers} Ray worker{'s' if self.workers != 1 else ''}"
        if self.worker_failures:
            note += (f"; {self.worker_failures} shard(s) lost with their worker, {self.requeued} trajectories "
                     f"re-run, {self.duplicates} duplicates dropped")
        return note


@dataclass(frozen=True)
class ExecutorOptions:
    """How an executor gets the models it runs the cells on. `use_cache` False: no call
    cache; else the one at `cache_path` (None: the default one). `api_keys`: keys by
    model name (a command's --api-key, never written down); `given`: models by name, to
    use instead of their entries' ids (only this process can run those). `address` and
    `shard_size`: where a cluster is and how many instances a worker takes at once."""

    cache_path: Path | None = None
    use_cache: bool = True
    api_keys: Mapping[str, str] | None = None
    given: Mapping[str, Any] | None = None
    address: str | None = None
    shard_size: int | None = None


class CellExecutor(Protocol):
    """Somewhere to run an experiment's cells. The engine calls `start` (load the models,
    start the workers), `run_cells` once, `report_models` for the models a report calls,
    `stats`, and `aclose` (always, also after an error or a cancellation)."""

    @property
    def backend_calls(self) -> int:
        """Samples its backends generated for the cells (a report's are counted by the engine)."""

    async def start(self, progress: Progress | None) -> None:
        """Make the models ready; an executor given loaded models has nothing to do."""

    async def run_cells(self, experiment: Experiment, plans: list[CellPlan],
                        progress: Progress | None) -> tuple[str | None, int]:
        """Run the trajectories the cells still lack, within the budgets; return why the
        experiment stopped early (None: it did not) and how many trajectories were new."""

    def report_models(self) -> dict[str, Model]:
        """The models by name, as a report after the cells may call them."""

    def stats(self) -> ClusterStats | None:
        """What a cluster did besides the trajectories (None: nothing to say)."""

    async def aclose(self) -> None:
        """Release what `start` took (models it loaded, workers it started)."""


# An executor for the experiment's models `names` (not started yet).
ExecutorFactory = Callable[[Experiment, list[str], ExecutorOptions], CellExecutor]

# By name, as "module:factory" paths: the cluster is imported only when "ray" is asked for.
# A plugin package adds one through the entry point group veriloop.executors.
EXECUTORS: Registry[ExecutorFactory] = Registry("executor", "veriloop.executors")
EXECUTORS.register("local", "veriloop.experiment.executor:local_cells")
EXECUTORS.register("ray", "veriloop.cluster.cells:ray_cells", extra="ray")


def open_executor(name: str, experiment: Experiment, names: list[str], options: ExecutorOptions) -> CellExecutor:
    """The executor called `name`, not started yet, for the models `names` of the experiment."""
    return EXECUTORS.lookup(name)(experiment, names, options)


# -- the rules of a cell, the same on every executor -----------------------------------


def role_of_call(call_role: str) -> str | None:
    """The experiment role (verifier_model...) whose model answers calls of this role."""
    return next((role for role, calls in ROLE_CALLS.items() if call_role in calls), None)


def model_prices(experiment: Experiment, names: Iterable[str] | None = None) -> dict[str, Price]:
    """How each model's calls are priced (models.prices), by name: the experiment's
    models, or those named."""
    return {name: experiment.models[name].pricing(name) for name in (experiment.models if names is None else names)}


def price_records(experiment: Experiment, names: Iterable[str] | None = None) -> dict[str, dict[str, object]]:
    """What a record (config.json, experiment.json, results.json) holds of the models'
    prices: each one's source, rates per million tokens and table."""
    return {name: price.record() for name, price in model_prices(experiment, names).items()}


def price_notes(experiment: Experiment, names: Iterable[str] | None = None) -> list[str]:
    """One line per model charged $0 for want of a price, naming how to give one."""
    return [price.note for price in model_prices(experiment, names).values() if price.note]


def price_of(experiment: Experiment, cell: Cell) -> CallPrice:
    """Dollars of a call in this cell, at the price of the model that played its role."""
    roles = dict(cell.roles)
    prices = model_prices(experiment, {cell.model, *roles.values()})

    def usd(role: str, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0,
            reasoning_tokens: int = 0, batch: bool = False) -> float:
        played = role_of_call(role)
        name = roles.get(played, cell.model) if played else cell.model
        return prices[name].usd(prompt_tokens, completion_tokens, cached_prompt_tokens, reasoning_tokens, batch=batch)

    return usd


def recorded_in(run_dir: Path, strategy: Strategy, seed: int) -> list[Trajectory]:
    """The trajectories a cell's run directory holds for its strategy and seed, read only
    (planning writes nothing: a torn last line is cut by the run that resumes the cell)."""
    key = (strategy.canonical, seed)
    return [t for t in read_records(run_dir / TRAJECTORIES, Trajectory, "trajectory") if (t.strategy, t.seed) == key]


def tools_for(experiment: Experiment, dom: DomainPlan) -> Toolbox | None:
    """The toolbox a CRITIC domain's cells use (by the experiment's tool settings); None
    for every other domain. A toolbox given with the domain comes first."""
    from ..domains.base import CriticTask
    from ..tools.config import ALL_TOOLS, ToolSettings, build_toolbox

    if dom.tools_given:
        return dom.toolbox
    if not isinstance(dom.domain, CriticTask):
        return None
    t = experiment.tools
    settings = ToolSettings(
        names=tuple(ALL_TOOLS), search_corpus=Path(t.search_corpus) if t.search_corpus else None,
        search_url=t.search_url, toxicity_backend=t.toxicity, allow_unisolated=t.allow_unisolated,
    )
    return build_toolbox(settings, dom.domain, dom.data)


def api_key_of(experiment: Experiment, name: str, api_keys: Mapping[str, str] | None) -> str | None:
    """A model's API key: given by name (a command's --api-key), else read from the
    variable its entry names (an error when that is not set); None for neither."""
    entry = experiment.models[name]
    api_key = (api_keys or {}).get(name)
    if api_key is None and entry.api_key_env:
        api_key = os.environ.get(entry.api_key_env)
        if not api_key:
            raise VeriloopError(f"models.{name}.api_key_env names {entry.api_key_env}, which is not set")
    return api_key


def budget_meters(experiment: Experiment, plans: list[CellPlan]) -> tuple[Meter, list[Meter]]:
    """The experiment's meter and each cell's, each starting from what the cells' records
    already spent."""
    spent = [usage_of(p.recorded, price_of(experiment, p.cell)) for p in plans]
    whole = Usage()
    for used in spent:
        whole.add(used)
    return Meter("experiment", experiment.budget, whole), [Meter("cell", experiment.cell_budget, u) for u in spent]


# -- this process ----------------------------------------------------------------------


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
            loaded[name] = as_model(given[name], cache=cache, **entry.settings_set(without_id=True))
            continue
        if entry.id is None:
            raise VeriloopError(f"models.{name} has no id: give it one (a pack, a .gguf path, openai/MODEL), or pass "
                                f"the model itself from Python (eval_experiment(..., models={{{name!r}: ...}}))")
        loaded[name] = load_model(
            # Without its own, a model is used at the experiment's concurrency: a server's
            # requests in flight are then bounded by it, every sample counted.
            entry, concurrency=entry.concurrency or experiment.concurrency,
            api_key=api_key_of(experiment, name, api_keys), cache_path=cache_path, use_cache=use_cache and entry.cache,
        )
    return loaded


class ModelsLoadInterrupted(KeyboardInterrupt):
    """Ctrl-C came while the local executor loaded its models: held back until they had
    loaded (see `interrupts_deferred`), then raised before anything ran."""


@contextmanager
def interrupts_deferred() -> Iterator[threading.Event]:
    """Hold Ctrl-C back until the block ends, and say whether it came.

    llama.cpp loads weights in C and reports through a Python log callback; a
    KeyboardInterrupt raised inside that callback is swallowed by ctypes ("Exception
    ignored ...") and the run would go on as if nothing was pressed."""
    interrupted = threading.Event()
    # Signal handlers can only be set from the main thread; and a process started with
    # Ctrl-C ignored (nohup, a background job) keeps ignoring it.
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


class LocalCells:
    """The cells in this process, in order, each by the ordinary runner: a cell's
    trajectories run as many at once as its model allows; the plans of one run directory
    (a single run's) run together, as one run of all their strategies. Made with loaded
    `models` (the caller's: not closed here), or by `local_cells`, which loads them in
    `start` (Ctrl-C held back until they have loaded, then ModelsLoadInterrupted) and
    closes in `aclose` those it loaded; of a model given from Python, only the call cache
    opened here for it."""

    def __init__(self, models: Mapping[str, Model]) -> None:
        self.models: dict[str, Model] = dict(models)
        self._to_load: tuple[Experiment, list[str], ExecutorOptions] | None = None
        self._owned: list[Model] = []
        self._caches: list[CallCache] = []
        self._counted: list[BackendCalls] = []

    @property
    def backend_calls(self) -> int:
        return sum(counted.count for counted in self._counted)

    async def start(self, progress: Progress | None) -> None:
        from ..models.cache import CachedModel

        if self._to_load is None:
            return
        (experiment, names, options), self._to_load = self._to_load, None
        with interrupts_deferred() as interrupted:
            self.models = load_models(experiment, names, cache_path=options.cache_path, use_cache=options.use_cache,
                                      given=options.given, api_keys=options.api_keys)
        given = options.given or {}
        for name, m in self.models.items():
            if name not in given or isinstance(given[name], str):
                self._owned.append(m)  # loaded here
            elif m is not given[name] and isinstance(m, CachedModel) and m.owns_cache:
                self._caches.append(m.cache)  # the caller's model, in a cache opened here
        if interrupted.is_set():
            raise ModelsLoadInterrupted

    async def run_cells(self, experiment: Experiment, plans: list[CellPlan],
                        progress: Progress | None) -> tuple[str | None, int]:
        """Run the cells in order within the budgets, the plans sharing a run directory as
        one run; return why it stopped early (None: it did not) and how many trajectories
        were new."""
        counted = {name: BackendCalls() for name in self.models}
        self._counted.extend(counted.values())
        overall, cell_meters = budget_meters(experiment, plans)
        total = sum(p.planned for p in plans)
        done = [p.finished() for p in plans]
        tools: dict[str, Toolbox | None] = {}
        new = 0
        for indices in run_groups(plans):
            group = [plans[i] for i in indices]
            if not to_run(group):
                continue
            p = group[0]
            title = f"cell {indices[0] + 1}/{len(plans)}: {p.cell.title}" if len(group) == 1 else (
                f"{p.cell.model} · {p.cell.domain} · {len(group)} strategies · seed {p.cell.seed}")
            generator, role_models = metered_models(
                p.cell, self.models, [overall, *(cell_meters[i] for i in indices)], price_of(experiment, p.cell),
                progress.tokens if progress else None, counted,
            )
            if p.domain.key not in tools:
                tools[p.domain.key] = tools_for(experiment, p.domain)

            def report(finished: int, _total: int, i: list[int] = indices, t: str = title) -> None:
                # The group's trajectories, over its plans: progress is counted in all.
                for j in i:
                    done[j] = 0
                done[i[0]] = finished
                if progress and progress.update:
                    progress.update(t, sum(done), total)

            before = sum(g.finished() for g in group)
            stop: BudgetReached | None = None
            result: RunResult | None = None
            try:
                result = await run_experiment(
                    generator, p.domain.domain, [g.strategy for g in group], p.domain.instances, p.run_dir,
                    seed=p.cell.seed, concurrency=experiment.concurrency, config=p.config,
                    on_progress=report, tools=tools[p.domain.key], role_models=role_models,
                )
            except BudgetReached as exc:
                stop = exc  # what finished is on disk; a cell's cap moves on to the next cell
            for g in group:
                g.recorded = recorded_in(g.run_dir, g.strategy, g.cell.seed)
                g.run = result
            new += sum(g.finished() for g in group) - before
            if stop is not None and stop.scope == "experiment":
                return str(stop), new
        return None, new

    def report_models(self) -> dict[str, Model]:
        return dict(self.models)

    def stats(self) -> ClusterStats | None:
        return None

    async def aclose(self) -> None:
        (owned, self._owned), (caches, self._caches) = (self._owned, []), (self._caches, [])
        for model in owned:
            await model.aclose()
        for cache in caches:
            await cache.aclose()


def local_cells(experiment: Experiment, names: list[str], options: ExecutorOptions) -> LocalCells:
    """The executor `open_executor("local", ...)` gives: it loads the models in `start`."""
    if options.address is not None or options.shard_size is not None:
        raise VeriloopError("an address and a shard size go with the ray executor: drop them, or choose ray")
    executor = LocalCells({})
    executor._to_load = (experiment, names, options)
    return executor


def run_groups(plans: list[CellPlan]) -> list[list[int]]:
    """The plans' indices by run directory, in order: one group a cell, or the plans of a
    single run (which share theirs) together."""
    groups: dict[Path, list[int]] = {}
    for index, p in enumerate(plans):
        groups.setdefault(p.run_dir, []).append(index)
    return list(groups.values())


def to_run(group: list[CellPlan]) -> bool:
    """Whether the group's run directory is opened: it lacks trajectories, or it is a
    single run's (whose model identity is checked and summary written on every run)."""
    return any(p.single_run or p.finished() < p.planned for p in group)


def metered_models(
    cell: Cell, models: Mapping[str, Model], meters: list[Meter], usd: CallPrice,
    on_tokens: Callable[[int], None] | None, counted: Mapping[str, BackendCalls] | None = None,
) -> tuple[Model, dict[str, Model]]:
    """The cell's generator and its role models (by call role), each charging `meters`
    and counting its backend's samples in `counted` (by model name), if given."""

    def metered(name: str, call_role: str) -> MeteredModel:
        return MeteredModel(models[name], meters, usd, call_role, on_tokens=on_tokens,
                            backend_calls=(counted or {}).get(name))

    role_models: dict[str, Model] = {}
    for role, name in cell.roles:
        for call_role in ROLE_CALLS[role]:
            role_models[call_role] = metered(name, call_role)
    return metered(cell.model, "generate"), role_models
