import json

import pytest
from helpers import veriloop
from standins.google import THOUGHT, THOUGHT_TOKENS, GoogleStandin

import veriloop as vl
from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import load_backend
from veriloop.models.base import GenParams, TokenLogprob
from veriloop.models.providers import PROVIDERS, Damaged, WrongShape
from veriloop.models.providers.google import GoogleProvider

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "user", "content": "Think first."},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "Check it."},
]
HI = [{"role": "user", "content": "Hi"}]


def test_the_registry_names_the_provider() -> None:
    assert PROVIDERS["google"] is GoogleProvider
    assert GoogleProvider.key_variables == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert GoogleProvider("gemini-2.5-flash").headers("AIza-1") == {"x-goog-api-key": "AIza-1"}


def test_a_greedy_call_sends_the_system_instruction_and_user_model_turns() -> None:
    request = GoogleProvider("gemini-2.5-flash").request(CONVERSATION, GenParams(max_tokens=100), 0, 1)
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    config = {"temperature": 0.0, "topP": 1.0, "maxOutputTokens": 100}
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "What is 2+2?\n\nThink first."}]},
                     {"role": "model", "parts": [{"text": "5"}]},
                     {"role": "user", "parts": [{"text": "Check it."}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": config,
    }
    assert (request.sent, request.notices) == ({"generationConfig": config}, [])


def test_samples_in_one_request_with_the_first_samples_seed_and_five_stops() -> None:
    params = GenParams(n=3, temperature=2.5, top_p=0.9, seed=10, sample_offset=1, stop=tuple("abcdef"))
    request = GoogleProvider("models/gemini-2.0-flash").request(HI, params, 1, 3)
    assert request.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert request.sent == {"generationConfig": {
        "temperature": 2.0, "topP": 0.9, "maxOutputTokens": 256, "stopSequences": ["a", "b", "c", "d", "e"],
        "candidateCount": 3, "seed": 12}}
    assert request.notices == ["asks for temperature 2.5; Gemini's temperatures end at 2: sent 2"]


def test_log_probabilities_are_asked_with_their_alternatives() -> None:
    request = GoogleProvider("gemini-2.0-flash").request(HI, GenParams(logprobs=True, top_logprobs=5), 0, 1)
    assert request.sent["generationConfig"]["responseLogprobs"] is True
    assert request.sent["generationConfig"]["logprobs"] == 5


@pytest.mark.parametrize(("model", "effort", "thinking", "notices"), [
    ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192}, []),
    ("gemini-2.5-pro", "minimal", {"thinkingBudget": 1024}, []),
    ("gemini-3-flash-preview", "minimal", {"thinkingLevel": "minimal"}, []),
    ("gemini-3-pro-preview", "high", {"thinkingLevel": "high"}, []),
    ("gemini-3-pro-preview", "medium", {"thinkingLevel": "high"},
     ["asks for reasoning effort medium; gemini-3-pro-preview thinks at low or high: sent high"]),
])
def test_a_reasoning_effort_sets_the_thinking_and_keeps_the_answers_room(
        model: str, effort: str, thinking: dict[str, object], notices: list[str]) -> None:
    request = GoogleProvider(model, effort).request(HI, GenParams(max_tokens=300), 0, 1)
    budget = {"minimal": 1024, "medium": 8192, "high": 24576}[effort]
    config = request.sent["generationConfig"]
    assert config["thinkingConfig"] == {**thinking, "includeThoughts": True}
    assert config["maxOutputTokens"] == 300 + budget
    assert request.notices == notices


# Two candidates as the API documents them: thought parts first, then the answer.
TWO_CANDIDATES = {
    "candidates": [
        {"content": {"parts": [{"text": "Two and two.", "thought": True}, {"text": "It is 4."}], "role": "model"},
         "finishReason": "STOP", "index": 0},
        {"content": {"parts": [{"text": "Hmm, add them up carefully.", "thought": True}, {"text": "4"}],
                     "role": "model"},
         "finishReason": "MAX_TOKENS", "index": 1},
    ],
    "usageMetadata": {"promptTokenCount": 11, "cachedContentTokenCount": 5, "candidatesTokenCount": 9,
                      "thoughtsTokenCount": 40, "totalTokenCount": 60},
    "modelVersion": "gemini-2.5-flash",
}


def test_candidates_become_completions_sharing_the_usage() -> None:
    completions = GoogleProvider("gemini-2.5-flash", "low").replies(TWO_CANDIDATES, 2, GenParams(n=2))
    assert [(c.text, c.finish_reason, c.reasoning) for c in completions] == [
        ("It is 4.", "stop", "Two and two."), ("4", "length", "Hmm, add them up carefully.")]
    # The prompt is billed once a request: the first completion carries it.
    assert [(c.prompt_tokens, c.cached_prompt_tokens) for c in completions] == [(11, 5), (0, 0)]
    # 9 answer tokens by text length 8:1, 40 thought tokens by reasoning length 12:27.
    assert [(c.completion_tokens, c.reasoning_tokens) for c in completions] == [(8 + 12, 12), (1 + 28, 28)]
    assert sum(c.prompt_tokens for c in completions) == 11
    assert sum(c.completion_tokens for c in completions) == 49


def test_stop_strings_beyond_five_are_applied_to_the_text() -> None:
    answer = {"candidates": [{"content": {"parts": [{"text": "4 END more"}]}, "finishReason": "MAX_TOKENS"}]}
    [completion] = GoogleProvider("gemini-2.5-flash").replies(answer, 1, GenParams(stop=("a", "b", "c", "d", "e",
                                                                                        " END")))
    assert (completion.text, completion.finish_reason) == ("4", "stop")


def test_fewer_candidates_than_asked_are_those_there_are() -> None:
    answer = {"candidates": [{"content": {"parts": [{"text": "4"}]}}], "usageMetadata": {"promptTokenCount": 7}}
    [completion] = GoogleProvider("gemini-2.5-flash").replies(answer, 3, GenParams(n=3))
    assert (completion.text, completion.prompt_tokens) == ("4", 7)
    assert GoogleProvider.max_n == 8


def test_a_candidate_without_content_is_an_empty_reply_with_its_reason() -> None:
    answer = {"candidates": [{"finishReason": "SAFETY"}], "usageMetadata": {"promptTokenCount": 3}}
    [completion] = GoogleProvider("gemini-2.5-flash").replies(answer, 1, GenParams())
    assert (completion.text, completion.finish_reason, completion.prompt_tokens) == ("", "safety", 3)


def test_log_probabilities_are_read() -> None:
    answer = {"candidates": [{"content": {"parts": [{"text": "4"}]}, "finishReason": "STOP", "logprobsResult": {
        "topCandidates": [{"candidates": [{"token": "4", "logProbability": -0.01},
                                          {"token": "four", "logProbability": -4.6}]}],
        "chosenCandidates": [{"token": "4", "logProbability": -0.01}]}}]}
    [completion] = GoogleProvider("gemini-2.0-flash").replies(answer, 1, GenParams(logprobs=True, top_logprobs=2))
    assert completion.logprobs == [TokenLogprob(token="4", logprob=-0.01, top={"4": -0.01, "four": -4.6})]


@pytest.mark.parametrize(("answer", "count", "error", "message"), [
    ({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 8}}, 1, VeriloopError,
     "Gemini refused the prompt ('\"SAFETY\"'): no retry changes that; leave this prompt out, or run it on another "
     "model than 'gemini-2.5-flash'"),
    ({"candidates": [], "usageMetadata": {}}, 1, Damaged, "a Gemini answer without candidates"),
    ({"choices": [{"message": {"content": "4"}}]}, 1, WrongShape,
     '{"candidates": [{"content": {"parts": [{"text": ...}]}}], "usageMetadata": {...}}'),
    ({"candidates": [{"content": {"parts": [{"text": 4}]}}, {}]}, 2, Damaged,
     "a content part whose text is not text ('4')"),
])
def test_answers_without_the_candidates_asked(answer: object, count: int, error: type[Exception],
                                             message: str) -> None:
    with pytest.raises(error) as caught:
        GoogleProvider("gemini-2.5-flash").replies(answer, count, GenParams())
    assert type(caught.value) is error and str(caught.value) == message


def _error(code: int, status: str, message: str, reason: str = "") -> str:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}] if reason else []
    return json.dumps({"error": {"code": code, "message": message, "status": status, "details": details}})


@pytest.mark.parametrize(("status", "body", "error", "message"), [
    (400, _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"),
     VeriloopError,
     "Gemini refused the API key ('API key not valid. Please pass a valid API key.'); set GEMINI_API_KEY or "
     "GOOGLE_API_KEY or VERILOOP_API_KEY or pass --api-key"),
    (403, _error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established "
                 "identity). Please use API Key or other form of API consumer identity to call this API."),
     VeriloopError,
     "Gemini refused the API key (\"Method doesn't allow unregistered callers (callers without established "
     "identity). Please use API Key or other form of API consumer identity to call this API.\"); set GEMINI_API_KEY "
     "or GOOGLE_API_KEY or VERILOOP_API_KEY or pass --api-key"),
    (404, _error(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta, or is not supported for "
                 "generateContent."), VeriloopError,
     "Gemini does not know the model 'gemini-9' ('models/gemini-9 is not found for API version v1beta, or is not "
     "supported for generateContent.'); give an id it lists, e.g. google/gemini-2.5-flash"),
    (400, _error(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens "
                 "allowed (1048576)."), ContextOverflow,
     "prompt does not fit the context of gemini-9 ('The input token count (1200000) exceeds the maximum number of "
     "tokens allowed (1048576).')"),
    (403, _error(403, "PERMISSION_DENIED", "Permission denied on resource project 42."), VeriloopError,
     "Gemini forbade the request for 'gemini-9' ('Permission denied on resource project 42.'); give a key whose "
     "project may use this model, or choose one it may"),
    (400, _error(400, "FAILED_PRECONDITION", "User location is not supported for the API use."), VeriloopError,
     "Gemini rejected the request for 'gemini-9': 'User location is not supported for the API use.'; change what "
     "it names, then re-run"),
])
def test_refusals_are_one_line_naming_the_fix(status: int, body: str, error: type[Exception], message: str) -> None:
    refused = GoogleProvider("gemini-9").refusal(status, body)
    assert type(refused) is error and str(refused) == message


def test_a_refused_thinking_names_reasoning_effort() -> None:
    body = _error(400, "INVALID_ARGUMENT", "Thinking is not supported for this model.")
    assert str(GoogleProvider("gemini-2.0-flash", "low").refusal(400, body)) == (
        "Gemini refused thinking for 'gemini-2.0-flash' ('Thinking is not supported for this model.'); remove "
        "reasoning_effort for this model")


def test_a_transient_status_is_left_to_the_transport() -> None:
    assert GoogleProvider("gemini-9").refusal(429, _error(429, "RESOURCE_EXHAUSTED", "Quota exceeded")) is None


# End to end, against the stand-in that enforces Gemini's documented rules.

def test_the_main_jobs_strategies_run_on_gemini_with_thinking(tmp_path, calls_of) -> None:
    with GoogleStandin() as server:
        proc = veriloop("run", "--model", "google/gemini-2.5-flash", "--base-url", server.base_url,
                        "--api-key", server.key, "--reasoning-effort", "low", "-n", "2", "--k", "3",
                        "--max-rounds", "2", "--out", str(tmp_path / "run"), home=tmp_path / "home")
        configs = [seen.body["generationConfig"] for seen in server.requests]
        billed = dict(server.billed)
    assert proc.returncode == 0, proc.stderr
    assert configs and all(c["thinkingConfig"] == {"thinkingBudget": 2048, "includeThoughts": True} for c in configs)
    calls = calls_of(tmp_path / "run")
    assert {call["reasoning"] for call in calls} == {THOUGHT}
    assert {call["reasoning_tokens"] for call in calls} == {THOUGHT_TOKENS}
    assert all(call["sent"]["generationConfig"]["maxOutputTokens"] > 2048 for call in calls)
    paid = sum(call["prompt_tokens"] + call["completion_tokens"] for call in calls if not call["cached"])
    assert paid == billed["prompt_tokens"] + billed["completion_tokens"]


def test_k_samples_go_as_candidates_eight_a_request_and_replay_from_the_cache(tmp_path, calls_of) -> None:
    def sampling(server: GoogleStandin, out: str) -> None:
        proc = veriloop("run", "--model", "google/gemini-2.0-flash", "--base-url", server.base_url,
                        "--api-key", server.key, "-s", "self-consistency", "--k", "15", "-n", "2",
                        "--out", str(tmp_path / out), home=tmp_path / "home")
        assert proc.returncode == 0, proc.stderr

    with GoogleStandin() as server:
        sampling(server, "together")
        sampling(server, "again")  # the cache answers every sample
        counts = [seen.body["generationConfig"].get("candidateCount", 1) for seen in server.requests]
        billed = dict(server.billed)
    assert sorted(counts) == [7, 7, 8, 8] and billed["requests"] == 4  # 2 tasks x (8 + 7) samples
    together = calls_of(tmp_path / "together")
    assert [c["sample_index"] for c in together] == list(range(15)) * 2
    assert sum(c["prompt_tokens"] for c in together) == billed["prompt_tokens"]
    assert [c["cached"] for c in calls_of(tmp_path / "again")] == [True] * 30


def test_correct_reaches_gemini() -> None:
    with GoogleStandin() as server:
        result = vl.correct(vl.model("google/gemini-2.0-flash", base_url=server.base_url, api_key=server.key,
                                     cache=False),
                            "What is 3 + 4?", lambda prompt, answer: "7" in answer, max_rounds=2)
    assert result.answer.endswith("Verdict: correct")
    assert result.trajectory.calls[0].sent["generationConfig"]["temperature"] == 0.0


@pytest.mark.parametrize(("case", "error", "expected"), [
    ("key", VeriloopError,
     "Gemini refused the API key ('API key not valid. Please pass a valid API key.'); set GEMINI_API_KEY or "
     "GOOGLE_API_KEY or VERILOOP_API_KEY or pass --api-key"),
    ("no key", VeriloopError,
     "Gemini refused the API key (\"Method doesn't allow unregistered callers (callers without established identity). "
     "Please use API Key or other form of API consumer identity to call this API.\"); set GEMINI_API_KEY or "
     "GOOGLE_API_KEY or VERILOOP_API_KEY or pass --api-key"),
    ("model", VeriloopError,
     "Gemini does not know the model 'gemini-9' ('models/gemini-9 is not found for API version v1beta, or is not "
     "supported for generateContent. Call ListModels to see ...'); give an id it lists, e.g. "
     "google/gemini-2.5-flash"),
    ("context", ContextOverflow,
     "prompt does not fit the context of gemini-2.5-flash ('The input token count (53) exceeds the maximum number of "
     "tokens allowed (40).')"),
    ("thinking", VeriloopError,
     "Gemini refused thinking for 'gemini-2.0-flash' ('Thinking is not supported by this model.'); remove "
     "reasoning_effort for this model"),
])
def test_the_stand_ins_refusals_end_in_one_line(case: str, error: type[Exception], expected: str, generate,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VERILOOP_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    model = {"model": "gemini-9", "thinking": "gemini-2.0-flash"}.get(case, "gemini-2.5-flash")
    with GoogleStandin(models={"gemini-2.5-flash": (40, 65_536), "gemini-2.0-flash": (1_048_576, 8_192)}) as server:
        key = {"key": "wrong-key", "no key": None}.get(case, server.key)
        backend = load_backend(f"google/{model}", base_url=server.base_url, api_key=key,
                               reasoning_effort="low" if case == "thinking" else None)
        words = [{"role": "user", "content": "word " * 50}] if case == "context" else None
        with pytest.raises(error) as info:
            generate(backend, words, GenParams(max_tokens=4))
    assert type(info.value) is error and str(info.value) == expected
