"""Single flight across Ray workers through the driver (issue 30, item 1): a "begin" for
samples another call has claimed and not yet put waits for that put and gets them as
cache hits; a claim ends when its call fails or is cancelled (the worker's "release") or
when its shard's stream ends (a dead worker sends nothing), and budgets and the "spent"
accounting count a waiter's samples as cache hits.

Most tests run the driver's side and the workers' calls in this process: the real Relay
and the driver's real serving loop, with the actors' `.remote` calls made on this event
loop. The last one runs a real local Ray cluster against a scripted server on 127.0.0.1.
Calls are held by gates the test opens once everything has gone as far as it can: the
outcomes depend on the order of events only, never on the machine's speed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scripted import Gated
from servers import ChatReplies, serving

from veriloop import CallCache, Completion, FunctionModel, GenParams
from veriloop.cluster.driver import Job, RayExecutor, Worker, WorkerLost, recipe
from veriloop.cluster.jobs import Shard
from veriloop.cluster.worker import Relay, RelayedModel
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.experiment.budget import Meter, Usage
from veriloop.experiment.schema import Budget
from veriloop.runs.runner import cancel_and_wait, load_trajectories

MESSAGES = [{"role": "user", "content": "Name an even number."}]


class Handle:
    """An actor's methods as a handle calls them (`handle.method.remote(...)`), run on
    this event loop."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def __getattr__(self, name: str) -> SimpleNamespace:
        method = getattr(self._actor, name)
        return SimpleNamespace(remote=lambda *args: asyncio.ensure_future(method(*args)))


async def run_the_loop(spins: int = 200) -> None:
    """Let every task go as far as it can: here requests and answers hop between tasks of
    this loop only (no thread, no socket), so this many turns are enough for each."""
    for _ in range(spins):
        await asyncio.sleep(0)


class Driver:
    """A RayExecutor's driver side with one job (a budget meter, a call cache), serving a
    real Relay; `worker_model(shard)` is a worker's model of that job for one shard run."""

    def __init__(self, tmp_path: Path, fn: Gated) -> None:
        self.meter = Meter("experiment", Budget(max_calls=10), Usage())
        job = Job(run_dir=tmp_path, config={}, domain_key="game24", domain=get_domain("game24"), data=None,
                  instances=[], strategies=[], seed=0, generator="m", role_models={}, title="t", experiment=None,
                  meters=[self.meter])
        self.executor = RayExecutor({})
        self.executor._jobs = [job]
        self.executor.cache = CallCache(tmp_path / "calls.sqlite")
        self.relay = Relay()
        self.executor.relay = Handle(self.relay)
        self.fn = fn

    def worker_model(self, shard: str) -> RelayedModel:
        # Each worker holds its own model object: the same weights (identity), another process.
        target = FunctionModel(self.fn, identity="gated-v1")
        return RelayedModel(target, Handle(self.relay), 0, "generate", cached=True, shard=shard)

    def run(self, scenario: Callable[[], Any]) -> Any:
        async def go() -> Any:
            serving = asyncio.create_task(self.executor._serve())
            try:
                return await scenario()
            finally:
                await cancel_and_wait([serving])
                assert self.executor.cache is not None
                await self.executor.cache.aclose()

        return asyncio.run(go())


def test_identical_calls_on_two_workers_make_one_backend_call_and_charge_both(tmp_path) -> None:
    driver = Driver(tmp_path, Gated())

    async def scenario() -> tuple[list[Completion], ...]:
        calls = [asyncio.create_task(driver.worker_model(shard).generate(MESSAGES, GenParams()))
                 for shard in ("s1", "s2")]
        await run_the_loop()
        assert driver.fn.log == ["start 1"]  # the second waits on the driver for the first's put
        assert len(driver.relay.waiting) == 1
        driver.fn.gate.set()
        return tuple(await asyncio.gather(*calls))

    (first,), (second,) = driver.run(scenario)
    assert driver.fn.log == ["start 1", "end 1"]
    assert (first.text, first.cached, second.text, second.cached) == ("reply 1", False, "reply 1", True)
    # both charged to the budget, as a cache hit is; one made by a backend
    assert (driver.meter.used.calls, driver.executor.backend_calls) == (2, 1)


def test_a_failing_call_releases_its_claim_and_the_waiter_asks_itself(tmp_path) -> None:
    driver = Driver(tmp_path, Gated(fail_first=True))

    async def scenario() -> tuple[BaseException | list[Completion], ...]:
        first = asyncio.create_task(driver.worker_model("s1").generate(MESSAGES, GenParams()))
        await run_the_loop()
        waiter = asyncio.create_task(driver.worker_model("s2").generate(MESSAGES, GenParams()))
        await run_the_loop()
        assert driver.fn.log == ["start 1"]
        driver.fn.gate.set()
        return tuple(await asyncio.gather(first, waiter, return_exceptions=True))

    failed, (own,) = driver.run(scenario)
    assert isinstance(failed, VeriloopError) and "the server went away" in str(failed)
    assert driver.fn.log == ["start 1", "failed 1", "start 2", "end 2"]
    assert (own.text, own.cached) == ("reply 2", False)
    assert (driver.meter.used.calls, driver.executor.backend_calls) == (1, 1)


def test_the_waiters_of_a_failed_call_on_the_driver_ask_again_together(tmp_path) -> None:
    """As on one event loop: four identical calls on four workers to a backend that refuses
    the request; the first one's failure ("release" saying it failed) lets the other three
    ask at once rather than one after another."""
    driver = Driver(tmp_path, Gated(fail_all=True))

    async def scenario() -> list[BaseException | list[Completion]]:
        calls = [asyncio.create_task(driver.worker_model(shard).generate(MESSAGES, GenParams()))
                 for shard in ("s1", "s2", "s3", "s4")]
        await run_the_loop()
        assert driver.fn.log == ["start 1"]
        driver.fn.gate.set()
        driver.fn.gate = asyncio.Event()  # the calls that start now are held
        await run_the_loop()
        assert driver.fn.log == ["start 1", "failed 1", "start 2", "start 3", "start 4"]
        driver.fn.gate.set()
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        await run_the_loop()  # the driver serves the releases the failed calls sent on their way out
        return outcomes

    outcomes = driver.run(scenario)
    assert all(isinstance(o, VeriloopError) and "the server refused the request" in str(o) for o in outcomes)
    assert sorted(driver.fn.log[5:]) == ["failed 2", "failed 3", "failed 4"]
    assert driver.executor.backend_calls == 0


def test_a_cancelled_call_releases_its_claim_and_the_waiter_asks_itself(tmp_path) -> None:
    driver = Driver(tmp_path, Gated())

    async def scenario() -> tuple[BaseException | list[Completion], ...]:
        first = asyncio.create_task(driver.worker_model("s1").generate(MESSAGES, GenParams()))
        await run_the_loop()
        waiter = asyncio.create_task(driver.worker_model("s2").generate(MESSAGES, GenParams()))
        await run_the_loop()
        assert driver.fn.log == ["start 1"]
        first.cancel()
        await run_the_loop()
        assert driver.fn.log == ["start 1", "cancelled 1", "start 2"]
        driver.fn.gate.set()
        return tuple(await asyncio.gather(first, waiter, return_exceptions=True))

    cancelled, (own,) = driver.run(scenario)
    assert isinstance(cancelled, asyncio.CancelledError)
    assert (own.text, own.cached) == ("reply 2", False)
    assert driver.executor.backend_calls == 1


def test_other_samples_and_other_params_are_not_merged(tmp_path) -> None:
    """In flight: samples 0-1 at t=0.7. Samples 1-2 at t=0.7 wait for sample 1 before
    claiming 2 (a begin never holds a claim while it waits); samples 0-1 at t=1.0 are
    another call, made at once."""
    driver = Driver(tmp_path, Gated())

    async def scenario() -> tuple[list[Completion], ...]:
        hot, warm = GenParams(n=2, temperature=1.0), GenParams(n=2, temperature=0.7)
        first = asyncio.create_task(driver.worker_model("s1").generate(MESSAGES, warm))
        overlapping = asyncio.create_task(driver.worker_model("s2").generate(MESSAGES, warm.with_(sample_offset=1)))
        hotter = asyncio.create_task(driver.worker_model("s3").generate(MESSAGES, hot))
        await run_the_loop()
        assert driver.fn.log == ["start 1", "start 2"]  # the first's sample 0 and the hotter call's
        driver.fn.gate.set()
        return tuple(await asyncio.gather(first, overlapping, hotter))

    first, overlapping, hotter = driver.run(scenario)
    assert [c.cached for c in first] == [False, False]
    assert [(c.text, c.cached) for c in overlapping] == [(first[1].text, True), ("reply 5", False)]
    assert [c.cached for c in hotter] == [False, False]
    assert driver.executor.backend_calls == 5


class Stream:
    """A shard's stream of trajectories that yields none: its worker dies when told."""

    def __init__(self) -> None:
        self.die = asyncio.Event()

    def __aiter__(self) -> Stream:
        return self

    async def __anext__(self) -> Any:
        import ray

        await self.die.wait()
        raise ray.exceptions.WorkerCrashedError()


def test_a_dead_workers_claims_are_released_and_its_shard_claims_nothing_more(tmp_path) -> None:
    """The worker dies with a sample claimed and not put (it sends no release): when its
    shard's stream fails, the driver releases the claim, the waiter claims the sample,
    and a late request of the dead shard claims and waits for nothing."""
    pytest.importorskip("ray")
    driver = Driver(tmp_path, Gated())
    executor = driver.executor
    stream, shard_ids = Stream(), []

    def run_shard(job: Any, items: Any, peers: Any, shard_id: str) -> Stream:
        shard_ids.append(shard_id)
        return stream

    handle = SimpleNamespace(run_shard=SimpleNamespace(options=lambda **_: SimpleNamespace(remote=run_shard)))
    worker = Worker("m", handle, {"node": "n1"})
    executor._job_refs = [None]
    made = Completion(text="8", finish_reason="stop", prompt_tokens=5, completion_tokens=1)

    def begin(owner: str) -> asyncio.Task[dict]:
        return asyncio.create_task(executor._answer(("begin", 0, "generate", "k", 0, 1, owner)))

    async def scenario() -> None:
        running = asyncio.create_task(executor._run_shard(Shard.of(0, []), worker))
        await run_the_loop()
        (dead,) = shard_ids
        assert await begin(f"{dead}/1") == {"value": {}}  # claimed by the worker about to die
        waiter = begin("s9/1")
        await run_the_loop()
        assert not waiter.done()
        stream.die.set()
        with pytest.raises(WorkerLost):
            await running
        assert await waiter == {"value": {}}  # released: the waiter now holds the claim
        late = begin(f"{dead}/2")
        await run_the_loop()
        assert late.done() and late.result() == {"value": {}}  # no claim, no wait
        third = begin("s10/1")
        await run_the_loop()
        assert not third.done()  # waits for the waiter's put
        assert await executor._answer(("put", 0, "k", 0, [made.to_json()], "s9/1")) == {"value": None}
        assert await third == {"value": {0: made.to_json()}}

    driver.run(scenario)


# ------------------------------------------------------------------ on a real local Ray cluster


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster for the module: 2 CPUs, no dashboard."""
    import ray

    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield context.address_info["address"]
    ray.shutdown()


class HeldReplies(ChatReplies):
    """Numbers each chat completion it is asked for ("Answer: reply-N"); each waits for
    the class's gate."""

    lock = threading.Lock()
    bodies: list[dict] = []
    gate = threading.Event()

    def reply(self, body: dict) -> str:
        with self.lock:
            self.bodies.append(body)
            number = len(self.bodies)
        self.gate.wait(300)  # a bound for a broken test only: the test opens it
        return f"Answer: reply-{number}"


@pytest.mark.ray
def test_identical_calls_on_a_ray_worker_send_one_request_each(tmp_path, ray_cluster) -> None:
    """standard and backprompt's first (and only) round on 3 puzzles: 6 trajectories at
    once on a worker, 3 distinct calls. The server holds every request until the driver
    has been asked to begin all 6 calls, so each identical call starts while the other is
    in flight: 3 requests, and each puzzle's second call replays the first's reply."""
    from veriloop.experiment.engine import build_domain
    from veriloop.experiment.schema import Experiment
    from veriloop.strategies import parse_strategy

    puzzles, specs = 3, ["standard", "backprompt:verifier=sound,feedback=first,max_rounds=1"]
    calls = puzzles * len(specs)
    HeldReplies.bodies, HeldReplies.gate = [], threading.Event()
    with serving(HeldReplies) as port:
        url = f"http://127.0.0.1:{port}/v1"
        spec = Experiment.model_validate({
            "name": "single-flight", "strategies": specs, "n": puzzles, "domains": [{"name": "game24"}],
            "models": {"main": {"id": "openai/scripted", "base_url": url}}, "concurrency": calls,
        })
        planned = build_domain(spec, spec.domain_entry(spec.domain_keys()[0]))
        strategies = [parse_strategy(s) for s in specs]
        job = Job(run_dir=tmp_path / "run", config={"test": "single-flight"}, domain_key=planned.key,
                  domain=planned.domain, data=planned.data, instances=planned.instances, strategies=strategies,
                  seed=0, generator="main", role_models={}, title="single-flight", experiment=spec)
        executor = RayExecutor({"main": recipe("main", "openai/scripted", base_url=url, api_key="none",
                                               concurrency=calls)},
                               concurrency=calls, cache_path=tmp_path / "calls.sqlite")
        answer, begun = executor._answer, []

        async def counting_begins(request: tuple[Any, ...]) -> dict[str, Any]:
            if request[0] == "begin":
                begun.append(request)
                if len(begun) == calls:
                    HeldReplies.gate.set()
            return await answer(request)

        executor._answer = counting_begins  # type: ignore[method-assign]

        async def go() -> None:
            try:
                await executor.start(["main"])
                await executor.run([job])
            finally:
                await executor.aclose()

        try:
            asyncio.run(go())
        finally:
            HeldReplies.gate.set()
    assert len(begun) == calls
    assert len(HeldReplies.bodies) == puzzles
    assert executor.backend_calls == puzzles
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    by_puzzle: dict[str, list[tuple[str, bool]]] = {}
    for t in trajectories:
        (call,) = t.calls
        by_puzzle.setdefault(t.instance_id, []).append((call.response, call.cached))
    assert len(trajectories) == calls and len(by_puzzle) == puzzles
    for made in by_puzzle.values():
        (fresh,), (replayed,) = [c for c in made if not c[1]], [c for c in made if c[1]]
        assert fresh[0] == replayed[0] and fresh[0].startswith("Answer: reply-")
