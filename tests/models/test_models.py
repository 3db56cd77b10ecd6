"""The model layer on a real model (SmolLM2-135M): completions, seeds, prefix reuse,
logprobs, and the call cache."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from veriloop.errors import ContextOverflow
from veriloop.models import CachedModel, CallCache, GenParams

pytestmark = pytest.mark.model

QUESTION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Name three colours of the rainbow."},
]


def run(coro):
    return asyncio.run(coro)


def test_completion_carries_text_reason_and_token_counts(smollm2):
    (c,) = run(smollm2.generate(QUESTION, GenParams(max_tokens=24)))
    assert c.text.strip()
    assert c.finish_reason == ("length" if c.completion_tokens == 24 else "stop")
    assert c.prompt_tokens > 10 and 0 < c.completion_tokens <= 24
    assert c.logprobs is None


def test_seeded_samples_reproduce_whatever_ran_before(smollm2):
    params = GenParams(temperature=1.0, seed=123, max_tokens=40)
    smollm2.reset()
    (first,) = run(smollm2.generate(QUESTION, params))
    longer = QUESTION + [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Now name three more, and explain each in one sentence. " * 20},
    ]
    run(smollm2.generate(longer, GenParams(temperature=1.0, seed=7, max_tokens=30)))
    (again,) = run(smollm2.generate(QUESTION, params))
    assert again.text == first.text

    # A backprompt round: the history grows, so most of the prompt is the previous one.
    run(smollm2.generate(longer, GenParams(temperature=1.0, seed=7, max_tokens=30)))
    longest = longer + [{"role": "assistant", "content": "Red, orange, yellow."}, {"role": "user", "content": "Again."}]
    stats = smollm2.prompt_stats
    sent0, evaluated0 = stats.prompt_tokens_sent, stats.prompt_tokens_evaluated
    (reused,) = run(smollm2.generate(longest, params))
    sent, evaluated = stats.prompt_tokens_sent - sent0, stats.prompt_tokens_evaluated - evaluated0
    assert evaluated < sent / 2  # the prefix really was reused...
    smollm2.reset()
    (scratch,) = run(smollm2.generate(longest, params))
    assert reused.text == scratch.text  # ...and the sample is what a hard reset gives


def test_samples_are_indexed_and_distinct(smollm2):
    params = GenParams(temperature=1.0, seed=11, max_tokens=30)
    batch = run(smollm2.generate(QUESTION, params.with_(n=3)))
    singles = [run(smollm2.generate(QUESTION, params.with_(sample_offset=i)))[0] for i in range(3)]
    assert [c.text for c in batch] == [c.text for c in singles]
    assert len({c.text for c in batch}) > 1


def test_prefix_reuse_evaluates_far_fewer_tokens_than_sent(smollm2):
    stats = smollm2.prompt_stats
    sent0, evaluated0 = stats.prompt_tokens_sent, stats.prompt_tokens_evaluated
    messages = list(QUESTION)
    for round in range(6):
        (c,) = run(smollm2.generate(messages, GenParams(max_tokens=30, seed=round)))
        messages += [{"role": "assistant", "content": c.text}, {"role": "user", "content": f"Round {round}: try again."}]
    sent = stats.prompt_tokens_sent - sent0
    evaluated = stats.prompt_tokens_evaluated - evaluated0
    assert 0 < evaluated < 0.6 * sent


def test_token_logprobs_when_asked(smollm2):
    (c,) = run(smollm2.generate(QUESTION, GenParams(max_tokens=12, logprobs=True, top_logprobs=3)))
    assert c.logprobs is not None and len(c.logprobs) == c.completion_tokens
    assert all(t.logprob <= 0.0 for t in c.logprobs)
    assert all(1 <= len(t.top) <= 3 for t in c.logprobs)
    # Greedy decoding picks the most likely token, so it is at the top of its alternatives.
    assert all(t.logprob >= max(t.top.values()) - 1e-4 for t in c.logprobs)


def test_scoring_given_text_matches_the_logprobs_of_generating_it(smollm2):
    (c,) = run(smollm2.generate(QUESTION, GenParams(max_tokens=12, logprobs=True)))
    scored = run(smollm2.score(QUESTION, c.text))
    assert [t.token for t in scored] == [t.token for t in c.logprobs]
    # The first token's logits come from the same prompt evaluation: exact. Later ones
    # were evaluated one at a time while generating but in one batch here, and the
    # quantised kernels differ slightly between those shapes (measured up to ~0.08 nats);
    # a misaligned scorer would be off by whole nats.
    assert scored[0].logprob == pytest.approx(c.logprobs[0].logprob, abs=1e-4)
    diffs = [abs(mine.logprob - theirs.logprob) for mine, theirs in zip(scored, c.logprobs)]
    assert max(diffs) < 0.25 and sum(diffs) / len(diffs) < 0.05
    # A continuation the model would not write is less likely, token for token.
    odd = run(smollm2.score(QUESTION, "Purple elephants dance quietly."))
    assert sum(t.logprob for t in odd) / len(odd) < sum(t.logprob for t in scored) / len(scored)


def test_prompt_beyond_the_context_is_a_clear_error(smollm2):
    huge = [{"role": "user", "content": "word " * 6000}]
    with pytest.raises(ContextOverflow, match="context"):
        run(smollm2.generate(huge, GenParams(max_tokens=8)))


def test_cache_replays_and_keys_on_the_sample_index(smollm2, tmp_path):
    db = tmp_path / "calls.sqlite"
    model = CachedModel(smollm2, CallCache(db))
    params = GenParams(temperature=1.0, seed=3, max_tokens=20)
    four = run(model.generate(QUESTION, params.with_(n=4)))
    assert model.stats.backend_calls == 4 and not any(c.cached for c in four)
    six = run(model.generate(QUESTION, params.with_(n=6)))
    assert model.stats.backend_calls == 6  # only samples 4 and 5 were new
    assert [c.text for c in six[:4]] == [c.text for c in four]
    assert all(c.cached for c in six[:4]) and not any(c.cached for c in six[4:])
    run(model.generate(QUESTION, params.with_(temperature=0.7)))
    assert model.stats.backend_calls == 7
    model.cache.close()
    # A new process (new CachedModel on the same file) replays without the backend.
    again = CachedModel(smollm2, CallCache(db))
    replay = run(again.generate(QUESTION, params.with_(n=6)))
    assert again.stats.backend_calls == 0 and again.stats.hits == 6
    assert [c.text for c in replay] == [c.text for c in six]
    again.cache.close()
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert rows == 7


@pytest.mark.parametrize("amx", [True, False])
def test_weights_load_without_the_amx_kernels_only_where_the_library_has_them(amx, monkeypatch):
    import llama_cpp.llama_cpp as c

    from veriloop.models import amx as guard

    monkeypatch.setattr(guard, "built_with_amx", lambda: amx)
    default = c.llama_model_default_params
    assert default().use_extra_bufts is True
    with guard.without_amx():
        assert c.llama_model_default_params().use_extra_bufts is (not amx)
    assert c.llama_model_default_params is default


def test_a_long_prompt_loads_and_decodes_on_this_machine(smollm2):
    # Crashed the process (SIGSEGV in ggml_backend_amx_mul_mat) on a CPU with AMX.
    (reply,) = asyncio.run(smollm2.generate([{"role": "user", "content": "Hello there, " * 100}],
                                            GenParams(max_tokens=4, seed=0)))
    assert reply.completion_tokens >= 1
