"""Single flight in the call cache (issue 30, item 1): a call whose (key, sample index) is
being generated waits for that answer instead of asking the backend again, on one event
loop, whatever the backend, for every CachedModel sharing the CallCache.

The calls are held in the backend by gates the test opens, and the test lets the event
loop run until every call has gone as far as it can before opening them: the outcomes
depend on the order of events only, never on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted import Gated
from servers import ChatReplies, serving

from veriloop import CachedModel, CallCache, Completion, FunctionModel, GenParams
from veriloop.errors import VeriloopError
from veriloop.models.cache import SINGLE_FLIGHT_ENV
from veriloop.models.openai_compat import OpenAICompatModel

MESSAGES = [{"role": "user", "content": "Name an even number."}]


async def run_the_loop() -> None:
    """Let every task on the loop go as far as it can without a gate: nothing they do
    before one waits on anything but the loop (the cache is read synchronously)."""
    for _ in range(50):
        await asyncio.sleep(0)


def cached_model(fn: Gated, cache: CallCache) -> CachedModel:
    return CachedModel(FunctionModel(fn, identity="gated-v1"), cache, owns_cache=False)


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[CallCache]:
    store = CallCache(tmp_path / "calls.sqlite")
    yield store
    store.close()


def test_identical_calls_in_flight_make_one_backend_call_and_the_others_replay_it(cache) -> None:
    """Three identical calls at once, two on the generator and one on a judge role of the
    same model (another CachedModel on the same cache): one backend call; the waiters get
    its reply as cache hits, and their stats say so."""
    fn = Gated(say_sample=True)
    generator, judge = cached_model(fn, cache), cached_model(fn, cache)

    async def go() -> list[list[Completion]]:
        calls = [asyncio.create_task(m.generate(MESSAGES, GenParams())) for m in (generator, generator, judge)]
        await run_the_loop()
        assert fn.log == ["start 1"]  # the other two wait, rather than asking
        fn.gate.set()
        return await asyncio.gather(*calls)

    (first,), (second,), (third,) = asyncio.run(go())
    assert fn.log == ["start 1", "end 1"]
    assert first.text == second.text == third.text == "reply 1 to sample 0 at t=0.0"
    assert (first.cached, second.cached, third.cached) == (False, True, True)
    assert (first.prompt_tokens, first.finish_reason) == (second.prompt_tokens, second.finish_reason)
    assert (generator.stats.backend_calls, generator.stats.hits) == (1, 1)
    assert (judge.stats.backend_calls, judge.stats.hits) == (0, 1)
    assert cache.get(generate_key(generator), range(0, 1))[0].text == first.text
    # the replies are copies: one call's record cannot change another's
    first.text = "changed"
    assert second.text == third.text == "reply 1 to sample 0 at t=0.0"


def generate_key(model: CachedModel, params: GenParams | None = None) -> str:
    from veriloop.models.cache import call_key

    return call_key(model.backend, model.identity, MESSAGES, params or GenParams())


def test_a_failing_first_call_releases_its_waiter_which_then_asks_itself(cache) -> None:
    fn = Gated(fail_first=True, say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> tuple[BaseException | list[Completion], ...]:
        first = asyncio.create_task(model.generate(MESSAGES, GenParams()))
        await run_the_loop()
        waiter = asyncio.create_task(model.generate(MESSAGES, GenParams()))
        await run_the_loop()
        assert fn.log == ["start 1"]
        fn.gate.set()
        return tuple(await asyncio.gather(first, waiter, return_exceptions=True))

    failed, (own,) = asyncio.run(go())
    # the first call's error is its own; its waiter asked the backend once the claim was released
    assert isinstance(failed, VeriloopError) and "the server went away" in str(failed)
    assert fn.log == ["start 1", "failed 1", "start 2", "end 2"]
    assert (own.text, own.cached) == ("reply 2 to sample 0 at t=0.0", False)
    assert (model.stats.backend_calls, model.stats.hits) == (1, 0)
    assert cache.get(generate_key(model), range(0, 1))[0].text == own.text


def test_a_cancelled_first_call_releases_its_waiter_which_then_asks_itself(cache) -> None:
    fn = Gated(say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> tuple[BaseException | list[Completion], ...]:
        first = asyncio.create_task(model.generate(MESSAGES, GenParams()))
        await run_the_loop()
        waiter = asyncio.create_task(model.generate(MESSAGES, GenParams()))
        await run_the_loop()
        assert fn.log == ["start 1"]
        first.cancel()
        await run_the_loop()
        assert fn.log == ["start 1", "cancelled 1", "start 2"]
        fn.gate.set()
        return tuple(await asyncio.gather(first, waiter, return_exceptions=True))

    cancelled, (own,) = asyncio.run(go())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert (own.text, own.cached) == ("reply 2 to sample 0 at t=0.0", False)
    assert (model.stats.backend_calls, model.stats.hits) == (1, 0)


def test_the_waiters_of_a_failed_call_ask_again_together_not_in_turn(cache) -> None:
    """16 identical calls to a backend that refuses the request (as a server refuses a
    context too long: the identical request fails alike every time). The first call's
    failure wakes its 15 waiters and they all ask at once: two requests in sequence, not
    sixteen one after another. Each call's error is its own; none is stored."""
    fn = Gated(fail_all=True, say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> list[BaseException | list[Completion]]:
        calls = [asyncio.create_task(model.generate(MESSAGES, GenParams())) for _ in range(16)]
        await run_the_loop()
        assert fn.log == ["start 1"]
        fn.gate.set()
        fn.gate = asyncio.Event()  # the first call answers; the calls that start now are held
        await run_the_loop()
        assert fn.log == ["start 1", "failed 1", *(f"start {n}" for n in range(2, 17))]
        fn.gate.set()
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(go())
    assert sorted(fn.log[17:], key=lambda entry: int(entry.split()[1])) == [f"failed {n}" for n in range(2, 17)]
    assert all(isinstance(o, VeriloopError) and "the server refused the request" in str(o) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 16
    assert (model.stats.backend_calls, model.stats.hits) == (0, 0)
    assert cache.get(generate_key(model), range(0, 1)) == {}


def test_after_a_failed_call_one_waiter_claims_and_a_later_call_waits_for_it(cache) -> None:
    """A failure that does not happen again (the server was back): the two waiters of the
    failed call each ask (one with a claim); a call made meanwhile waits for the claimant's
    reply, and the cache holds a reply that one of them got."""
    fn = Gated(fail_first=True, say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> list[BaseException | list[Completion]]:
        calls = [asyncio.create_task(model.generate(MESSAGES, GenParams())) for _ in range(3)]
        await run_the_loop()
        fn.gate.set()
        fn.gate = asyncio.Event()
        await run_the_loop()
        assert fn.log == ["start 1", "failed 1", "start 2", "start 3"]
        calls.append(asyncio.create_task(model.generate(MESSAGES, GenParams())))
        await run_the_loop()
        assert fn.log == ["start 1", "failed 1", "start 2", "start 3"]  # the fourth waits
        fn.gate.set()
        return await asyncio.gather(*calls, return_exceptions=True)

    failed, (second,), (third,), (fourth,) = asyncio.run(go())
    assert isinstance(failed, VeriloopError)
    assert {second.text, third.text} == {"reply 2 to sample 0 at t=0.0", "reply 3 to sample 0 at t=0.0"}
    assert (second.cached, third.cached) == (False, False)
    assert (fourth.cached, fourth.text in (second.text, third.text)) == (True, True)
    assert (model.stats.backend_calls, model.stats.hits) == (2, 1)
    assert cache.get(generate_key(model), range(0, 1))[0].text in (second.text, third.text)


def test_the_waiters_of_a_cancelled_call_still_take_turns(cache) -> None:
    """A cancellation says nothing of the request: of the cancelled call's waiters one asks
    and the others wait for its reply."""
    fn = Gated(say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> list[BaseException | list[Completion]]:
        calls = [asyncio.create_task(model.generate(MESSAGES, GenParams())) for _ in range(4)]
        await run_the_loop()
        calls[0].cancel()
        await run_the_loop()
        assert fn.log == ["start 1", "cancelled 1", "start 2"]
        fn.gate.set()
        return await asyncio.gather(*calls, return_exceptions=True)

    cancelled, *replies = asyncio.run(go())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert fn.log == ["start 1", "cancelled 1", "start 2", "end 2"]
    assert [(c.text, c.cached) for (c,) in replies] == [("reply 2 to sample 0 at t=0.0", False)] + [
        ("reply 2 to sample 0 at t=0.0", True)] * 2
    assert (model.stats.backend_calls, model.stats.hits) == (1, 2)


def test_a_cancelled_waiter_leaves_the_call_and_the_other_waiters_alone(cache) -> None:
    fn = Gated(say_sample=True)
    model = cached_model(fn, cache)

    async def go() -> tuple[BaseException | list[Completion], ...]:
        calls = [asyncio.create_task(model.generate(MESSAGES, GenParams())) for _ in range(3)]
        await run_the_loop()
        calls[1].cancel()
        await run_the_loop()
        assert fn.log == ["start 1"]
        fn.gate.set()
        return tuple(await asyncio.gather(*calls, return_exceptions=True))

    (first,), cancelled, (third,) = asyncio.run(go())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert fn.log == ["start 1", "end 1"]
    assert (first.cached, third.cached, third.text) == (False, True, first.text)
    assert (model.stats.backend_calls, model.stats.hits) == (1, 1)


def test_a_cached_model_within_another_on_the_same_cache_makes_what_the_outer_one_claimed(cache) -> None:
    """A cached model wrapped (through a wrapper keeping its identity, as the call counter
    does) in another on the same cache: the inner call makes the sample its enclosing call
    claimed rather than waiting for it (which would wait forever), and a second identical
    call waits for the outer one."""
    from veriloop.models.counting import CountingModel

    fn = Gated(say_sample=True)
    inner = cached_model(fn, cache)
    outer = CachedModel(CountingModel(inner), cache, owns_cache=False)

    async def go() -> list[list[Completion]]:
        calls = [asyncio.create_task(outer.generate(MESSAGES, GenParams())) for _ in range(2)]
        await run_the_loop()
        assert fn.log == ["start 1"]
        fn.gate.set()
        # A bound for a broken implementation only (a call waiting for itself never ends).
        return await asyncio.wait_for(asyncio.gather(*calls), 120)

    (first,), (second,) = asyncio.run(go())
    assert fn.log == ["start 1", "end 1"]
    assert (first.cached, second.cached, second.text) == (False, True, first.text)
    assert (outer.stats.backend_calls, outer.stats.hits, inner.stats.backend_calls) == (1, 1, 1)


class Recorded:
    """A model that records the params of every call it gets (what the cache asks the
    backend), each call waiting for the gate."""

    backend, identity, name, preferred_concurrency = "recorded", "recorded-v1", "recorded", 8

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.asked: list[tuple[int, int, float]] = []  # (sample_offset, n, temperature)

    async def generate(self, messages: list[dict], params: GenParams) -> list[Completion]:
        self.asked.append((params.sample_offset, params.n, params.temperature))
        await self.gate.wait()
        return [Completion(text=f"sample {params.sample_offset + i} at t={params.temperature}", finish_reason="stop",
                           prompt_tokens=4, completion_tokens=2) for i in range(params.n)]

    async def aclose(self) -> None:
        pass


def test_only_the_same_samples_of_the_same_call_are_merged(cache) -> None:
    """Samples 0-1 in flight; a call for samples 1-2 makes sample 2 (one backend call, the
    run of what no one is making) and waits for sample 1; the same samples at another
    temperature are another call, made at once."""
    inner = Recorded()
    model = CachedModel(inner, cache, owns_cache=False)

    async def go() -> list[list[Completion]]:
        calls = [
            asyncio.create_task(model.generate(MESSAGES, GenParams(n=2, temperature=0.7))),
            asyncio.create_task(model.generate(MESSAGES, GenParams(n=2, sample_offset=1, temperature=0.7))),
            asyncio.create_task(model.generate(MESSAGES, GenParams(n=2, temperature=1.0))),
        ]
        await run_the_loop()
        inner.gate.set()
        return await asyncio.gather(*calls)

    first, overlapping, hotter = asyncio.run(go())
    assert inner.asked == [(0, 2, 0.7), (2, 1, 0.7), (0, 2, 1.0)]
    assert [(c.text, c.cached) for c in first] == [("sample 0 at t=0.7", False), ("sample 1 at t=0.7", False)]
    assert [(c.text, c.cached) for c in overlapping] == [("sample 1 at t=0.7", True), ("sample 2 at t=0.7", False)]
    assert [(c.text, c.cached) for c in hotter] == [("sample 0 at t=1.0", False), ("sample 1 at t=1.0", False)]
    assert (model.stats.backend_calls, model.stats.hits) == (5, 1)


def test_each_event_loop_has_its_own_table_of_calls_in_flight(cache) -> None:
    async def tables() -> tuple[object, object]:
        return cache.flights(), cache.flights()

    here, again = asyncio.run(tables())
    elsewhere, _ = asyncio.run(tables())
    assert here is again and elsewhere is not here


def test_the_baseline_switch_turns_single_flight_off_and_only_it(tmp_path, monkeypatch) -> None:
    """VERILOOP_SINGLE_FLIGHT=0 (bench/single_flight.py's baseline): both calls ask.
    Unset, or any other value, single flight is on. The switch is read when the cache
    is made."""

    def asked(setting: str | None) -> list[str]:
        if setting is None:
            monkeypatch.delenv(SINGLE_FLIGHT_ENV, raising=False)
        else:
            monkeypatch.setenv(SINGLE_FLIGHT_ENV, setting)
        cache = CallCache(tmp_path / f"calls-{setting}.sqlite")
        fn = Gated(say_sample=True)
        model = cached_model(fn, cache)

        async def go() -> None:
            calls = [asyncio.create_task(model.generate(MESSAGES, GenParams())) for _ in range(2)]
            await run_the_loop()
            fn.gate.set()
            await asyncio.gather(*calls)

        try:
            asyncio.run(go())
        finally:
            cache.close()
        return fn.log

    assert asked(None) == asked("1") == ["start 1", "end 1"]
    assert asked("0") == ["start 1", "start 2", "end 1", "end 2"]


# ------------------------------------------------------------------ against a real HTTP server


class HeldReplies(ChatReplies):
    """Counts the chat completions it is asked for; each waits for the class's gate."""

    lock = threading.Lock()
    bodies: list[dict] = []
    arrived = threading.Event()
    gate = threading.Event()

    def reply(self, body: dict) -> str:
        with self.lock:
            self.bodies.append(body)
        self.arrived.set()
        self.gate.wait(120)  # a bound for a broken test only: the test opens it
        return "Answer: 8"


def test_identical_calls_to_a_server_send_one_request(cache) -> None:
    HeldReplies.bodies, HeldReplies.arrived, HeldReplies.gate = [], threading.Event(), threading.Event()
    with serving(HeldReplies) as port:
        model = CachedModel(OpenAICompatModel("scripted", base_url=f"http://127.0.0.1:{port}/v1", api_key="none"),
                            cache, owns_cache=False)

        async def go() -> list[list[Completion]]:
            calls = [asyncio.create_task(model.generate(MESSAGES, GenParams(seed=3))) for _ in range(4)]
            # Each call has read the cache before the first request reached the server
            # (all four started at once, and the first reply waits for the gate).
            assert await asyncio.to_thread(HeldReplies.arrived.wait, 120)
            await run_the_loop()
            HeldReplies.gate.set()
            try:
                return await asyncio.gather(*calls)
            finally:
                await model.aclose()

        replies = [reply for (reply,) in asyncio.run(go())]
    assert len(HeldReplies.bodies) == 1
    assert json.loads(json.dumps(HeldReplies.bodies[0]["messages"])) == MESSAGES
    assert [(c.text, c.cached) for c in replies] == [("Answer: 8", False)] + [("Answer: 8", True)] * 3
    assert (model.stats.backend_calls, model.stats.hits) == (1, 3)
