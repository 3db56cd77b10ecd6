"""An experiment's cells as Ray jobs: the local engine's budgets, progress and records."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..experiment.budget import Meter, Usage, usage_of
from ..experiment.engine import CellPlan, EvalResult, Progress, price_of, recorded_in, run_eval
from ..experiment.spec import ROLE_CALLS, Experiment
from ..models.base import Model
from .driver import ClusterStats, Job, RayExecutor, model_recipes


async def eval_on_ray(
    experiment: Experiment, out_dir: Path, plans: list[CellPlan], names: list[str], progress: Progress | None, *,
    address: str | None = None, shard_size: int | None = None, cache_path: Path | None = None,
    api_keys: Mapping[str, str] | None = None, given: Mapping[str, Any] | None = None,
) -> EvalResult:
    """`run_eval` with the cells on Ray workers of the `names` models, started here and
    stopped on the way out (cancellation included). `cache_path` None: no call cache."""
    recipes = model_recipes(experiment, names, use_cache=cache_path is not None, api_keys=api_keys, given=given)
    executor = RayExecutor(recipes, address=address, concurrency=experiment.concurrency, cache_path=cache_path,
                           shard_size=shard_size)
    try:
        if progress and progress.update:
            progress.update(f"starting Ray workers for {', '.join(names)}", 0, 0)
        await executor.start(names)
        return await run_eval(experiment, out_dir, {}, progress, plans, executor=RayCells(executor))
    finally:
        await executor.aclose()


class RayCells:
    """The engine's CellExecutor on a started RayExecutor."""

    def __init__(self, executor: RayExecutor) -> None:
        self.executor = executor

    @property
    def backend_calls(self) -> int:
        return self.executor.backend_calls

    async def run_cells(self, experiment: Experiment, plans: list[CellPlan],
                        progress: Progress | None) -> tuple[str | None, int]:
        return await run_cells_on_ray(experiment, plans, self.executor, progress)

    def report_models(self) -> dict[str, Model]:
        return {name: self.executor.driver_model(name) for name in self.executor.lanes}

    def stats(self) -> ClusterStats:
        return self.executor.stats()


def cell_jobs(experiment: Experiment, plans: list[CellPlan]) -> list[Job]:
    """A job per cell left to run, charged to the experiment's meter and its own, which
    start from what the records already spent (as the local engine's do)."""
    spent = [usage_of(p.recorded, price_of(experiment, p.cell)) for p in plans]
    whole = Usage()
    for used in spent:
        whole.add(used)
    overall = Meter("experiment", experiment.budget, whole)
    jobs = []
    for p, used in zip(plans, spent):
        if p.finished() == p.planned:
            continue
        role_models = {call_role: name for role, name in p.cell.roles for call_role in ROLE_CALLS[role]}
        jobs.append(Job(
            run_dir=p.run_dir, config=p.config, domain_key=p.domain.key, domain=p.domain.domain, data=p.domain.data,
            instances=p.domain.instances, strategies=[p.strategy], seed=p.cell.seed, generator=p.cell.model,
            role_models=role_models, title=p.cell.title, experiment=experiment,
            meters=[overall, Meter("cell", experiment.cell_budget, used)], price=price_of(experiment, p.cell),
        ))
    return jobs


async def run_cells_on_ray(
    experiment: Experiment, plans: list[CellPlan], executor: RayExecutor, progress: Progress | None = None,
) -> tuple[str | None, int]:
    """`engine.run_cells` on the cluster: every cell at once, on the workers of its
    model; returns why the experiment stopped early (None: it did not) and how many
    trajectories were new."""
    jobs = cell_jobs(experiment, plans)
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
    return executor.stopped, sum(len(job.new) for job in jobs)
