import json

import pytest
from helpers import veriloop
from standins.anthropic import OVERLOADED, THINKING, AnthropicStandin

import veriloop as vl
from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import load_backend
from veriloop.models.base import GenParams
from veriloop.models.providers import PROVIDERS, Damaged, WrongShape
from veriloop.models.providers.anthropic import AnthropicProvider, claude_version

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "system", "content": "Answer in English."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "user", "content": "Think first."},
    {"role": "assistant", "content": ""},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "Check it."},
]
TURNS = [
    {"role": "user", "content": "What is 2+2?\n\nThink first."},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "Check it."},
]


def test_the_registry_names_the_provider() -> None:
    assert PROVIDERS["anthropic"] is AnthropicProvider
    assert AnthropicProvider.default_base_url == "https://api.anthropic.com"
    assert AnthropicProvider.key_variables == ("ANTHROPIC_API_KEY",)


def test_headers_carry_the_key_and_the_api_version() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5")
    assert provider.headers("sk-ant-1") == {"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01"}
    assert provider.headers(None) == {"anthropic-version": "2023-06-01"}


def test_a_greedy_call_sends_system_apart_and_alternating_turns() -> None:
    request = AnthropicProvider("claude-sonnet-4-5").request(CONVERSATION, GenParams(max_tokens=100), 0, 1)
    assert request.path == "/v1/messages"
    assert request.body == {
        "model": "claude-sonnet-4-5", "max_tokens": 100, "temperature": 0.0,
        "system": "Be brief.\n\nAnswer in English.", "messages": TURNS,
    }
    assert request.sent == {"model": "claude-sonnet-4-5", "max_tokens": 100, "temperature": 0.0}
    assert request.notices == []


def test_a_conversation_opening_with_the_assistant_gets_a_user_turn_first() -> None:
    messages = [{"role": "assistant", "content": "Hello. "}]
    request = AnthropicProvider("claude-sonnet-4-5").request(messages, GenParams(), 0, 1)
    assert request.body["messages"] == [{"role": "user", "content": "(start)"},
                                        {"role": "assistant", "content": "Hello."}]
    assert request.notices == ["a conversation that opens with the assistant (or is empty) is sent to "
                               "claude-sonnet-4-5 after a user turn '(start)': the Messages API opens with the user"]


def test_stops_a_temperature_above_one_and_top_p_with_a_temperature() -> None:
    params = GenParams(temperature=1.3, top_p=0.9, stop=("\nQ:", "END"), seed=7)
    request = AnthropicProvider("claude-3-7-sonnet-20250219").request([{"role": "user", "content": "Hi"}],
                                                                      params, 2, 1)
    assert request.sent == {"model": "claude-3-7-sonnet-20250219", "max_tokens": 256, "temperature": 1.0,
                            "stop_sequences": ["\nQ:", "END"]}
    assert request.notices == [
        "asks for temperature 1.3; Anthropic's temperatures end at 1: sent 1",
        "asks for top_p 0.9 with a temperature; Anthropic takes one of the two: sent the temperature only",
    ]


def test_thinking_with_a_budget_raises_max_tokens_and_drops_greedy() -> None:
    request = AnthropicProvider("claude-sonnet-4-5-20250929", "medium").request(
        [{"role": "user", "content": "Hi"}], GenParams(max_tokens=300), 0, 1)
    assert request.body == {
        "model": "claude-sonnet-4-5-20250929", "max_tokens": 300 + 8192,
        "thinking": {"type": "enabled", "budget_tokens": 8192},
        "messages": [{"role": "user", "content": "Hi"}],
    }
    assert request.notices == ["asks for greedy decoding; with thinking on, claude-sonnet-4-5-20250929 samples at "
                               "its default temperature"]


@pytest.mark.parametrize(("top_p", "sent", "notices"), [
    (1.0, {}, []),
    (0.97, {"top_p": 0.97}, []),
    (0.5, {"top_p": 0.95}, ["asks for top_p 0.5; with thinking on, Anthropic takes top_p from 0.95 to 1: sent 0.95"]),
])
def test_thinking_takes_top_p_from_095(top_p: float, sent: dict[str, float], notices: list[str]) -> None:
    request = AnthropicProvider("claude-opus-4-1", "low").request(
        [{"role": "user", "content": "Hi"}], GenParams(temperature=1.0, top_p=top_p), 0, 1)
    assert request.sent == {"model": "claude-opus-4-1", "max_tokens": 256 + 2048,
                            "thinking": {"type": "enabled", "budget_tokens": 2048}, **sent}
    assert request.notices == notices


def test_claude_46_thinks_adaptively_with_an_effort() -> None:
    request = AnthropicProvider("claude-opus-4-6", "minimal").request(
        [{"role": "user", "content": "Hi"}], GenParams(temperature=0.7), 0, 1)
    assert request.sent == {"model": "claude-opus-4-6", "max_tokens": 256 + 1024, "thinking": {"type": "adaptive"},
                            "output_config": {"effort": "low"}}
    assert request.notices == ["asks for temperature 0.7; with thinking on, claude-opus-4-6 samples at its default "
                               "temperature"]


def test_claude_46_without_thinking_takes_a_temperature() -> None:
    request = AnthropicProvider("claude-sonnet-4-6").request([{"role": "user", "content": "Hi"}], GenParams(), 0, 1)
    assert request.sent == {"model": "claude-sonnet-4-6", "max_tokens": 256, "temperature": 0.0}


def test_claude_47_and_later_sample_only_at_their_defaults() -> None:
    request = AnthropicProvider("claude-opus-4-7").request(
        [{"role": "user", "content": "Hi"}], GenParams(top_p=0.9), 0, 1)
    assert request.sent == {"model": "claude-opus-4-7", "max_tokens": 256}
    assert request.notices == ["asks for greedy decoding; claude-opus-4-7 samples only at its default temperature",
                               "asks for top_p 0.9; claude-opus-4-7 samples only at its default top_p"]


def test_a_call_asking_log_probabilities_is_refused_in_one_line() -> None:
    with pytest.raises(VeriloopError) as caught:
        AnthropicProvider("claude-sonnet-4-5").request([{"role": "user", "content": "Hi"}],
                                                        GenParams(logprobs=True), 0, 1)
    assert str(caught.value) == (
        "'claude-sonnet-4-5' cannot return log probabilities (the Anthropic Messages API gives none); run this "
        "strategy or study on a model that does (openai/, vllm/, google/, ollama/, a local model)")


@pytest.mark.parametrize(("model", "version"), [
    ("claude-sonnet-4-5-20250929", (4, 5)), ("claude-3-7-sonnet-20250219", (3, 7)),
    ("claude-opus-4-20250514", (4, 0)), ("claude-opus-4-6", (4, 6)), ("claude-sonnet-5", (5, 0)),
    ("claude-3-5-haiku-latest", (3, 5)), ("claude-mythos-preview", None),
])
def test_claude_versions_are_read_from_the_id(model: str, version: tuple[int, int] | None) -> None:
    assert claude_version(model) == version


def test_the_unnumbered_mythos_is_of_the_newest_kind() -> None:
    provider = AnthropicProvider("claude-mythos-preview")
    assert (provider.adaptive, provider.fixed_sampling) == (True, True)


def test_limits_say_which_models_cannot_be_greedy() -> None:
    assert AnthropicProvider("claude-sonnet-4-5").limits() == []
    assert AnthropicProvider("claude-sonnet-4-5", "low").limits() == [
        "claude-sonnet-4-5 with thinking on samples at its default temperature: every call is sampled so (a greedy "
        "strategy's calls too)"]
    assert AnthropicProvider("claude-opus-4-7").limits() == [
        "claude-opus-4-7 samples only at its default temperature and top_p: every call is sampled so (a greedy "
        "strategy's calls too)"]


# The example answer of Anthropic's extended thinking docs, with a redacted block and cache usage.
THINKING_ANSWER = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Let me analyze this step by step...", "signature": "WaUjzkyp"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "text", "text": "Based on my analysis, "},
        {"type": "text", "text": "the answer is 4."},
    ],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000,
              "output_tokens": 340},
}


def test_a_reply_with_thinking_blocks_and_cache_usage() -> None:
    [completion] = AnthropicProvider("claude-sonnet-4-5", "low").replies(THINKING_ANSWER, 1, GenParams())
    assert (completion.text, completion.finish_reason) == ("Based on my analysis, the answer is 4.", "stop")
    assert completion.reasoning == "Let me analyze this step by step...\n\n[redacted]"
    assert (completion.prompt_tokens, completion.cached_prompt_tokens) == (2112, 2000)
    assert (completion.completion_tokens, completion.reasoning_tokens) == (340, 0)


@pytest.mark.parametrize(("stop_reason", "finish"), [
    ("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("refusal", "refusal"), (None, "stop"),
])
def test_stop_reasons_become_finish_reasons(stop_reason: str | None, finish: str) -> None:
    answer = {"type": "message", "content": [{"type": "text", "text": "4"}], "stop_reason": stop_reason,
              "usage": {"input_tokens": 5, "output_tokens": 1}}
    [completion] = AnthropicProvider("claude-sonnet-4-5").replies(answer, 1, GenParams())
    assert (completion.text, completion.finish_reason, completion.reasoning) == ("4", finish, None)
    assert (completion.prompt_tokens, completion.completion_tokens, completion.cached_prompt_tokens) == (5, 1, 0)


@pytest.mark.parametrize(("answer", "error", "message"), [
    ({"choices": []}, WrongShape, '{"type": "message", "content": [{"type": "text", "text": ...}], ...}'),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, Damaged,
     "an error in a 200 answer (overloaded_error: 'Overloaded')"),
    ({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, VeriloopError,
     "Anthropic answered with an error (invalid_request_error: 'bad')"),
    ({"type": "message", "content": "4"}, Damaged, "a message whose content is not a list ('\"4\"')"),
    ({"type": "message", "content": [{"type": "text", "text": 4}]}, Damaged,
     "a text block whose text is not text ('4')"),
])
def test_answers_that_are_not_a_message(answer: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        AnthropicProvider("claude-sonnet-4-5").replies(answer, 1, GenParams())
    assert type(caught.value) is error and str(caught.value) == message


def _error(kind: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011"})


@pytest.mark.parametrize(("status", "body", "error", "message"), [
    (401, _error("authentication_error", "invalid x-api-key"), VeriloopError,
     "Anthropic refused the API key ('invalid x-api-key'); set ANTHROPIC_API_KEY or VERILOOP_API_KEY or pass "
     "--api-key"),
    (403, _error("permission_error", "Your API key does not have permission to use the specified resource."),
     VeriloopError,
     "Anthropic forbade the request for 'claude-x' ('Your API key does not have permission to use the specified "
     "resource.'); give a key whose workspace may use this model, or choose one it may"),
    (404, _error("not_found_error", "model: claude-x"), VeriloopError,
     "Anthropic does not know the model 'claude-x' ('model: claude-x'); give an id it lists, e.g. "
     "anthropic/claude-sonnet-4-5"),
    (400, _error("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"), ContextOverflow,
     "prompt does not fit the context of claude-x ('prompt is too long: 208310 tokens > 200000 maximum')"),
    (400, _error("invalid_request_error", "input length and `max_tokens` exceed context limit: 197000 + 8192 > "
                 "200000, decrease input length or `max_tokens` and try again"), ContextOverflow,
     "prompt does not fit the context of claude-x ('input length and `max_tokens` exceed context limit: 197000 + "
     "8192 > 200000, decrease input length or `max_tokens` and...')"),
    (413, _error("request_too_large", "Request exceeds the maximum allowed number of bytes."), ContextOverflow,
     "the prompt does not fit a request to claude-x ('Request exceeds the maximum allowed number of bytes.')"),
    (400, _error("invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
     VeriloopError,
     "Anthropic rejected the request for 'claude-x': 'Your credit balance is too low to access the Anthropic "
     "API.'; change what it names, then re-run"),
])
def test_refusals_are_one_line_naming_the_fix(status: int, body: str, error: type[Exception], message: str) -> None:
    refused = AnthropicProvider("claude-x").refusal(status, body)
    assert type(refused) is error and str(refused) == message


def test_a_refused_thinking_names_reasoning_effort() -> None:
    body = _error("invalid_request_error", '"thinking.type.enabled" is not supported for this model.')
    refused = AnthropicProvider("claude-x", "high").refusal(400, body)
    assert str(refused) == ("Anthropic refused thinking for 'claude-x' ('\"thinking.type.enabled\" is not supported "
                            "for this model.'); remove reasoning_effort for this model, or choose one that thinks")


def test_a_404_about_the_path_is_left_to_the_transport() -> None:
    assert AnthropicProvider("claude-x").refusal(404, _error("not_found_error", "Not Found")) is None
    assert AnthropicProvider("claude-x").refusal(418, "I'm a teapot") is None


# End to end, against the stand-in that enforces Anthropic's documented rules.

def test_the_main_jobs_strategies_run_on_claude_with_thinking(tmp_path, calls_of) -> None:
    with AnthropicStandin() as server:
        proc = veriloop("run", "--model", "anthropic/claude-sonnet-4-5", "--base-url", server.base_url,
                        "--api-key", server.key, "--reasoning-effort", "low", "-n", "2", "--k", "3",
                        "--max-rounds", "2", "--out", str(tmp_path / "run"), home=tmp_path / "home")
        sent = [seen.body for seen in server.requests if seen.path == "/v1/messages"]
        billed = dict(server.billed)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("note:")]
    assert "note: anthropic/claude-sonnet-4-5: asks for greedy decoding; with thinking on, claude-sonnet-4-5 " \
           "samples at its default temperature" in notes
    assert sent and all(body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in body
                        and {m["role"] for m in body["messages"]} <= {"user", "assistant"} for body in sent)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert list(config["model_limits"]) == ["anthropic/claude-sonnet-4-5"]
    calls = calls_of(tmp_path / "run")
    assert {call["reasoning"] for call in calls} == {THINKING}
    assert all(call["sent"]["max_tokens"] > 2048 and "messages" not in call["sent"] for call in calls)
    paid = sum(call["prompt_tokens"] + call["completion_tokens"] for call in calls if not call["cached"])
    assert paid == billed["prompt_tokens"] + billed["completion_tokens"]


def test_correct_reaches_claude_greedy_and_an_overload_is_retried(generate) -> None:
    with AnthropicStandin() as server:
        server.faults.append(OVERLOADED)
        result = vl.correct(vl.model("anthropic/claude-3-5-haiku-latest", base_url=server.base_url,
                                     api_key=server.key, cache=False),
                            "What is 3 + 4?", lambda prompt, answer: "7" in answer, max_rounds=2)
        bodies = [seen.body for seen in server.requests]
    assert result.answer.endswith("Verdict: correct")
    assert result.trajectory.calls[0].sent == {"model": "claude-3-5-haiku-latest", "max_tokens": bodies[-1]["max_tokens"],
                                               "temperature": 0.0}
    assert len(bodies) == 2 and bodies[0] == bodies[1]  # the 529 answered the first, the same request the second


@pytest.mark.parametrize(("case", "error", "expected"), [
    ("key", VeriloopError,
     "Anthropic refused the API key ('invalid x-api-key'); set ANTHROPIC_API_KEY or VERILOOP_API_KEY or pass "
     "--api-key"),
    ("model", VeriloopError,
     "Anthropic does not know the model 'claude-9' ('model: claude-9'); give an id it lists, e.g. "
     "anthropic/claude-sonnet-4-5"),
    ("context", ContextOverflow,
     "prompt does not fit the context of claude-sonnet-4-5 ('prompt is too long: 53 tokens > 40 maximum')"),
    ("thinking", VeriloopError,
     "Anthropic refused thinking for 'claude-3-5-haiku-latest' (\"'claude-3-5-haiku-latest' does not support "
     "thinking.\"); remove reasoning_effort for this model, or choose one that thinks"),
])
def test_the_stand_ins_refusals_end_in_one_line(case: str, error: type[Exception], expected: str, generate) -> None:
    model = {"model": "claude-9", "thinking": "claude-3-5-haiku-latest"}.get(case, "claude-sonnet-4-5")
    with AnthropicStandin(models={"claude-sonnet-4-5": (40, 64_000, True),
                                  "claude-3-5-haiku-latest": (200_000, 8_192, False)}) as server:
        backend = load_backend(f"anthropic/{model}", base_url=server.base_url,
                               api_key="wrong-key" if case == "key" else server.key,
                               reasoning_effort="low" if case == "thinking" else None)
        words = [{"role": "user", "content": "word " * 50}] if case == "context" else None
        with pytest.raises(error) as info:
            generate(backend, words, GenParams(max_tokens=4))
    assert type(info.value) is error and str(info.value) == expected
