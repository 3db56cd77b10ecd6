"""What every native provider promises, whatever the server answers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veriloop.errors import VeriloopError
from veriloop.models.base import GenParams
from veriloop.models.providers import PROVIDERS, REASONING_EFFORTS, Damaged, Provider, WrongShape

NATIVE = ("anthropic", "google", "ollama", "vllm")


@pytest.mark.parametrize("prefix", NATIVE)
@given(data=st.data())
def test_replies_raise_only_damaged_wrong_shape_or_a_veriloop_error(prefix: str, wire_json: st.SearchStrategy[object],
                                                                      data: st.DataObject) -> None:
    provider: Provider = PROVIDERS[prefix]("some-model", "low")
    answer = data.draw(wire_json)
    count = data.draw(st.integers(1, 3)) if PROVIDERS[prefix].supports.n else 1
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
