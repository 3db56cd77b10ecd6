"""Run strategies over instances, appending each trajectory as soon as it is finished.

The output directory is the unit of resumption: `trajectories.jsonl` holds every finished
(strategy, instance, seed), so an interrupted run picks up where it stopped and a finished
run re-run makes no model call at all. A trajectory is written whole or not at all.
A run holds its directory (runs.dirlock) from `open_run` to `finish_run`: a second
process on the same directory is refused, so no trajectory is written twice.

A run records what its readers need beside its trajectories, so that none of them has to
rebuild the run's domain (which for a `--task` run would import the check file its
config.json names, and for a generated domain may take as long as the config asks):
`open_run` writes `instances.jsonl`, the run's instances (id, data, reference) one per
line, as `veriloop import` writes its own. The viewer takes references from it and
`rescore` its instances.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..datafiles import MAX_CONFIG, CappedReadError, loads, read_capped
from ..domains.base import Domain, Instance
from ..episode import Episode
from ..errors import ContextOverflow, VeriloopError
from ..models.base import Model
from ..models.batch.scope import current_scope, enter_slot, run_scope
from ..records import Trajectory
from ..stats.metrics import StrategySummary, summarise
from ..stats.paired import PairedComparison, run_paired
from ..strategies.base import Strategy
from ..tools.base import Toolbox
from .dirlock import hold, is_held, refuse_if_held
from .identity import check_same_run
from .jsonl import RecordWriter, load_records, write_file

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
CONFIG = "config.json"
INSTANCES = "instances.jsonl"


@dataclass
class RunResult:
    out_dir: Path
    summaries: list[StrategySummary]
    new_trajectories: int
    reused_trajectories: int
    backend_calls: int
    wall_seconds: float
    paired: list[PairedComparison] = field(default_factory=list)  # set by write_summary


def load_trajectories(path: Path) -> list[Trajectory]:
    return load_records(path, Trajectory)


def check_run_dir(out_dir: Path, config: Mapping[str, object]) -> None:
    """Refuse to continue the run in `out_dir` with other settings (see
    runs.identity), or one another process holds (runs.dirlock); callers may
    check before loading a model, with what they know."""
    refuse_if_held(out_dir)
    path = out_dir / CONFIG
    if path.exists() or path.is_symlink():
        try:
            old = loads(read_capped(path, MAX_CONFIG).decode("utf-8"))
        except FileNotFoundError:
            raise VeriloopError(f"{path} is a link to nothing; it is not a run's config: choose another --out") from None
        except CappedReadError as exc:
            raise VeriloopError(f"{path}: {exc}; it is not a run's config: choose another --out") from None
        except ValueError:
            raise VeriloopError(f"{path} is not valid JSON; restore it or choose another --out") from None
        check_same_run(out_dir, old, config)


def _check_config(out_dir: Path, config: Mapping[str, object]) -> None:
    check_run_dir(out_dir, config)
    write_file(out_dir / CONFIG, json.dumps(config, indent=2, default=str) + "\n")


async def run_episode(
    model: Model, domain: Domain, strategy: Strategy, instance: Instance, seed: int, tools: Toolbox | None = None,
    role_models: Mapping[str, Model] | None = None,
) -> Trajectory:
    """One strategy on one instance, timed; a conversation that outgrows the context ends
    the trajectory (stop reason context_overflow) with its last answer. `role_models`
    hands roles (verify, critique, check) to other models than the generator."""
    t = Trajectory(strategy=strategy.canonical, domain=domain.name, model=model.name, instance_id=instance.id, seed=seed)
    episode = Episode(model=model, domain=domain, instance=instance, seed=seed, trajectory=t, tools=tools,
                      role_models=dict(role_models or {}))
    started = time.perf_counter()
    try:
        await strategy.run(episode)
    except ContextOverflow:
        episode.finish(t.rounds[-1].text if t.rounds else None, "context_overflow")
    t.seconds = round(time.perf_counter() - started, 4)
    return t


async def run_experiment(
    model: Model,
    domain: Domain,
    strategies: list[Strategy],
    instances: list[Instance],
    out_dir: Path,
    seed: int = 0,
    concurrency: int | None = None,
    config: Mapping[str, object] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    tools: Toolbox | None = None,
    role_models: Mapping[str, Model] | None = None,
) -> RunResult:
    """Run every strategy on every instance not already finished in `out_dir`, append each
    trajectory as it finishes and write the summary. `config` holds the settings that
    define the run (see runs.identity); a directory made with other ones is refused.
    `backend_calls` in the result counts the samples generated for this run's new
    trajectories (not the ones replayed from the cache), whatever the model. `role_models`
    gives roles to other models (see run_episode); their identities are part of the run."""
    started = time.perf_counter()
    roles = {r: m.identity for r, m in (role_models or {}).items()}
    # The scope tells a batch model where its journal goes and when every trajectory waits.
    with hold(out_dir), run_scope(out_dir):
        done, todo = open_run(out_dir, model.name, model.identity, domain, strategies, instances, seed, config, roles)
        new = await run_pairs(model, domain, todo, out_dir, seed, total=len(strategies) * len(instances),
                              concurrency=concurrency, on_progress=on_progress, tools=tools, role_models=role_models)
        return finish_run(out_dir, strategies, instances, seed, done, new, started)


async def run_pairs(
    model: Model, domain: Domain, todo: Sequence[tuple[Strategy, Instance]], out_dir: Path, seed: int, *, total: int,
    concurrency: int | None = None, on_progress: Callable[[int, int], None] | None = None,
    tools: Toolbox | None = None, role_models: Mapping[str, Model] | None = None,
) -> list[Trajectory]:
    """Run each (strategy, instance) of `todo`, in order, at most `concurrency` at once,
    appending each trajectory to the run's records as it finishes; progress counts from the
    `total` minus what is left to do. Returns the new trajectories; on an error or a
    cancellation the others are cancelled, and every trajectory finished before is on disk.

    Each of the `concurrency` slots runs one pair after another. With one slot, a record
    is on disk before the next trajectory starts: trajectories run and land strictly one by
    one. With more, a slot starts its next trajectory as soon as its last one ends, while
    that record goes to disk (it waits for it before handing over another, so at most one
    record per slot is on its way); a trajectory counts as finished only once its record is
    on disk, and a record that cannot be written stops the run at once."""
    slots = concurrency or model.preferred_concurrency
    if slots < 1:
        raise ValueError(f"concurrency must be at least 1, not {slots}")
    finished = total - len(todo)
    if on_progress:
        on_progress(finished, total)
    # Appends and fsyncs on its own thread, a batch at a time: the loop keeps serving the
    # model calls in flight while a record goes to disk.
    writer = RecordWriter(out_dir / TRAJECTORIES)
    new: list[Trajectory] = []
    pending = iter(todo)
    tasks: list[asyncio.Task[None]] = []  # the slots
    landing: set[asyncio.Task[None]] = set()  # records on their way to disk
    failed: list[BaseException] = []  # the first record that could not be written
    ended = False
    scope = current_scope()

    async def land(t: Trajectory) -> None:
        nonlocal finished
        await writer.append(t)  # counted as finished only once it is on disk
        new.append(t)
        finished += 1
        if on_progress:
            on_progress(finished, total)

    def landed(task: asyncio.Task[None]) -> None:
        landing.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is None or failed:
            return
        failed.append(error)
        for slot_task in tasks:  # the run stops at once, as when a trajectory fails
            slot_task.cancel()

    async def slot(token: object | None) -> None:
        # A slot starts its next pair in the same step of the event loop as its last one
        # ended: its next request goes out at once, not behind every reply that came back
        # meanwhile (where a task waiting for a free slot would be woken).
        nonlocal ended
        if token is not None:
            enter_slot(token)
        previous: asyncio.Task[None] | None = None
        try:
            for strategy, instance in pending:
                t = await run_episode(model, domain, strategy, instance, seed, tools, role_models)
                if previous is not None:
                    await previous  # long on disk by now, unless the disk is slower than the model
                previous = asyncio.create_task(land(t))
                landing.add(previous)
                previous.add_done_callback(landed)
                if slots == 1:
                    await previous
        finally:
            ended = True  # nothing left to start, or an error: no slot is started after it
            if scope is not None and token is not None:
                scope.leave(token)

    # Every slot counts in the scope before the first starts: until each has made its first
    # call, the run is not all waiting (a batch model would send a batch of one).
    tokens = [scope.join() if scope is not None else None for _ in range(min(slots, len(todo)))]
    try:
        with _old_objects_frozen():
            for token in tokens:
                if ended or failed:
                    if scope is not None and token is not None:
                        scope.leave(token)
                    continue
                tasks.append(asyncio.create_task(slot(token)))
                # One slot started per turn of the loop, so each one's first request goes out
                # (its connection set up) while the next ones start, rather than all of them
                # once the last has started: the first replies then come back spread out, as
                # they were sent, instead of all at once and queued behind one another.
                await asyncio.sleep(0)
            await asyncio.gather(*tasks)
            await asyncio.gather(*landing)
    except BaseException as exc:
        await cancel_and_wait(tasks)
        # A record handed over lands all the same (at once with the error, if the disk failed).
        await asyncio.gather(*landing, return_exceptions=True)
        if failed and isinstance(exc, asyncio.CancelledError):
            raise failed[0] from None  # the slots were stopped for it
        raise
    finally:
        if scope is not None:
            for token in tokens:  # those never started, or stopped before their finally
                scope.leave(token)
        await writer.aclose()
    return new


_freezing = threading.Lock()
_frozen_runs = 0


@contextmanager
def _old_objects_frozen() -> Iterator[None]:
    """Leave the objects alive when a run starts out of the garbage collector's passes
    while it runs (gc.freeze), and hand them back after (gc.unfreeze). A full pass walks
    every object the process holds: a server client's SDK and a domain's tables make about
    200,000, 0.1 to 0.3 s on a busy 2-core machine, during which no reply is read and no
    request sent. Runs that overlap in a process share one freeze, lifted when the last
    ends; objects someone else froze (a forking server's) are left as they are."""
    global _frozen_runs
    with _freezing:
        ours = _frozen_runs > 0 or gc.get_freeze_count() == 0
        if ours:
            if _frozen_runs == 0:
                gc.freeze()
            _frozen_runs += 1
    try:
        yield
    finally:
        if ours:
            with _freezing:
                _frozen_runs -= 1
                if _frozen_runs == 0:
                    gc.unfreeze()


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel the tasks and wait until each has ended (what they raise is theirs)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def open_run(
    out_dir: Path, model_name: str, model_identity: str, domain: Domain, strategies: list[Strategy],
    instances: list[Instance], seed: int, config: Mapping[str, object] | None, role_identities: Mapping[str, str],
) -> tuple[dict[tuple[str, str, int], Trajectory], list[tuple[Strategy, Instance]]]:
    """Check (or record) the run's settings in `out_dir` and return what it already
    holds, by trajectory key, and the (strategy, instance) pairs left to run: the part
    of a run every executor shares, so their run directories are the same. The caller
    holds `out_dir` (runs.dirlock.hold) until the run is finished."""
    for strategy in strategies:
        strategy.check_domain(domain)
    if not is_held(out_dir):
        raise RuntimeError(f"open_run: {out_dir} is not held by this process (runs.dirlock.hold)")
    _check_config(out_dir, {
        "model_name": model_name, **(config or {}), "model_identity": model_identity, "domain": domain.name,
        "seed": seed, "roles": dict(sorted(role_identities.items())),
    })
    write_instances(out_dir, instances)
    done = {t.key: t for t in load_trajectories(out_dir / TRAJECTORIES)}
    todo = [(s, inst) for s in strategies for inst in instances if (s.canonical, inst.id, seed) not in done]
    return done, todo


def write_instances(out_dir: Path, instances: Iterable[Instance]) -> None:
    """instances.jsonl: the instances a run directory's trajectories are on (see the
    module docstring), written whole (a reader never sees half of it)."""
    write_file(out_dir / INSTANCES, "".join(i.model_dump_json() + "\n" for i in instances))


def finish_run(
    out_dir: Path, strategies: list[Strategy], instances: list[Instance], seed: int,
    done: Mapping[tuple[str, str, int], Trajectory], new: list[Trajectory], started: float,
) -> RunResult:
    """The run's summaries over what it held and what it added, also written to summary.json."""
    all_done = {**done, **{t.key: t for t in new}}
    summaries = [
        summarise(s.canonical, (all_done[(s.canonical, i.id, seed)] for i in instances)) for s in strategies
    ]
    result = RunResult(
        out_dir=out_dir,
        summaries=summaries,
        new_trajectories=len(new),
        reused_trajectories=len(strategies) * len(instances) - len(new),
        backend_calls=sum(not call.cached for t in new for call in t.calls),
        wall_seconds=round(time.perf_counter() - started, 3),
    )
    write_summary(result, instances, seed, all_done.values())
    return result


def write_summary(result: RunResult, instances: list[Instance], seed: int,
                  trajectories: Iterable[Trajectory] | None = None) -> None:
    """summary.json: the strategies' summaries, the pool curves (stats.pools) of
    those whose trajectories (`trajectories`, else the run's file) have pools, and each
    pair of strategies compared on the instances both finished (stats.paired; also
    kept in `result.paired` for the caller to print)."""
    from ..stats.pools import run_pools

    ts = list(load_trajectories(result.out_dir / TRAJECTORIES) if trajectories is None else trajectories)
    strategies = [s.strategy for s in result.summaries]
    result.paired = run_paired(strategies, [i.id for i in instances], seed, ts)
    payload = {
        "seed": seed,
        "instances": [i.id for i in instances],
        "backend_calls_this_run": result.backend_calls,
        "wall_seconds_this_run": result.wall_seconds,
        "strategies": {s.strategy: s.model_dump(exclude={"strategy"}) for s in result.summaries},
        "pools": run_pools(strategies, [i.id for i in instances], seed, ts),
        "paired": [c.model_dump() for c in result.paired],
    }
    write_file(result.out_dir / SUMMARY, json.dumps(payload, indent=2) + "\n")
