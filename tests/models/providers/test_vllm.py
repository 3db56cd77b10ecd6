import json

import pytest
from helpers import veriloop
from standins.vllm import REASONING, VLLMStandin

import veriloop as vl
from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import load_backend
from veriloop.models.base import GenParams
from veriloop.models.providers import PROVIDERS
from veriloop.models.providers.vllm import VLLMProvider

HI = [{"role": "user", "content": "Hi"}]


def test_the_registry_names_the_provider() -> None:
    assert PROVIDERS["vllm"] is VLLMProvider
    assert (VLLMProvider.default_base_url, VLLMProvider.key_variables, VLLMProvider.base_url_variables) == (
        None, ("VLLM_API_KEY",), ("VLLM_BASE_URL",))
    assert VLLMProvider.supports.n and VLLMProvider.supports.seed and VLLMProvider.supports.logprobs


def test_n_samples_a_seed_stops_and_logprobs_in_one_request() -> None:
    params = GenParams(n=4, temperature=0.8, top_p=0.95, seed=100, stop=("\n",), logprobs=True, top_logprobs=3)
    request = VLLMProvider("Qwen/Qwen3-8B").request(HI, params, 1, 3)
    assert request.path == "/chat/completions"
    assert request.sent == {"model": "Qwen/Qwen3-8B", "temperature": 0.8, "top_p": 0.95, "max_tokens": 256, "n": 3,
                            "stop": ["\n"], "seed": 101, "logprobs": True, "top_logprobs": 3}
    assert request.body == {**request.sent, "messages": HI}
    assert request.notices == []


def test_a_model_named_like_openais_reasoning_models_keeps_its_parameters() -> None:
    request = VLLMProvider("o3-distill").request(HI, GenParams(), 0, 1)
    assert (request.sent["temperature"], request.sent["max_tokens"], request.notices) == (0.0, 256, [])
    assert VLLMProvider("gpt-5-local").limits() == []


@pytest.mark.parametrize(("effort", "sent"), [("minimal", "low"), ("medium", "medium")])
def test_a_reasoning_effort_reaches_either_kind_of_chat_template(effort: str, sent: str) -> None:
    request = VLLMProvider("openai/gpt-oss-20b", effort).request(HI, GenParams(), 0, 1)
    assert request.sent["reasoning_effort"] == request.body["reasoning_effort"] == sent
    assert request.sent["chat_template_kwargs"] == {"enable_thinking": True}


def test_reasoning_content_and_cached_prompt_tokens_are_recorded() -> None:
    answer = {
        "object": "chat.completion", "model": "Qwen/Qwen3-8B",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2 is 4."},
             "finish_reason": "stop"},
            {"index": 1, "message": {"role": "assistant", "content": "four", "reasoning": "Adding."},
             "finish_reason": "length"},
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 25, "total_tokens": 65,
                  "prompt_tokens_details": {"cached_tokens": 32}},
    }
    completions = VLLMProvider("Qwen/Qwen3-8B", "high").replies(answer, 2, GenParams(n=2))
    assert [(c.text, c.reasoning, c.finish_reason) for c in completions] == [
        ("4", "2+2 is 4.", "stop"), ("four", "Adding.", "length")]
    assert [(c.prompt_tokens, c.cached_prompt_tokens) for c in completions] == [(40, 32), (0, 0)]
    assert [c.completion_tokens for c in completions] == [5, 20]


@pytest.mark.parametrize(("status", "body", "error", "message"), [
    (400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested "
           "5000 tokens (4000 in the messages, 1000 in the completion).", "type": "BadRequestError", "code": 400},
     ContextOverflow,
     "prompt does not fit the context of Qwen/Qwen3-8B (\"This model's maximum context length is 4096 tokens. "
     "However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).\")"),
    (404, {"error": {"message": "The model `Qwen/Qwen3-8B` does not exist.", "type": "NotFoundError", "code": 404}},
     VeriloopError,
     "the vLLM server does not serve the model 'Qwen/Qwen3-8B' ('The model `Qwen/Qwen3-8B` does not exist.'); give "
     "the name GET /v1/models lists (its --served-model-name)"),
    (401, {"error": "Unauthorized"}, VeriloopError,
     "The vLLM server refused the API key ('Unauthorized'); set VLLM_API_KEY or VERILOOP_API_KEY or pass --api-key"),
])
def test_refusals_are_one_line_naming_the_fix(status: int, body: object, error: type[Exception], message: str) -> None:
    refused = VLLMProvider("Qwen/Qwen3-8B").refusal(status, json.dumps(body))
    assert type(refused) is error and str(refused) == message


def test_other_refusals_are_left_to_the_transport() -> None:
    assert VLLMProvider("m").refusal(400, json.dumps({"object": "error", "message": "top_p must be in (0, 1]"})) is None


# End to end, against the stand-in that plays vLLM's OpenAI-compatible server.

def test_k_samples_of_a_reasoning_model_in_one_request_with_prefix_caching(tmp_path, calls_of) -> None:
    with VLLMStandin() as server:
        proc = veriloop("run", "--model", "vllm/Qwen/Qwen3-8B", "--base-url", server.base_url, "--api-key",
                        server.key, "--reasoning-effort", "high", "-s", "self-consistency", "--k", "15", "-n", "2",
                        "--out", str(tmp_path / "run"), home=tmp_path / "home")
        bodies = [seen.body for seen in server.requests]
        billed = dict(server.billed)
    assert proc.returncode == 0, proc.stderr
    assert [body["n"] for body in bodies] == [15, 15] and billed["requests"] == 2
    assert all(body["reasoning_effort"] == "high" and body["chat_template_kwargs"] == {"enable_thinking": True}
               for body in bodies)
    calls = calls_of(tmp_path / "run")
    assert [c["sample_index"] for c in calls] == list(range(15)) * 2
    assert {c["reasoning"] for c in calls} == {REASONING}
    assert sum(c["prompt_tokens"] for c in calls) == billed["prompt_tokens"]
    assert sum(c["cached_prompt_tokens"] for c in calls) > 0  # the second task's prompt shares the first's prefix


def test_the_main_jobs_strategies_and_correct_reach_vllm(tmp_path) -> None:
    with VLLMStandin() as server:
        proc = veriloop("run", "--model", "vllm/Qwen/Qwen2.5-1.5B-Instruct", "--base-url", server.base_url,
                        "--api-key", server.key, "-n", "2", "--k", "3", "--max-rounds", "2",
                        "--out", str(tmp_path / "run"), home=tmp_path / "home")
        result = vl.correct(vl.model("vllm/Qwen/Qwen2.5-1.5B-Instruct", base_url=server.base_url, api_key=server.key,
                                     cache=False),
                            "What is 3 + 4?", lambda prompt, answer: "7" in answer, max_rounds=2)
    assert proc.returncode == 0, proc.stderr
    assert result.answer.endswith("Verdict: correct")
    assert result.trajectory.calls[0].sent["temperature"] == 0.0


@pytest.mark.parametrize(("case", "error", "expected"), [
    ("key", VeriloopError,
     "The vLLM server refused the API key ('Unauthorized'); set VLLM_API_KEY or VERILOOP_API_KEY or pass --api-key"),
    ("model", VeriloopError,
     "the vLLM server does not serve the model 'Qwen9' ('The model `Qwen9` does not exist.'); give the name "
     "GET /v1/models lists (its --served-model-name)"),
    ("context", ContextOverflow, "prompt does not fit the context of Qwen/Qwen3-8B"),
])
def test_the_stand_ins_refusals_end_in_one_line(case: str, error: type[Exception], expected: str, generate) -> None:
    with VLLMStandin(models={"Qwen/Qwen3-8B": 40}) as server:
        backend = load_backend("vllm/Qwen9" if case == "model" else "vllm/Qwen/Qwen3-8B", base_url=server.base_url,
                               api_key="wrong-key" if case == "key" else server.key)
        words = [{"role": "user", "content": "word " * 50}] if case == "context" else None
        with pytest.raises(error) as info:
            generate(backend, words, GenParams(max_tokens=4))
    assert type(info.value) is error and str(info.value).startswith(expected) and "\n" not in str(info.value)
