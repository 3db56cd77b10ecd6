"""`veriloop eval`: an experiment file's matrix of cells, one results table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError
from .common import ExecutorChoice, _exit_interrupted, err, out, view_hint
from .options import TYPED, CacheFlags, ExecutorFlags, grouped

if TYPE_CHECKING:
    from ..experiment.engine import CellPlan, EvalResult, ExecutorOptions, Progress, SingleRun
    from ..experiment.schema import Experiment
    from ..progress import ProgressReporter


@grouped
def eval_command(
    experiment: Annotated[str | None, typer.Argument(
        metavar="EXPERIMENT", help="An experiment file (.toml), or the name of a shipped one (see --list)."
    )] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Experiment directory (resumable; one run directory per cell). Default: runs/eval-NAME."
    )] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="List the cells, their instances and a call/token estimate; run nothing."
    )] = False,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=VALUE",
        help="Override a key of the file, repeatable: n=5, seeds=[0,1], models.main.id=qwen2.5-coder-1.5b, "
        "domains.0.n=3, budget.max_calls=100 (VALUE read as TOML, else as text).",
    )] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the shipped experiment files and exit.")] = False,
    cache: CacheFlags = TYPED,
    where: ExecutorFlags = TYPED,
) -> None:
    """Run an experiment written as a file: models x domains (or tasks) x strategies x
    seeds, with roles (a judge, critic or checker model apart from the generator),
    budgets and include/exclude rules. Each cell is a resumable run directory under
    --out; the results go to results.csv, results.md and results.json (one row per cell),
    frontier.png (accuracy against tokens, Pareto front) and, in results.md, each
    strategy's accuracy at matched token budgets. A finished experiment re-runs with no
    model call; after a budget stop, raise the cap and run again to continue.

    The file format: docs/guides/experiments.md, every key in docs/reference/experiment-file.md."""
    from ..experiment.overrides import describe, find_experiment, load_experiment, shipped_experiments

    if list_:
        for name, path in shipped_experiments().items():
            _, about = describe(path)
            out.print(f"{name}: {about}", highlight=False)
            out.print(f"  {path}", highlight=False)
        return
    if experiment is None:
        raise VeriloopError("give an experiment file (or a shipped name: veriloop eval --list)")
    spec = load_experiment(find_experiment(experiment), set_ or [])
    run_experiment_file(spec, out_dir, dry_run=dry_run, cache=cache.cache, use_cache=not cache.no_cache,
                        executor=where.where)


def run_experiment_file(
    spec: Experiment, out_dir: Path | None, *, dry_run: bool = False, cache: Path | None = None,
    use_cache: bool = True, title: str | None = None, api_keys: dict[str, str] | None = None,
    show: Callable[[Experiment, EvalResult], None] | None = None, executor: ExecutorChoice | None = None,
) -> EvalResult | None:
    """Plan, (dry-run or) run and report an experiment; returns the EvalResult (None for a
    dry run). `api_keys`: by model name (a command's --api-key); `show(spec, result)`
    prints the outcome instead of the results table (a reproduction prints its paper's);
    `executor`: where the cells run (default: here)."""
    from ..experiment.engine import ExecutorOptions, Progress, plan
    from ..progress import ProgressReporter
    from .common import slug

    target = out_dir or Path("runs") / f"eval-{slug(spec.name)}"
    plans = plan(spec, target)
    if dry_run:
        print_plan(spec, plans, target)
        return None
    where = executor or ExecutorChoice()
    reporter = ProgressReporter(f"{spec.name}")
    options = ExecutorOptions(cache_path=cache, use_cache=use_cache, api_keys=api_keys, address=where.address,
                              shard_size=where.shard_size)
    result = through_the_door(spec, target, where, options, reporter,
                              Progress(update=reporter.update_stage, tokens=reporter.tokens_done), plans=plans,
                              loading="while the models were loading; nothing was run")
    for note in result.notes:  # once per run, whichever way its outcome is shown
        err.print(f"warning: {note}", highlight=False, markup=False)
    if show is not None:
        show(spec, result)
    else:
        print_results(spec, result, title)
    return result


def through_the_door(
    spec: Experiment, target: Path, where: ExecutorChoice, options: ExecutorOptions, reporter: ProgressReporter,
    progress: Progress, *, plans: list[CellPlan] | None = None, single: SingleRun | None = None, loading: str,
) -> EvalResult:
    """The experiment (or single run) through the engine's one door (engine.execute), on
    the executor chosen, its progress on `reporter`. Ctrl-C exits with status 130 at once,
    saying where finished work is kept; while the local executor loads its models it is
    held back until they have loaded (`loading` says so), as llama.cpp would swallow it."""
    import asyncio

    from ..experiment.engine import execute
    from ..experiment.executor import ModelsLoadInterrupted

    try:
        with reporter:
            result = asyncio.run(execute(spec, target, executor=where.executor, options=options, progress=progress,
                                         plans=plans, single=single))
    except ModelsLoadInterrupted:
        _exit_interrupted(target, loading)
    except KeyboardInterrupt:
        _exit_interrupted(target)
    if result.cluster is not None:
        err.print(result.cluster.note(), highlight=False)
    return result


def print_plan(spec: Experiment, plans: list[CellPlan], target: Path) -> None:
    from ..experiment.engine import estimate
    from ..tables import fit_table

    estimates = [estimate(p) for p in plans]
    rows = []
    for p, e in zip(plans, estimates):
        roles = ", ".join(f"{role.removesuffix('_model')}={name}" for role, name in p.cell.roles) or "-"
        rows.append([p.cell.model, p.cell.domain, p.cell.strategy, str(p.cell.seed), roles,
                     f"{p.finished()}/{p.planned}", "?" if e.calls is None else str(e.calls),
                     "?" if e.tokens is None else str(e.tokens)])
    headers = ["model", "domain", "strategy", "seed", "roles", "done/instances", "calls (at most)", "tokens (about)"]
    out.print(fit_table(headers, rows, out.width, title=f"{spec.name}: {len(plans)} cells in {target}/"))
    unknown = any(e.calls is None for e in estimates)
    out.print(
        f"{len(plans)} cells, {sum(p.planned - p.finished() for p in plans)} trajectories to run: at most "
        f"{_total([e.calls for e in estimates])} calls, about {_total([e.tokens for e in estimates])} tokens"
        + (" (cells marked ? not counted: their calls depend on the answers)" if unknown else ""),
        highlight=False,
    )
    if spec.report:
        out.print(f"then the {spec.report} report (the model calls of its own, if any, are not in the estimate)",
                  highlight=False)


def _total(values: list[int | None]) -> str:
    """The sum of the known values; "+" when some are not known."""
    return str(sum(v for v in values if v is not None)) + ("+" if None in values else "")


def print_results(spec: Experiment, result: EvalResult, title: str | None = None) -> None:
    from ..experiment.results import TABLE_HEADERS, table_rows
    from ..tables import fit_table

    rows = result.rows  # as results.csv has them
    out.print(fit_table(TABLE_HEADERS, table_rows(rows), out.width, title=title or f"{spec.name}: {len(rows)} cells"))
    if result.stopped:
        err.print(f"stopped: {result.stopped}", highlight=False)
    if result.incomplete_cells:
        err.print(
            f"{len(result.incomplete_cells)} incomplete cell(s): {'; '.join(result.incomplete_cells)}. Raise the cap "
            "(in the file or with --set budget.max_calls=..., cell_budget...) and run again to continue.",
            highlight=False,
        )
    if result.report_files:
        out.print(f"{spec.report} report: {', '.join(result.report_files)}", highlight=False)
    elif spec.report:
        err.print(f"the {spec.report} report was not written: the experiment stopped before its end", highlight=False)
    out.print(
        f"{result.new_trajectories} new trajectories, {result.backend_calls} backend calls, "
        f"{result.wall_seconds:.1f} s; results in {result.out_dir}/ (results.csv, results.md, results.json"
        f"{', frontier.png' if (result.out_dir / 'frontier.png').exists() else ''})",
        highlight=False,
    )
    out.print(view_hint(result.out_dir), highlight=False, markup=False)
