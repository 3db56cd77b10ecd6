"""The driver's side of `--executor ray`: workers per model per node, shards, and the
only writer of the run directories and the call cache.

Each job (an experiment cell, or `veriloop run`'s one run directory) is split into
shards of instances, queued by the model that generates them; every worker of that
model takes shards from the queue (two at a time, so it never idles between them).
A worker streams each trajectory back as it finishes; the driver appends it to the
job's run directory exactly as the local executor would, once: a trajectory whose key
is already there is dropped. When a worker dies mid-shard, Ray restarts it and the
trajectories the driver has not received go back to the queue, for whichever worker
is free. Budgets are the local ones, on the driver: every call asks before it starts.

Single flight across workers (see veriloop.cluster.worker): the driver's call cache holds
the samples in flight (models.cache.Flights), claimed by the workers' calls by name
("SHARD/N") as the driver's own calls claim them. A "begin" never holds a claim while it
waits: it waits until none of its missing samples is in flight, then claims them all at
once, so waits never form a cycle. Every claim ends: a "put" settles it (its waiters get
the samples as cache hits, and the "spent" their workers send counts them as such), the
call's "release" or the end of its shard's stream (however it ends: a dead worker sends
nothing) releases it, and a shard whose stream has ended claims nothing more. A "release"
says whether its call failed (rather than was cancelled): as on one event loop (see
models.cache), a "begin" waits at most once for a sample whose claim failed, then claims
what is free and leaves its worker to make the rest unclaimed, so the waiters of a failed
call ask again together, not in turn.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..domains.base import Instance
from ..errors import VeriloopError
from ..experiment.budget import BudgetReached, CallPrice, Meter, Usage, call_usage
from ..experiment.executor import ClusterStats, api_key_of
from ..models.base import Completion, Model
from ..models.cache import CachedModel, CallCache, Flights
from ..models.settings import ModelSettings
from ..progress import count_calls
from ..records import Trajectory
from ..runs.dirlock import DirectoryHold, hold
from ..runs.jsonl import RecordWriter
from ..runs.runner import TRAJECTORIES, RunResult, cancel_and_wait, finish_run, open_run
from ..strategies.base import Strategy
from . import require_ray
from .jobs import JobSpec, ModelRecipe, Shard, ShardStopped
from .worker import ActorModel, ModelWorker, Relay

if TYPE_CHECKING:
    from ..experiment.schema import Experiment

SHARDS_PER_WORKER = 2  # in flight on each worker: the next one starts while one ends
NAMESPACE = "veriloop"


@dataclass
class Job:
    """One run directory to fill: what `run_experiment` would be given, plus the
    budget meters its calls are charged to and the price of a call by its role."""

    run_dir: Path
    config: dict[str, object]
    domain_key: str
    domain: Any
    data: str | None
    instances: list[Instance]
    strategies: list[Strategy]
    seed: int
    generator: str
    role_models: dict[str, str]  # call role -> model name
    title: str
    experiment: Experiment  # its tool settings, for a CRITIC domain's toolbox
    meters: list[Meter] = field(default_factory=list)
    price: CallPrice = lambda role, prompt, completion, cached_prompt=0, reasoning=0, batch=False: 0.0
    # While running:
    done: dict[tuple[str, str, int], Trajectory] = field(default_factory=dict)
    keys: set[tuple[str, str, int]] = field(default_factory=set)
    new: list[Trajectory] = field(default_factory=list)
    todo: int = 0
    stopped: str | None = None
    writer: RecordWriter | None = None
    hold: DirectoryHold | None = None  # the run directory, held from _open until run() returns
    result: RunResult | None = None
    started: float = 0.0

    @property
    def left(self) -> int:
        return self.todo - len(self.new)


@dataclass
class Worker:
    model: str
    handle: Any
    description: dict[str, Any]
    failures: int = 0
    dead: bool = False


@dataclass
class Lane:
    """One model's queue of shards and its workers."""

    workers: list[Worker]
    queue: deque[Shard] = field(default_factory=deque)
    running: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class WorkerLost(Exception):
    """The worker running a shard died (or was restarted) before the shard ended."""


class RayExecutor:
    """Runs jobs on a Ray cluster: `address` None starts a local one (all this machine's
    CPUs, no dashboard) unless Ray is already initialised; "auto" or ray://HOST:PORT
    joins an existing one. `cache_path`: the call cache (None: off). `shard_size`:
    instances per shard (default: the concurrency, so a shard fills a worker's batch).
    A worker that dies is restarted by Ray up to `max_restarts` times."""

    def __init__(
        self, recipes: Mapping[str, ModelRecipe], *, address: str | None = None, concurrency: int | None = None,
        cache_path: Path | None = None, shard_size: int | None = None, max_restarts: int = 3,
        start_timeout: float = 900.0,
    ) -> None:
        if shard_size is not None and shard_size < 1:
            raise VeriloopError(f"--shard-size must be at least 1, not {shard_size}")
        self.recipes = dict(recipes)
        self.address = address
        self.concurrency = concurrency
        self.cache_path = cache_path
        self.shard_size = shard_size
        self.max_restarts = max_restarts
        self.start_timeout = start_timeout
        self.lanes: dict[str, Lane] = {}
        self.cache: CallCache | None = None
        self.relay: Any = None
        self.started_ray = False
        self.backend_calls = 0  # samples the backends generated for this run
        self.duplicates = 0  # trajectories received twice and dropped (a worker died after sending)
        self.requeued = 0  # trajectories sent back to the queue after their worker died
        self.worker_failures = 0
        self.stopped: str | None = None  # the experiment's budget, once spent
        self.on_tokens: Callable[[int], None] | None = None
        self._streams: set[Any] = set()
        self._actors: list[Any] = []
        self._jobs: list[Job] = []
        self._job_refs: list[Any] = []
        self._on_trajectory: Callable[[Job], None] | None = None
        self._shard_runs = 0
        self._ended_shards: set[str] = set()  # shard runs whose stream ended: they claim nothing more

    # -- the cluster ------------------------------------------------------------------

    async def start(self, names: list[str]) -> None:
        """Join (or start) the cluster and start a worker of each named model on every
        node; wait until each has loaded its model."""
        ray = require_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            if self.address is None:
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                try:
                    ray.init(address=self.address, log_to_driver=False, configure_logging=False)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise VeriloopError(f"cannot join the Ray cluster at {self.address}: {exc}") from None
            self.started_ray = True
        if self.cache_path is not None:
            self.cache = CallCache(self.cache_path)
        run_id = uuid.uuid4().hex[:8]
        relay_name = f"relay-{run_id}"
        self.relay = ray.remote(num_cpus=0)(Relay).options(name=relay_name, namespace=NAMESPACE).remote()
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        if not nodes:
            raise VeriloopError("the Ray cluster has no live node with a CPU to run workers on")
        actor = ray.remote(ModelWorker)
        pending: list[tuple[str, str, Any]] = []
        for name in names:
            recipe = self.recipes[name]
            for node in nodes:
                handle = actor.options(
                    # A worker holding weights computes on the node's CPUs; a server's client does not.
                    num_cpus=1 if recipe.in_process else 0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                    max_restarts=self.max_restarts, max_task_retries=0,
                    name=f"worker-{run_id}-{name}-{node[:8]}", namespace=NAMESPACE,
                ).remote(recipe, self.concurrency, relay_name, NAMESPACE)
                pending.append((name, node, handle))
                self._actors.append(handle)
        try:
            descriptions = await asyncio.wait_for(
                asyncio.gather(*(handle.describe.remote() for _, _, handle in pending)), self.start_timeout)
        except TimeoutError:
            raise VeriloopError(
                f"the workers did not start within {self.start_timeout:.0f} s: a node may lack the CPU a worker "
                "holding weights asks for (1 each), or the model pack"
            ) from None
        except ray.exceptions.RayActorError as exc:
            raise VeriloopError(f"a worker could not load its model: {_cause(exc)}") from None
        for (name, _node, handle), description in zip(pending, descriptions):
            description["cached"] = self.recipes[name].cached and self.cache is not None
            lane = self.lanes.setdefault(name, Lane([]))
            lane.workers.append(Worker(name, handle, description))
        for name, lane in self.lanes.items():
            identities = {w.description["identity"] for w in lane.workers}
            if len(identities) > 1:
                raise VeriloopError(f"the workers of model {name} loaded different weights: {sorted(identities)}")

    def stats(self) -> ClusterStats:
        return ClusterStats(sum(len(lane.workers) for lane in self.lanes.values()), self.worker_failures,
                            self.requeued, self.duplicates)

    def describe(self, name: str) -> dict[str, Any]:
        return self.lanes[name].workers[0].description

    def driver_model(self, name: str) -> Model:
        """The model as the driver calls it (a report's own calls): on a worker, through
        the driver's call cache."""
        lane = self.lanes[name]
        model: Model = ActorModel(lane.workers[0].handle, lane.workers[0].description)
        if self.cache is not None and self.recipes[name].cached:
            model = CachedModel(model, self.cache, owns_cache=False)
        return model

    async def aclose(self) -> None:
        """Stop every task and worker of this run; leave a cluster we joined running."""
        ray = require_ray()
        for stream in list(self._streams):
            try:
                ray.cancel(stream)
            except Exception:  # noqa: BLE001  # a stream that already ended
                pass
        for handle in self._actors:  # every worker started, loaded or not
            ray.kill(handle, no_restart=True)
        if self.relay is not None:
            ray.kill(self.relay, no_restart=True)
        for job in self._jobs:
            if job.writer is not None:
                await job.writer.aclose()
            if job.hold is not None:
                job.hold.release()
                job.hold = None
        if self.cache is not None:
            await self.cache.aclose()
        if self.started_ray:
            ray.shutdown()

    # -- running jobs -----------------------------------------------------------------

    async def run(self, jobs: list[Job], on_trajectory: Callable[[Job], None] | None = None) -> None:
        """Run every job's trajectories left to run; each job's `result` is set once the
        last of them is on disk (unless a budget stopped it)."""
        ray = require_ray()
        import sys

        from ..checks import CHECK_FILES

        for module in CHECK_FILES:
            ray.cloudpickle.register_pickle_by_value(sys.modules[module])
        self._jobs = jobs
        self._on_trajectory = on_trajectory
        try:
            await self._run(jobs)
        finally:
            for job in jobs:
                if job.hold is not None:
                    job.hold.release()
                    job.hold = None

    async def _run(self, jobs: list[Job]) -> None:
        ray = require_ray()
        for index, job in enumerate(jobs):
            self._open(index, job)
            spec = JobSpec(index, job.domain_key, job.domain, job.data, {s.canonical: s for s in job.strategies},
                           job.seed, job.generator, job.role_models, job.experiment)
            self._job_refs.append(ray.put(spec))
        serving = asyncio.create_task(self._serve())
        slots = [asyncio.create_task(self._slot(lane, worker))
                 for lane in self.lanes.values() for worker in lane.workers for _ in range(SHARDS_PER_WORKER)]
        every_slot = asyncio.gather(*slots)
        try:
            # The workers wait on the driver's answers: if serving them fails, stop.
            watched: set[asyncio.Future[Any]] = {every_slot, serving}
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            if serving.done():
                serving.result()
                raise VeriloopError("the driver stopped answering its workers")
            await every_slot
        except BaseException:
            await cancel_and_wait(slots)
            raise
        finally:
            await cancel_and_wait([serving])
            for job in jobs:
                if job.writer is not None:
                    await job.writer.aclose()
                    job.writer = None
        for job in jobs:
            if job.left == 0 and job.stopped is None and job.result is None:
                job.result = finish_run(job.run_dir, job.strategies, job.instances, job.seed, job.done, job.new,
                                        job.started)

    def _open(self, index: int, job: Job) -> None:
        describe = self.describe(job.generator)
        roles = {role: self.describe(name)["identity"] for role, name in job.role_models.items()}
        job.hold = hold(job.run_dir)  # as run_experiment does: one process at a time in a run directory
        job.done, todo = open_run(job.run_dir, describe["name"], describe["identity"], job.domain, job.strategies,
                                  job.instances, job.seed, job.config, roles)
        job.started = time.perf_counter()
        job.keys = set(job.done)
        job.todo = len(todo)
        if todo:
            job.writer = RecordWriter(job.run_dir / TRAJECTORIES)
        size = self.shard_size or self.concurrency or self.describe(job.generator)["preferred_concurrency"]
        items = [(s.canonical, instance) for s, instance in todo]
        lane = self.lanes[job.generator]
        for start in range(0, len(items), size):
            lane.queue.append(Shard.of(index, items[start:start + size]))

    async def _next_shard(self, lane: Lane) -> Shard | None:
        while True:
            if self.stopped is not None:
                return None
            while lane.queue and self._jobs[lane.queue[0].job].stopped is not None:
                lane.queue.popleft()
            if lane.queue:
                return lane.queue.popleft()
            if lane.running == 0:
                return None
            lane.changed.clear()
            await lane.changed.wait()

    async def _slot(self, lane: Lane, worker: Worker) -> None:
        while not worker.dead:
            shard = await self._next_shard(lane)
            if shard is None:
                return
            lane.running += 1
            try:
                await self._run_shard(shard, worker)
            except WorkerLost as exc:
                self.worker_failures += 1
                worker.failures += 1
                job = self._jobs[shard.job]
                if shard.pending and job.stopped is None and self.stopped is None:
                    self.requeued += len(shard.pending)
                    lane.queue.appendleft(shard)
                # Each death fails every shard the worker held; once its restarts are spent,
                # every shard sent to it fails at once, and it is given up.
                if worker.failures > (self.max_restarts + 1) * SHARDS_PER_WORKER:
                    worker.dead = True
                    if all(w.dead for w in lane.workers):
                        raise VeriloopError(f"every worker of model {worker.model} died: {exc}") from None
            finally:
                lane.running -= 1
                lane.changed.set()

    def _peers(self, job: Job, worker: Worker) -> dict[str, tuple[Any, dict[str, Any]]]:
        """A live worker of each other model the job uses, on the same node if there is one."""
        peers = {}
        for name in {job.generator, *job.role_models.values()} - {worker.model}:
            live = [w for w in self.lanes[name].workers if not w.dead] or self.lanes[name].workers
            near = [w for w in live if w.description["node"] == worker.description["node"]]
            chosen = (near or live)[0]
            peers[name] = (chosen.handle, chosen.description)
        return peers

    async def _run_shard(self, shard: Shard, worker: Worker) -> None:
        ray = require_ray()
        job = self._jobs[shard.job]
        self._shard_runs += 1
        shard_id = f"s{self._shard_runs}"  # names this run's claims; a re-run of the shard gets another
        stream = worker.handle.run_shard.options(num_returns="streaming").remote(
            self._job_refs[shard.job], shard.items(), self._peers(job, worker), shard_id)
        self._streams.add(stream)
        try:
            async for ref in stream:
                item = await ref
                if isinstance(item, ShardStopped):
                    self._budget_stop(job, item)
                    return
                await self._receive(job, shard, item)
        except ray.exceptions.RayTaskError as exc:
            if job.stopped is not None or self.stopped is not None:
                return  # cancelled after a budget stop
            cause = _cause(exc)
            raise cause if isinstance(cause, VeriloopError) else VeriloopError(f"a worker failed: {cause}") from None
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError,
                ray.exceptions.TaskCancelledError) as exc:
            if job.stopped is not None or self.stopped is not None:
                return
            raise WorkerLost(str(exc).splitlines()[0]) from None
        finally:
            self._streams.discard(stream)
            self._end_shard(shard_id)

    def _end_shard(self, shard_id: str) -> None:
        """The shard run's stream has ended (its worker finished, stopped or died): release
        its calls' claims, so no one waits for what it will not put."""
        self._ended_shards.add(shard_id)
        if self.cache is not None:
            prefix = f"{shard_id}/"
            self.cache.flights().release_owners(lambda owner: isinstance(owner, str) and owner.startswith(prefix))

    async def _receive(self, job: Job, shard: Shard, trajectory: Trajectory) -> None:
        shard.pending.pop((trajectory.strategy, trajectory.instance_id), None)
        if trajectory.key in job.keys:
            self.duplicates += 1
            return
        job.keys.add(trajectory.key)
        assert job.writer is not None
        await job.writer.append(trajectory)
        job.new.append(trajectory)
        if self._on_trajectory is not None:
            self._on_trajectory(job)

    def _budget_stop(self, job: Job, stop: ShardStopped) -> None:
        ray = require_ray()
        if stop.scope == "experiment":
            if self.stopped is None:
                self.stopped = stop.message
                for stream in list(self._streams):  # what was running is dropped, as locally
                    ray.cancel(stream)
        elif job.stopped is None:
            job.stopped = stop.message
        for lane in self.lanes.values():
            lane.changed.set()

    # -- what workers ask ---------------------------------------------------------------

    async def _serve(self) -> None:
        """Answer each request as soon as its answer is ready: a "begin" waiting for a
        sample in flight must not hold up the "put" that ends its wait. The answers ready
        together go back to the relay together."""
        ready: list[tuple[int, Any]] = []
        some_ready = asyncio.Event()
        answering: set[asyncio.Task[None]] = set()

        async def answer(request_id: int, request: tuple[Any, ...]) -> None:
            ready.append((request_id, await self._answer(request)))
            some_ready.set()

        async def send() -> None:
            while True:
                await some_ready.wait()
                some_ready.clear()
                batch = ready[:]
                ready.clear()
                await self.relay.answer.remote(batch)

        sending = asyncio.create_task(send())
        try:
            while not sending.done():
                for request_id, request in await self.relay.take.remote(0.5):
                    task = asyncio.create_task(answer(request_id, request))
                    answering.add(task)
                    task.add_done_callback(answering.discard)
            sending.result()  # the relay is gone: say why
        finally:
            await cancel_and_wait([*answering, sending])

    async def _answer(self, request: tuple[Any, ...]) -> dict[str, Any]:
        try:
            kind, job_index, *rest = request
            job = self._jobs[job_index]
            if kind == "begin":
                # The claimant's name is absent from an older worker's request: it then
                # claims and waits for nothing, as before single flight.
                call_role, key, start, stop, *named = rest
                for meter in job.meters:
                    meter.check()
                if key is None or self.cache is None:
                    return {"value": {}}
                hits = await self._begin(key, range(start, stop), named[0] if named else None)
                return {"value": {i: c.to_json() for i, c in hits.items()}}
            if kind == "put":
                key, start, completions, *named = rest
                if self.cache is not None:
                    made = [Completion.from_json(c) for c in completions]
                    await self.cache.aput(key, start, made)
                    if named and named[0] is not None:  # committed: its waiters may have it
                        self.cache.flights().settle(key, start, made, named[0])
                return {"value": None}
            if kind == "release":
                # Whether the call failed is absent from an older worker's request: a release as before.
                key, start, stop, owner, *failed = rest
                if self.cache is not None:
                    self.cache.flights().release(key, range(start, stop), owner, failed=bool(failed and failed[0]))
                return {"value": None}
            if kind == "spent":
                call_role, samples = rest
                spent = Usage()
                # (prompt, completion, from the cache[, cached prompt, reasoning tokens]):
                # an older worker sends the first three.
                for prompt, completion, cached, *parts in samples:
                    cached_prompt, reasoning = (*parts, 0, 0)[:2]
                    spent.add(call_usage(call_role, prompt, completion, cached_prompt, reasoning, job.price))
                    self.backend_calls += not cached
                for meter in job.meters:
                    meter.used.add(spent)
                count_calls(len(samples))  # the progress display open in this task, as Episode.call does locally
                if self.on_tokens is not None:
                    self.on_tokens(spent.tokens)
                return {"value": None}
            return {"error": f"the driver does not know the request {kind!r}"}
        except BudgetReached as exc:
            return {"budget": (exc.scope, str(exc))}
        except Exception as exc:  # noqa: BLE001  # a worker waits for every answer: it gets the error
            return {"error": f"the driver could not answer a worker: {exc}"}

    async def _begin(self, key: str, wanted: range, owner: str | None) -> dict[int, Completion]:
        """The samples of `wanted` the cache has or a call in flight makes (waited for);
        the others are claimed for `owner`, who makes them. Claims nothing and waits for
        nothing for no owner, or one whose shard has ended (its worker is gone)."""
        assert self.cache is not None
        flights = self.cache.flights()
        found: dict[int, Completion] = {}
        failed: set[int] = set()  # samples whose claim failed while this call waited: not waited for again
        while True:
            # The cache, then the flights, with no await between: each sample missing
            # from the cache is either in flight or free to claim.
            found.update({i: c for i, c in self.cache.get(key, wanted).items() if i not in found})
            missing = [i for i in wanted if i not in found]
            if owner is None or owner.partition("/")[0] in self._ended_shards:
                return found
            waits = flights.flying(key, [i for i in missing if i not in failed])
            if not waits:
                # A sample that failed once and another of its waiters claimed since is
                # made by this call too, unclaimed.
                flights.claim(key, [i for i in missing if not flights.in_flight(key, i)], owner)
                return found
            # Holding no claim: a released sample is looked for again (the cache, the
            # flights) and claimed if no one has it.
            replies, failed_now = await Flights.wait(waits)
            found.update(replies)
            failed |= failed_now


def _cause(exc: BaseException) -> BaseException:
    """What a worker raised, without Ray's wrapping."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return cause
    return exc


def model_recipes(experiment: Experiment, names: list[str], *, use_cache: bool,
                  api_keys: Mapping[str, str] | None = None,
                  given: Mapping[str, Any] | None = None) -> dict[str, ModelRecipe]:
    """How the workers load the experiment's models (the driver resolves the API keys, so
    a worker needs none in its environment)."""
    recipes = {}
    for name in names:
        entry = experiment.models[name]
        if given and name in given:
            raise VeriloopError(f"models.{name}: a model passed from Python runs only with the local executor; "
                                "under Ray give it an id (a pack, a .gguf path, openai/MODEL)")
        if entry.id is None:
            raise VeriloopError(f"models.{name} has no id: give it one (a pack, a .gguf path, openai/MODEL)")
        recipes[name] = recipe(name, entry, concurrency=entry.concurrency or experiment.concurrency,
                               api_key=api_key_of(experiment, name, api_keys), cached=use_cache and entry.cache)
    return recipes


def recipe(name: str, model: str | ModelSettings, *, api_key: str | None = None, cached: bool = True,
           **settings: Any) -> ModelRecipe:
    """The recipe of model `name`: its settings (an id or ModelSettings, with `settings` by
    field name), a server's key (default: from the environment, here rather than on each
    worker) and whether its calls go through the driver's cache."""
    chosen = ModelSettings.of(model, **settings)
    if chosen.is_server and api_key is None:
        api_key = os.environ.get("VERILOOP_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if chosen.is_server and chosen.base_url:
        from ..models.openai_compat import check_base_url

        check_base_url(chosen.base_url)  # here, in one line, rather than on every worker
    return ModelRecipe(name, chosen, api_key=api_key, cached=cached)
