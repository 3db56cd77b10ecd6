"""What every native provider promises, whatever the server answers."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veriloop.errors import VeriloopError
from veriloop.models.base import GenParams
from veriloop.models.providers import PROVIDERS, REASONING_EFFORTS, Damaged, Provider, WrongShape

NATIVE = ("anthropic", "google", "ollama", "vllm")
# One documented answer of each, with thinking and log probabilities: what the mutations start from.
EXAMPLES = {
    "anthropic": {"type": "message", "content": [{"type": "thinking", "thinking": "hm"},
                                                 {"type": "redacted_thinking", "data": "x"},
                                                 {"type": "text", "text": "4"}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 9,
                                                       "cache_read_input_tokens": 2}},
    "google": {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}, {"text": "4 zz"}]},
                               "finishReason": "STOP", "logprobsResult": {
                                   "chosenCandidates": [{"token": "4", "logProbability": -0.1}],
                                   "topCandidates": [{"candidates": [{"token": "4", "logProbability": -0.1}]}]}},
                              {"content": {"parts": [{"text": "5"}]}, "finishReason": "MAX_TOKENS"}],
               "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 4,
                                 "cachedContentTokenCount": 2}},
    "ollama": {"message": {"role": "assistant", "content": "4", "thinking": "hm"}, "done": True,
               "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 9,
               "logprobs": [{"token": "4", "logprob": -0.1, "top_logprobs": [{"token": "4", "logprob": -0.1}]}]},
    "vllm": {"choices": [{"message": {"content": "4", "reasoning_content": "hm"}, "finish_reason": "stop",
                          "logprobs": {"content": [{"token": "4", "logprob": -0.1, "top_logprobs": []}]}},
                         {"message": {"content": "5"}, "finish_reason": "length"}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 2},
                       "completion_tokens_details": {"reasoning_tokens": 4}}},
}


@pytest.fixture(scope="module")
def answers(wire_json: st.SearchStrategy[object], mutated: Any) -> dict[str, st.SearchStrategy[object]]:
    """Each provider's answers, built once: a strategy built inside an example was built and
    validated again for each of its 100 examples (two thirds of the module's time); the
    examples drawn are the same."""
    return {prefix: st.one_of(wire_json, mutated(EXAMPLES[prefix])) for prefix in NATIVE}


@pytest.mark.parametrize("prefix", NATIVE)
@given(data=st.data())
def test_replies_raise_only_damaged_wrong_shape_or_a_veriloop_error(
        prefix: str, answers: dict[str, st.SearchStrategy[object]], data: st.DataObject) -> None:
    provider: Provider = PROVIDERS[prefix]("some-model", "low")
    answer = data.draw(answers[prefix])
    count = data.draw(st.integers(1, 3)) if PROVIDERS[prefix].supports.n else 1
    # The unmutated examples parse (so the mutations start from answers that are read whole).
    assert provider.replies(EXAMPLES[prefix], 1, GenParams(logprobs=True))
    params = GenParams(n=count, logprobs=data.draw(st.booleans()), stop=("a", "b", "c", "d", "e", "zz"))
    try:
        completions = provider.replies(answer, count, params)
    except (Damaged, WrongShape, VeriloopError) as exc:
        assert "\n" not in str(exc)
        return
    assert 1 <= len(completions) <= count
    for completion in completions:
        assert 0 <= completion.cached_prompt_tokens <= completion.prompt_tokens
        assert 0 <= completion.reasoning_tokens <= completion.completion_tokens
        assert all(isinstance(t.token, str) and isinstance(t.logprob, float) for t in completion.logprobs or ())


@pytest.mark.parametrize("prefix", NATIVE)
@given(body=st.text(max_size=60) | st.sampled_from(['{"error": {"message": 3}}', '{"error": [1]}', "[]", "null",
                                                    '{"message": "x", "object": "error"}']),
       status=st.integers(400, 499))
def test_refusals_read_any_body(prefix: str, body: str, status: int) -> None:
    refused = PROVIDERS[prefix]("some-model", "high").refusal(status, body)
    assert refused is None or (isinstance(refused, VeriloopError) and "\n" not in str(refused))


@pytest.mark.parametrize("prefix", NATIVE)
@pytest.mark.parametrize("effort", [None, *REASONING_EFFORTS])
def test_the_same_call_always_sends_the_same_body_and_sent_holds_no_message(prefix: str, effort: str | None) -> None:
    messages = [{"role": "system", "content": "SYSTEM-TEXT"}, {"role": "user", "content": "USER-TEXT"}]
    params = GenParams(n=2, temperature=0.7, top_p=0.9, seed=1, stop=("x",))
    make = PROVIDERS[prefix]
    count = 2 if make.supports.n else 1
    first, again = (make("some-model", effort).request(messages, params, 0, count) for _ in range(2))
    assert (first.path, first.body, first.sent, first.notices) == (again.path, again.body, again.sent, again.notices)
    assert "TEXT" not in repr(first.sent)
    assert len(set(first.notices)) == len(first.notices)


@pytest.mark.parametrize("prefix", NATIVE)
def test_identity_suffix_names_the_effort(prefix: str) -> None:
    assert PROVIDERS[prefix]("m", "high").identity_suffix() == "#effort=high"
    assert PROVIDERS[prefix]("m").identity_suffix() == ""


@pytest.mark.parametrize("prefix", ("openai", *NATIVE))
def test_a_providers_path_is_the_one_its_requests_go_to(prefix: str) -> None:
    # Messages name the URL of a refused request by `path`, without building one.
    provider = PROVIDERS[prefix]("some-model")
    request = provider.request([{"role": "user", "content": "hi"}], GenParams(), 0, 1)
    assert provider.path.startswith("/") and request.path == provider.path
