"""The cluster's side: a worker per model per node, and the relay between workers and driver.

A worker (an actor) loads its model once and runs shards of instances, many at a time,
as the local executor runs a cell's trajectories: each one an episode, within the
model's concurrency. Every call of an episode asks the driver first (through the relay):
the driver checks the budgets and answers from its call cache, and stores what the
backend made. So only the driver touches the cache and the run directories, wherever
the workers are.

Single flight across workers: a cached call names itself to the driver (its shard's id
and a number), and the driver's "begin" hands it the samples the cache has or another
call was making (it waits for those), and claims the rest for it. The call then makes
exactly what was claimed, and each run it "put"s settles those samples for the calls
waiting on them. A call that fails or is cancelled with claims unsettled sends "release"
on its way out, saying which of the two (the waiters of a failed call ask again together);
a worker that dies cannot, so the driver releases its shard's claims when the shard's
stream ends.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from typing import Any

from ..domains.base import Instance
from ..errors import VeriloopError
from ..experiment.budget import BudgetReached
from ..models.base import Completion, GenParams, Model, TokenLogprob
from ..models.cache import call_key, generate_missing
from ..models.counting import innermost
from ..records import Message, Trajectory
from ..runs.runner import cancel_and_wait, run_episode
from ..tools.base import Toolbox
from .jobs import JobSpec, ModelRecipe, ShardStopped

Request = tuple[Any, ...]
_CALLS = itertools.count()  # numbers this process's calls, to name their claims on the driver


class Relay:
    """Requests from workers wait here until the driver takes them and answers: the
    driver is not an actor, so it polls (`take` returns as soon as one request arrives)."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, Request]] = []
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.arrived = asyncio.Event()
        self.next_id = 0

    async def ask(self, request: Request) -> Any:
        future = asyncio.get_running_loop().create_future()
        self.next_id += 1
        self.waiting[self.next_id] = future
        self.requests.append((self.next_id, request))
        self.arrived.set()
        return await future

    async def take(self, timeout: float) -> list[tuple[int, Request]]:
        if not self.requests:
            try:
                await asyncio.wait_for(self.arrived.wait(), timeout)
            except TimeoutError:
                pass
        batch, self.requests = self.requests, []
        self.arrived.clear()
        return batch

    async def answer(self, answers: list[tuple[int, Any]]) -> None:
        for request_id, reply in answers:
            future = self.waiting.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(reply)


async def ask(relay: Any, request: Request) -> Any:
    """Send a request to the driver; raise what it refused with."""
    reply = await relay.ask.remote(request)
    if "budget" in reply:
        scope, message = reply["budget"]
        raise BudgetReached(scope, message)
    if "error" in reply:
        raise VeriloopError(reply["error"])
    return reply.get("value")


class RelayedModel:
    """A model as one job's episodes see it for one call role: the budgets are checked
    and the cache read by the driver before the call, and what the backend made goes
    back to it. `target` answers the misses (this worker's model, or another's). With a
    `shard` id (the driver's name for the shard run these episodes belong to), a cached
    call claims what it makes on the driver, and waits there for what another call is
    making (see the module docstring); without one it claims and waits for nothing."""

    def __init__(self, target: Model, relay: Any, job: int, call_role: str, cached: bool,
                 shard: str | None = None) -> None:
        self.target = target
        self.relay = relay
        self.job = job
        self.call_role = call_role
        self.cached = cached
        self.shard = shard
        self.backend = target.backend
        self.identity = target.identity
        self.name = target.name
        self.preferred_concurrency = target.preferred_concurrency

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        key = call_key(self.backend, self.identity, messages, params) if self.cached else None
        wanted = range(params.sample_offset, params.sample_offset + params.n)
        # This call as its claims on the driver name it: the shard's id first, so the
        # driver can release a dead worker's claims by shard.
        owner = f"{self.shard}/{next(_CALLS)}" if key is not None and self.shard is not None else None
        found: dict[int, Completion] = {}

        async def store(start: int, fresh: list[Completion]) -> None:
            if key is not None:
                await ask(self.relay, ("put", self.job, key, start, [c.to_json() for c in fresh], owner))

        cancelled = False
        try:
            # Answered once every sample is in the cache, made by a call it waited for, or
            # claimed for this call (the missing ones, which it makes).
            hits = await ask(self.relay, ("begin", self.job, self.call_role, key, wanted.start, wanted.stop, owner))
            found.update({int(i): Completion.from_json(c) for i, c in hits.items()})
            for c in found.values():
                c.cached = True
            await generate_missing(self.target, messages, params, found, store)
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            if owner is not None and len(found) < len(wanted):
                # Failed or cancelled with samples claimed and not put: their waiters ask
                # for them again now, not when the shard ends (all at once after a failure).
                # Sent, not awaited: a cancelled call cannot wait, and what it raises must
                # stay its own.
                self.relay.ask.remote(("release", self.job, key, wanted.start, wanted.stop, owner, not cancelled))
        completions = [found[i] for i in wanted]
        await ask(self.relay, ("spent", self.job, self.call_role,
                               [(c.prompt_tokens, c.completion_tokens, c.cached, c.cached_prompt_tokens,
                                 c.reasoning_tokens) for c in completions]))
        return completions

    async def aclose(self) -> None:
        pass  # the worker closes its model once


class ActorModel:
    """A model held by another worker (a judge on its own actor), called through Ray.
    It scores text (`score`, for a report's perplexities) when the worker's model can."""

    def __init__(self, handle: Any, description: dict[str, Any]) -> None:
        self.handle = handle
        self.backend = description["backend"]
        self.identity = description["identity"]
        self.name = description["name"]
        self.preferred_concurrency = description["preferred_concurrency"]
        if description.get("scores"):
            self.score = self._score

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        return [Completion.from_json(c) for c in await self.handle.generate.remote(messages, params)]

    async def _score(self, messages: list[Message], continuation: str) -> list[TokenLogprob]:
        return list(await self.handle.score.remote(messages, continuation))

    async def aclose(self) -> None:
        pass


class ModelWorker:
    """One model, loaded once, on one node; runs shards of the jobs whose generator it
    is, `concurrency` trajectories at once over all of them (default: the model's own)."""

    def __init__(self, recipe: ModelRecipe, concurrency: int | None, relay: str, namespace: str) -> None:
        import ray

        self.recipe = recipe
        self.model = recipe.load()
        # Found by name, not handed over: a restarted worker then needs nothing from the
        # object store to come back.
        self.relay = ray.get_actor(relay, namespace=namespace)
        self.slots = asyncio.Semaphore(concurrency or self.model.preferred_concurrency)
        self.tools: dict[int, Toolbox | None] = {}

    def describe(self) -> dict[str, Any]:
        import ray

        return {"name": self.model.name, "backend": self.model.backend, "identity": self.model.identity,
                "preferred_concurrency": self.model.preferred_concurrency, "pid": os.getpid(),
                # The backend under any wrapper (a reply cap) scores, as locally.
                "scores": hasattr(innermost(self.model), "score"),
                "node": ray.get_runtime_context().get_node_id()}

    async def generate(self, messages: list[Message], params: GenParams) -> list[dict[str, Any]]:
        return [c.to_json() for c in await self.model.generate(messages, params)]

    async def score(self, messages: list[Message], continuation: str) -> list[TokenLogprob]:
        scorer: Any = innermost(self.model)
        scored: list[TokenLogprob] = await scorer.score(messages, continuation)
        return scored

    async def run_shard(
        self, job: JobSpec, items: list[tuple[str, Instance]], peers: dict[str, tuple[Any, dict[str, Any]]],
        shard: str | None = None,
    ) -> AsyncIterator[Trajectory | ShardStopped]:
        """Run the shard's episodes, yielding each trajectory as it finishes; a budget that
        refuses a call ends the shard (what was running is dropped, as locally). `shard`:
        the driver's id of this run of the shard, which names its calls' claims."""
        if job.index not in self.tools:
            self.tools[job.index] = await asyncio.to_thread(job.toolbox)
        tools = self.tools[job.index]

        def model_for(name: str, call_role: str) -> Model:
            target: Model = self.model if name == self.recipe.name else ActorModel(*peers[name])
            cached = self.recipe.cached if name == self.recipe.name else bool(peers[name][1]["cached"])
            return RelayedModel(target, self.relay, job.index, call_role, cached, shard)

        generator = model_for(job.generator, "generate")
        role_models = {call_role: model_for(name, call_role) for call_role, name in job.role_models.items()}

        async def one(canonical: str, instance: Instance) -> Trajectory:
            async with self.slots:
                return await run_episode(generator, job.domain, job.strategies[canonical], instance, job.seed,
                                         tools, role_models)

        tasks = [asyncio.create_task(one(canonical, instance)) for canonical, instance in items]
        try:
            for finished in asyncio.as_completed(tasks):
                try:
                    trajectory = await finished
                except BudgetReached as exc:
                    yield ShardStopped(exc.scope, str(exc))
                    return
                yield trajectory
        finally:
            await cancel_and_wait(tasks)
