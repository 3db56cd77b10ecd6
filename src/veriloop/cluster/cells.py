"""An experiment's cells as Ray jobs: `RayCells`, the executor `ray` of
experiment.executor, with the local executor's budgets, progress and records.

It uses only that seam (the plans, Progress, the budget meters and prices it defines)
and the public records of the lower layers; the engine finds it by name.
"""

from __future__ import annotations

from ..experiment.executor import (
    CellPlan,
    ClusterStats,
    ExecutorOptions,
    Progress,
    budget_meters,
    price_of,
    recorded_in,
    run_groups,
    to_run,
)
from ..experiment.matrix import ROLE_CALLS
from ..experiment.schema import Experiment
from ..models.base import Model
from .driver import Job, RayExecutor, model_recipes


class RayCells:
    """The engine's CellExecutor on a RayExecutor: `start` starts a worker of each model
    on every node, `aclose` stops them (and a cluster it started)."""

    def __init__(self, executor: RayExecutor, names: list[str]) -> None:
        self.executor = executor
        self.names = names

    @property
    def backend_calls(self) -> int:
        return self.executor.backend_calls

    async def start(self, progress: Progress | None) -> None:
        if progress and progress.update:
            progress.update(f"starting Ray workers for {', '.join(self.names)}", 0, 0)
        await self.executor.start(self.names)

    async def aclose(self) -> None:
        await self.executor.aclose()

    async def run_cells(self, experiment: Experiment, plans: list[CellPlan],
                        progress: Progress | None) -> tuple[str | None, int]:
        return await run_cells_on_ray(experiment, plans, self.executor, progress)

    def report_models(self) -> dict[str, Model]:
        return {name: self.executor.driver_model(name) for name in self.executor.lanes}

    def stats(self) -> ClusterStats:
        return self.executor.stats()


def ray_cells(experiment: Experiment, names: list[str], options: ExecutorOptions) -> RayCells:
    """The executor `open_executor("ray", ...)` gives, for the `names` models: the driver
    keeps the call cache, and resolves the API keys (a worker needs none)."""
    from ..paths import default_cache_path

    cache_path = (options.cache_path or default_cache_path()) if options.use_cache else None
    recipes = model_recipes(experiment, names, use_cache=cache_path is not None, api_keys=options.api_keys,
                            given=options.given)
    executor = RayExecutor(recipes, address=options.address, concurrency=experiment.concurrency,
                           cache_path=cache_path, shard_size=options.shard_size)
    return RayCells(executor, names)


def cell_jobs(experiment: Experiment, plans: list[CellPlan]) -> list[tuple[Job, list[CellPlan]]]:
    """A job per run directory left to run (a cell's, or a single run's with all its
    strategies), with its plans, charged to the experiment's meter and its cells' own,
    which start from what the records already spent (as the local engine's do)."""
    overall, cell_meters = budget_meters(experiment, plans)
    jobs = []
    for indices in run_groups(plans):
        group = [plans[i] for i in indices]
        if not to_run(group):
            continue
        p = group[0]
        role_models = {call_role: name for role, name in p.cell.roles for call_role in ROLE_CALLS[role]}
        jobs.append((Job(
            run_dir=p.run_dir, config=p.config, domain_key=p.domain.key, domain=p.domain.domain, data=p.domain.data,
            instances=p.domain.instances, strategies=[g.strategy for g in group], seed=p.cell.seed,
            generator=p.cell.model, role_models=role_models, title=p.cell.title, experiment=experiment,
            meters=[overall, *(cell_meters[i] for i in indices)], price=price_of(experiment, p.cell),
        ), group))
    return jobs


async def run_cells_on_ray(
    experiment: Experiment, plans: list[CellPlan], executor: RayExecutor, progress: Progress | None = None,
) -> tuple[str | None, int]:
    """`LocalCells.run_cells` on the cluster: every cell at once, on the workers of its
    model; returns why the experiment stopped early (None: it did not) and how many
    trajectories were new."""
    grouped = cell_jobs(experiment, plans)
    jobs = [job for job, _ in grouped]
    total = sum(p.planned for p in plans)
    finished = sum(p.finished() for p in plans)
    workers = sum(len(lane.workers) for lane in executor.lanes.values())
    title = f"{len(jobs)} cells on {workers} Ray workers"
    if progress and progress.update:
        progress.update(title, finished, total)
    executor.on_tokens = progress.tokens if progress else None

    def landed(job: Job) -> None:
        nonlocal finished
        finished += 1
        if progress and progress.update:
            progress.update(title, finished, total)

    try:
        await executor.run(jobs, landed)
    finally:
        for p in plans:
            p.recorded = recorded_in(p.run_dir, p.strategy, p.cell.seed)
        for job, group in grouped:
            for p in group:
                p.run = job.result
    return executor.stopped, sum(len(job.new) for job in jobs)
