import json

import pytest
from helpers import veriloop
from standins.ollama import THINKING as STANDIN_THINKING
from standins.ollama import OllamaStandin

import veriloop as vl
from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import load_backend
from veriloop.models.base import GenParams, TokenLogprob
from veriloop.models.providers import PROVIDERS, Damaged, WrongShape
from veriloop.models.providers.ollama import OllamaProvider

CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]


def test_the_registry_names_the_provider() -> None:
    assert PROVIDERS["ollama"] is OllamaProvider
    assert (OllamaProvider.default_base_url, OllamaProvider.key_variables) == ("http://localhost:11434", ())
    assert OllamaProvider.base_url_variables == ("OLLAMA_HOST",)


def test_a_greedy_call_with_a_seed_and_stops() -> None:
    params = GenParams(max_tokens=64, seed=3, sample_offset=2, stop=("\n\n",))
    request = OllamaProvider("qwen3:0.6b").request(CONVERSATION, params, 1, 1)
    assert request.path == "/api/chat"
    options = {"temperature": 0.0, "top_p": 1.0, "seed": 6, "num_predict": 64, "stop": ["\n\n"]}
    assert request.body == {"model": "qwen3:0.6b", "messages": CONVERSATION, "stream": False, "options": options}
    assert request.sent == {"model": "qwen3:0.6b", "stream": False, "options": options}
    assert request.notices == []


@pytest.mark.parametrize(("effort", "think", "room"), [
    ("minimal", "low", 1024), ("low", "low", 2048), ("medium", "medium", 8192), ("high", "high", 24576),
])
def test_a_reasoning_effort_is_a_think_level(effort: str, think: str, room: int) -> None:
    request = OllamaProvider("gpt-oss:20b", effort).request(CONVERSATION, GenParams(temperature=0.8), 0, 1)
    assert request.sent == {"model": "gpt-oss:20b", "stream": False, "think": think,
                            "options": {"temperature": 0.8, "top_p": 1.0, "num_predict": 256 + room}}


def test_log_probabilities_are_asked_and_read() -> None:
    request = OllamaProvider("gemma3").request(CONVERSATION, GenParams(logprobs=True, top_logprobs=2), 0, 1)
    assert (request.body["logprobs"], request.body["top_logprobs"]) == (True, 2)
    answer = {"message": {"role": "assistant", "content": "4"}, "done": True, "done_reason": "stop",
              "logprobs": [{"token": "4", "logprob": -0.1, "bytes": [52],
                            "top_logprobs": [{"token": "4", "logprob": -0.1}, {"token": "5", "logprob": -3.0}]}]}
    [completion] = OllamaProvider("gemma3").replies(answer, 1, GenParams(logprobs=True, top_logprobs=2))
    assert completion.logprobs == [TokenLogprob(token="4", logprob=-0.1, top={"4": -0.1, "5": -3.0})]


# An answer as Ollama's API docs show it, with thinking.
THINKING_ANSWER = {
    "model": "qwen3", "created_at": "2025-05-29T09:35:56.836222Z",
    "message": {"role": "assistant", "content": "4", "thinking": "Two plus two is four."},
    "done": True, "done_reason": "length", "total_duration": 4883583458, "load_duration": 1334875,
    "prompt_eval_count": 26, "prompt_eval_duration": 342546000, "eval_count": 282, "eval_duration": 4535599000,
}


def test_a_reply_with_thinking() -> None:
    [completion] = OllamaProvider("qwen3", "high").replies(THINKING_ANSWER, 1, GenParams())
    assert (completion.text, completion.reasoning, completion.finish_reason) == ("4", "Two plus two is four.",
                                                                                 "length")
    assert (completion.prompt_tokens, completion.completion_tokens, completion.reasoning_tokens) == (26, 282, 0)
    assert completion.logprobs is None


@pytest.mark.parametrize(("answer", "error", "message"), [
    ({"choices": [{"message": {"content": "4"}}]}, WrongShape, '{"message": {"content": ...}, "done": true, ...}'),
    ({"error": "unexpected EOF"}, VeriloopError, "Ollama answered with an error: 'unexpected EOF'"),
    ({"message": {"content": 4}, "done": True}, Damaged, "a chat reply whose content is not text ('4')"),
    ({"message": {"content": "4"}, "done": False}, Damaged, "a chat reply that is not done (a streamed piece)"),
])
def test_answers_that_are_not_a_chat_reply(answer: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        OllamaProvider("qwen3").replies(answer, 1, GenParams())
    assert type(caught.value) is error and str(caught.value) == message


@pytest.mark.parametrize(("status", "error_text", "error", "message"), [
    (404, 'model "llama9" not found, try pulling it first', VeriloopError,
     "Ollama does not have the model 'llama9'; run `ollama pull llama9` on the server, then re-run"),
    (400, '"llama9" does not support thinking', VeriloopError,
     "'llama9' does not think ('\"llama9\" does not support thinking'); remove reasoning_effort for this model, or "
     "choose one that thinks"),
    (400, "the input length exceeds the context length", ContextOverflow,
     "prompt does not fit the context of llama9 ('the input length exceeds the context length')"),
    (400, "invalid options: top_k", VeriloopError,
     "Ollama rejected the request for 'llama9': 'invalid options: top_k'; change what it names, then re-run"),
])
def test_refusals_are_one_line_naming_the_fix(status: int, error_text: str, error: type[Exception],
                                              message: str) -> None:
    refused = OllamaProvider("llama9").refusal(status, json.dumps({"error": error_text}))
    assert type(refused) is error and str(refused) == message


# End to end, against the stand-in that plays Ollama's /api/chat.

def test_the_main_jobs_strategies_run_on_ollama_with_thinking(tmp_path, calls_of) -> None:
    with OllamaStandin() as server:
        proc = veriloop("run", "--model", "ollama/qwen3", "--base-url", server.base_url, "--reasoning-effort",
                        "medium", "-n", "2", "--k", "3", "--max-rounds", "2", "--seed", "5",
                        "--out", str(tmp_path / "run"), home=tmp_path / "home")
        bodies = [seen.body for seen in server.requests]
        billed = dict(server.billed)
    assert proc.returncode == 0, proc.stderr
    assert bodies and all(body["think"] == "medium" and body["stream"] is False for body in bodies)
    calls = calls_of(tmp_path / "run")
    assert {call["reasoning"] for call in calls} == {STANDIN_THINKING}
    paid = sum(call["prompt_tokens"] + call["completion_tokens"] for call in calls if not call["cached"])
    assert paid == billed["prompt_tokens"] + billed["completion_tokens"]


def test_correct_reaches_ollama() -> None:
    with OllamaStandin() as server:
        result = vl.correct(vl.model("ollama/llama3.2", base_url=server.base_url, cache=False),
                            "What is 3 + 4?", lambda prompt, answer: "7" in answer, max_rounds=2)
    assert result.answer.endswith("Verdict: correct")
    assert result.trajectory.calls[0].sent["options"]["temperature"] == 0.0


@pytest.mark.parametrize(("case", "expected"), [
    ("model", "Ollama does not have the model 'llama9'; run `ollama pull llama9` on the server, then re-run"),
    ("thinking", "'llama3.2' does not think ('\"llama3.2\" does not support thinking'); remove reasoning_effort for "
                 "this model, or choose one that thinks"),
])
def test_the_stand_ins_refusals_end_in_one_line(case: str, expected: str, generate) -> None:
    with OllamaStandin() as server:
        backend = load_backend("ollama/llama9" if case == "model" else "ollama/llama3.2", base_url=server.base_url,
                               reasoning_effort="low" if case == "thinking" else None)
        with pytest.raises(VeriloopError) as info:
            generate(backend)
    assert str(info.value) == expected


@pytest.mark.parametrize(("host", "url"), [
    ("0.0.0.0:11434", "http://127.0.0.1:11434"), ("gpu-box:11434", "http://gpu-box:11434"),
    ("http://gpu-box:8080", "http://gpu-box:8080"), (":11434", "http://127.0.0.1:11434"),
])
def test_ollama_host_as_ollama_itself_reads_it(monkeypatch, host, url):
    from veriloop.models import load_backend

    monkeypatch.delenv("VERILOOP_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert load_backend("ollama/llama3.2").base_url == url
