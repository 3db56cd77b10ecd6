"""Continuous batching on the real small model (SmolLM2-135M): concurrent calls decode in
one context, join as slots free up, share cached prompt prefixes, and keep stop strings,
token limits, logprobs, context errors and the call cache's exact replay."""

from __future__ import annotations

import asyncio

import pytest

from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import CachedModel, CallCache, GenParams, load_backend
from veriloop.models.batched import BatchedEngine, _common

pytestmark = pytest.mark.model

SHARED = ("You are a careful assistant. Answer briefly and plainly, in one short paragraph, "
          "without lists, headings or code. ") * 4


def chat(user: str, system: str = SHARED) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@pytest.fixture(scope="module")
def sequential(smollm2_path):
    """The sequential backend: its tokenizer and template make the engines' prompts."""
    return load_backend("smollm2-135m", concurrency=1)


@pytest.fixture
def make_engine(sequential):
    engines: list[BatchedEngine] = []

    def make(sequences: int = 4, n_ctx: int = 1024) -> BatchedEngine:
        engine = BatchedEngine(sequential._main.llm, n_ctx=n_ctx, threads=sequential.threads,
                               sequences=sequences, name="smollm2")
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def tokens(sequential, messages):
    return sequential._main.chat_tokens(messages)


def test_concurrent_calls_share_the_prompt_prefix_they_have_in_common(sequential, make_engine):
    engine = make_engine(sequences=4)
    prompts = [tokens(sequential, chat(f"{word}: name a colour.")) for word in ("Alpha", "Bravo", "Charlie", "Delta")]
    futures = [engine.submit(p, GenParams(max_tokens=8), 0, stops) for p, stops in prompts]
    replies = [f.result(timeout=300) for f in futures]
    first = prompts[0][0]
    shared = [min(_common(p, first), len(p) - 1) for p, _ in prompts[1:]]
    assert min(shared) > 100  # the system message is long; only the user turns differ
    # The first prompt is read whole; the others wait for its prefix and read only their own turn.
    assert engine.stats.prompt_tokens_sent == sum(len(p) for p, _ in prompts)
    assert engine.stats.prompt_tokens_shared == sum(shared)
    assert engine.stats.prompt_tokens_evaluated == len(first) + sum(len(p) - s for (p, _), s in zip(prompts[1:], shared))
    assert [r.prompt_tokens for r in replies] == [len(p) for p, _ in prompts]
    assert all(1 <= r.completion_tokens <= 8 for r in replies)


def test_a_new_call_joins_when_a_slot_frees(sequential, make_engine):
    engine = make_engine(sequences=2)
    prompt, stops = tokens(sequential, chat("Write a long story about a lighthouse."))
    lengths = [4, 24, 24, 4]
    futures = [engine.submit(prompt, GenParams(max_tokens=n, temperature=1.0, seed=i), 0, stops)
               for i, n in enumerate(lengths)]
    replies = [f.result(timeout=300) for f in futures]
    assert engine.stats.sequences == 4 and engine.stats.max_active == 2
    assert [r.finish_reason for r in replies] == ["length"] * 4
    assert [r.completion_tokens for r in replies] == lengths
    # Two slots decode at once and a waiting call takes the first free one, so the steps
    # are far fewer than the 56 tokens generated one after another.
    assert engine.stats.decode_steps < sum(lengths)


def test_a_prompt_continuing_a_finished_reply_reuses_only_what_was_decoded(sequential, make_engine):
    # A reply's last token is sampled but never decoded, so it is not in the cache: a next
    # round that continues the reply (a backprompt) must read it again, not skip it.
    engine = make_engine(sequences=1)
    prompt, stops = tokens(sequential, chat("Write a long story about a river pilot."))
    first = engine.submit(prompt, GenParams(max_tokens=4), 0, stops).result(timeout=300)
    assert first.finish_reason == "length"
    cached = list(engine._held[0])
    assert len(cached) == len(prompt) + 3
    extended, _ = tokens(sequential, chat("Now continue it."))
    follow_up = cached + [999, 1000] + extended[:5]
    read_before = engine.stats.prompt_tokens_evaluated
    reply = engine.submit(follow_up, GenParams(max_tokens=3), 0, stops).result(timeout=300)
    assert reply.prompt_tokens == len(follow_up) and reply.completion_tokens >= 1
    assert engine.stats.prompt_tokens_evaluated - read_before == len(follow_up) - len(cached)


def test_a_stop_string_ends_the_reply_before_it(sequential, make_engine):
    engine = make_engine()
    prompt, stops = tokens(sequential, chat("Describe the sea at night in a long paragraph."))
    reply = engine.submit(prompt, GenParams(max_tokens=60), 0, ["e"] + stops).result(timeout=300)
    assert reply.finish_reason == "stop"
    assert "e" not in reply.text and reply.completion_tokens < 60


def test_logprobs_per_generated_token(sequential, make_engine):
    engine = make_engine()
    prompt, stops = tokens(sequential, chat("Write a long story about a clockmaker."))
    reply = engine.submit(prompt, GenParams(max_tokens=10, logprobs=True, top_logprobs=3), 0, stops).result(300)
    assert reply.finish_reason == "length" and reply.logprobs is not None
    assert len(reply.logprobs) == reply.completion_tokens == 10
    assert "".join(t.token for t in reply.logprobs) == reply.text
    assert all(t.logprob <= 0.0 and 3 <= len(t.top) <= 4 for t in reply.logprobs)
    # Greedy decoding takes the most likely token, so it heads its alternatives.
    assert all(t.logprob >= max(t.top.values()) - 1e-6 for t in reply.logprobs)


def test_a_prompt_beyond_the_context_is_a_clear_error_and_a_long_one_is_cut_at_the_context(
        sequential, make_engine):
    engine = make_engine(n_ctx=256)
    long_prompt, stops = tokens(sequential, chat("word " * 300))
    with pytest.raises(ContextOverflow, match="256-token context of smollm2"):
        engine.submit(long_prompt, GenParams(max_tokens=8), 0, stops).result(timeout=300)
    filler = ""
    while 256 - len(tokens(sequential, chat("Tell a long story. " + filler))[0]) > 40:
        filler += "Please. "
    prompt, stops = tokens(sequential, chat("Tell a long story. " + filler))
    room = 256 - len(prompt)
    reply = engine.submit(prompt, GenParams(max_tokens=room + 50, temperature=1.0, seed=3), 0, []).result(300)
    assert 0 < room <= 40
    assert reply.completion_tokens <= room


def test_closing_fails_waiting_calls_and_refuses_new_ones(sequential, make_engine):
    engine = make_engine(sequences=1)
    prompt, stops = tokens(sequential, chat("Write a long story about a comet."))
    futures = [engine.submit(prompt, GenParams(max_tokens=200), 0, stops) for _ in range(3)]
    engine.close()
    outcomes = [f.exception(timeout=300) for f in futures]
    assert any(isinstance(e, VeriloopError) and "closed" in str(e) for e in outcomes)
    assert all(e is None or "closed" in str(e) for e in outcomes)
    with pytest.raises(VeriloopError, match="closed"):
        engine.submit(prompt, GenParams(max_tokens=4), 0, stops)


def test_the_model_batches_above_concurrency_one_and_the_cache_replays_exactly(smollm2_path, tmp_path):
    model = load_backend("smollm2-135m", concurrency=4)
    cached = CachedModel(model, CallCache(tmp_path / "calls.sqlite"))
    params = GenParams(temperature=1.0, seed=5, max_tokens=16, n=4)

    async def both():
        return await asyncio.gather(cached.generate(chat("Name a fruit."), params),
                                    cached.generate(chat("Name a tree."), params))

    before = model._main.engine().stats.sequences
    first = asyncio.run(both())
    assert model._main.engine().stats.sequences == before + 8  # the batched path answered
    assert cached.stats.backend_calls == 8 and not any(c.cached for call in first for c in call)
    assert len({c.text for c in first[0]}) > 1  # four seeds, four samples
    again = asyncio.run(both())
    assert cached.stats.backend_calls == 8 and all(c.cached for call in again for c in call)
    assert [[c.text for c in call] for call in again] == [[c.text for c in call] for call in first]
    cached.cache.close()


def test_concurrency_one_keeps_the_sequential_path(smollm2_path):
    model = load_backend("smollm2-135m", concurrency=1, context=2048)
    (reply,) = asyncio.run(model.generate(chat("Name a colour."), GenParams(max_tokens=6)))
    assert reply.completion_tokens >= 1
    assert model._main._engine is None
