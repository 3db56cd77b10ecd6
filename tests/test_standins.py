"""The conformance stand-ins (tests/standins/) hold each provider's documented rules: every
refusal's exact status and body, n samples, thinking, the batch lifecycles and the
billing counters, pinned by raw HTTP requests. They are stdlib servers that start in
milliseconds, so nothing here is marked `server`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from servers import SERVER_REPLY
from standins.anthropic import OVERLOADED, THINKING_TOKENS, AnthropicStandin, rate_limited
from standins.base import call, iter_jsonl
from standins.google import OVERLOADED as GOOGLE_OVERLOADED
from standins.google import THOUGHT_TOKENS, GoogleStandin, exhausted
from standins.ollama import THINKING as OLLAMA_THINKING
from standins.ollama import OllamaStandin
from standins.openai import OpenAIStandin
from standins.vllm import REASONING as VLLM_REASONING
from standins.vllm import VLLMStandin

USER = [{"role": "user", "content": "What is 3 + 4?"}]  # 5 words + 3 = 8 prompt tokens
REPLY_WORDS = len(SERVER_REPLY.split())  # 15


def numbered(messages: list[dict[str, Any]], index: int) -> str:
    return f"Answer: {index}"


# ---------------------------------------------------------------- OpenAI


def chat(s: OpenAIStandin, body: dict[str, Any], key: str | None = None) -> tuple[int, Any]:
    status, data, _ = call(s.base_url + "/chat/completions", body,
                           headers={"Authorization": f"Bearer {key or s.key}"})
    return status, data


def openai_error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def test_openai_answers_n_choices_and_bills_the_prompt_once():
    with OpenAIStandin(reply=numbered) as s:
        status, data = chat(s, {"model": "gpt-4o-mini", "messages": USER, "n": 3, "seed": 7})
        assert status == 200
        assert [c["message"]["content"] for c in data["choices"]] == ["Answer: 0", "Answer: 1", "Answer: 2"]
        assert data["usage"] == {
            "prompt_tokens": 8, "completion_tokens": 6, "total_tokens": 14,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}
        assert s.billed == {"requests": 1, "prompt_tokens": 8, "completion_tokens": 6}
        assert s.requests[0].body["n"] == 3 and "authorization" not in s.requests[0].headers


def test_openai_ignoring_n_answers_one_choice():
    with OpenAIStandin(ignore_n=True) as s:
        status, data = chat(s, {"model": "gpt-4o-mini", "messages": USER, "n": 4})
        assert (status, len(data["choices"]), data["choices"][0]["message"]["content"]) == (200, 1, SERVER_REPLY)


def test_openai_refuses_a_missing_or_wrong_key_and_an_unknown_model():
    with OpenAIStandin() as s:
        status, data, _ = call(s.base_url + "/chat/completions", {"model": "gpt-4o-mini", "messages": USER})
        assert status == 401 and data["error"]["message"].startswith("You didn't provide an API key.")
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER}, key="sk-wrong-key-9876") == (401, openai_error(
            "Incorrect API key provided: sk-**********9876. You can find your API key at "
            "https://platform.openai.com/account/api-keys.", code="invalid_api_key"))
        assert chat(s, {"model": "gpt-9", "messages": USER}) == (404, openai_error(
            "The model `gpt-9` does not exist or you do not have access to it.", code="model_not_found"))
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER, "best_of": 2}) == (
            400, openai_error("Unrecognized request argument supplied: best_of"))
        assert s.billed["requests"] == 0


@pytest.mark.parametrize("extra, refusal", [
    ({"max_tokens": 50}, openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                      "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")),
    ({"temperature": 0.7}, openai_error("Unsupported value: 'temperature' does not support 0.7 with this model. Only "
                                        "the default (1) value is supported.", "temperature", "unsupported_value")),
    ({"top_p": 0.5}, openai_error("Unsupported value: 'top_p' does not support 0.5 with this model. Only the "
                                  "default (1) value is supported.", "top_p", "unsupported_value")),
    ({"logprobs": True}, openai_error("Unsupported parameter: 'logprobs' is not supported with this model.",
                                      "logprobs", "unsupported_parameter")),
    ({"reasoning_effort": "minimal"}, openai_error(
        "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. Supported values are: "
        "'low', 'medium', and 'high'.", "reasoning_effort", "unsupported_value")),
])
def test_openai_reasoning_models_refuse_what_openai_refuses(extra, refusal):
    with OpenAIStandin() as s:
        assert chat(s, {"model": "o3-mini", "messages": USER, **extra}) == (400, refusal)


def test_openai_reasoning_effort_only_for_reasoning_models_and_its_tokens_are_reported():
    with OpenAIStandin() as s:
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER, "reasoning_effort": "low"}) == (400, openai_error(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort",
            "unsupported_parameter"))
        status, data = chat(s, {"model": "gpt-5-mini", "messages": USER, "reasoning_effort": "low", "temperature": 1,
                                "max_completion_tokens": 1000})
        assert status == 200
        assert data["usage"]["completion_tokens"] == 16 + REPLY_WORDS
        assert data["usage"]["completion_tokens_details"]["reasoning_tokens"] == 16
        # The reasoning spends the limit first: a limit below it leaves an empty answer.
        status, data = chat(s, {"model": "o4-mini", "messages": USER, "max_completion_tokens": 10})
        assert (data["choices"][0]["message"]["content"], data["choices"][0]["finish_reason"]) == ("", "length")
        assert data["usage"]["completion_tokens_details"]["reasoning_tokens"] == 10


def test_openai_limits_stops_logprobs_and_ranges():
    with OpenAIStandin() as s:
        status, data = chat(s, {"model": "gpt-4o-mini", "messages": USER, "max_tokens": 3})
        assert (data["choices"][0]["message"]["content"], data["choices"][0]["finish_reason"]) == ("Step 1: 3", "length")
        status, data = chat(s, {"model": "gpt-4o-mini", "messages": USER, "stop": ["Answer:"]})
        assert data["choices"][0]["message"]["content"] == "Step 1: 3 + 4 = 7.\nanswer = 7\n"
        status, data = chat(s, {"model": "gpt-4o-mini", "messages": USER, "logprobs": True, "top_logprobs": 2})
        first = data["choices"][0]["logprobs"]["content"][0]
        assert (first["token"], len(first["top_logprobs"])) == ("Step", 2)
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER, "n": 0}) == (400, openai_error(
            "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.", "n",
            "integer_below_min_value"))
        assert chat(s, {"model": "gpt-4o-mini", "messages": [{"role": "robot", "content": "x"}]})[1]["error"][
            "code"] == "invalid_value"


def test_openai_context_overflow_and_model_list():
    with OpenAIStandin(models={"gpt-4o-mini": 20}) as s:
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER, "max_tokens": 15}) == (400, openai_error(
            "This model's maximum context length is 20 tokens. However, you requested 23 tokens (8 in the messages, "
            "15 in the completion). Please reduce the length of the messages or completion.", "messages",
            "context_length_exceeded"))
        status, data, _ = call(s.base_url + "/models", headers={"Authorization": f"Bearer {s.key}"})
        assert [m["id"] for m in data["data"]] == ["gpt-4o-mini"]


def test_openai_a_queued_fault_answers_the_next_request_once():
    with OpenAIStandin() as s:
        s.faults.append((429, openai_error("Rate limit reached", code="rate_limit_exceeded"), {"retry-after": "2"}))
        status, data, headers = call(s.base_url + "/chat/completions", {"model": "gpt-4o-mini", "messages": USER},
                                     headers={"Authorization": f"Bearer {s.key}"})
        assert (status, data["error"]["code"], headers["retry-after"]) == (429, "rate_limit_exceeded", "2")
        assert chat(s, {"model": "gpt-4o-mini", "messages": USER})[0] == 200
        assert len(s.requests) == 2 and s.billed["requests"] == 1


def upload(s: OpenAIStandin, lines: list[Any], filename: str = "in.jsonl") -> tuple[int, Any]:
    boundary = uuid.uuid4().hex
    content = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: application/jsonl\r\n\r\n{content}\r\n--{boundary}--\r\n").encode()
    status, body, _ = call(s.base_url + "/files", data=data, headers={
        "Authorization": f"Bearer {s.key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    return status, body


def line(custom_id: str, **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "o3-mini", "messages": USER, **body}}


def batch_call(s: OpenAIStandin, path: str, body: Any = None) -> Any:
    status, data, _ = call(s.base_url + path, body, method="POST" if body is not None else "GET",
                           headers={"Authorization": f"Bearer {s.key}"})
    assert status == 200, data
    return data


def submit(s: OpenAIStandin, lines: list[Any]) -> dict[str, Any]:
    status, file = upload(s, lines)
    assert status == 200 and file["purpose"] == "batch"
    return batch_call(s, "/batches", {"input_file_id": file["id"], "endpoint": "/v1/chat/completions",
                                      "completion_window": "24h", "metadata": {"run": "r1"}})


def test_openai_batch_lifecycle_answers_each_line_as_the_live_endpoint_would():
    with OpenAIStandin() as s:
        batch = submit(s, [line("a"), line("b", max_tokens=5)])
        assert (batch["status"], batch["request_counts"], batch["metadata"]) == (
            "validating", {"total": 2, "completed": 0, "failed": 0}, {"run": "r1"})
        seen = []
        for _ in range(3):
            s.advance(batch["id"])
            seen.append(batch_call(s, f"/batches/{batch['id']}")["status"])
        assert seen == ["in_progress", "finalizing", "completed"]
        done = batch_call(s, f"/batches/{batch['id']}")
        assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
        _, output, _ = call(s.base_url + f"/files/{done['output_file_id']}/content",
                            headers={"Authorization": f"Bearer {s.key}"})
        [ok] = iter_jsonl(output)
        assert (ok["custom_id"], ok["response"]["status_code"], ok["error"]) == ("a", 200, None)
        assert ok["response"]["body"]["choices"][0]["message"]["content"] == SERVER_REPLY
        _, errors, _ = call(s.base_url + f"/files/{done['error_file_id']}/content",
                            headers={"Authorization": f"Bearer {s.key}"})
        [refused] = iter_jsonl(errors)
        assert (refused["custom_id"], refused["response"]["status_code"]) == ("b", 400)
        assert refused["response"]["body"]["error"]["param"] == "max_tokens"
        assert s.billed == {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        assert s.billed_batch == {"requests": 1, "prompt_tokens": 8, "completion_tokens": 64 + REPLY_WORDS}
        assert s.batches[0].custom_ids == ["a", "b"]


def test_openai_batch_failed_expired_and_cancelled():
    with OpenAIStandin(auto_advance=True) as s:
        bad = submit(s, ["{not json", line("x"), line("x")])
        failed = batch_call(s, f"/batches/{bad['id']}")  # auto-advanced one state
        assert failed["status"] == "failed"
        assert [(e["code"], e["line"]) for e in failed["errors"]["data"]] == [
            ("invalid_json_line", 1), ("duplicate_custom_id", 3)]
        late = submit(s, [line("p"), line("q"), line("r")])
        s.expire(late["id"], done=1)
        expired = batch_call(s, f"/batches/{late['id']}")
        assert (expired["status"], expired["request_counts"]) == ("expired", {"total": 3, "completed": 1, "failed": 2})
        _, errors, _ = call(s.base_url + f"/files/{expired['error_file_id']}/content",
                            headers={"Authorization": f"Bearer {s.key}"})
        assert [(e["custom_id"], e["error"]["code"]) for e in iter_jsonl(errors)] == [
            ("q", "batch_expired"), ("r", "batch_expired")]
        stopped = submit(s, [line("c")])
        assert batch_call(s, f"/batches/{stopped['id']}/cancel", {})["status"] == "cancelling"
        assert batch_call(s, f"/batches/{stopped['id']}")["status"] == "cancelled"
        page = batch_call(s, "/batches?limit=2")
        assert ([b["id"] for b in page["data"]], page["has_more"]) == ([stopped["id"], late["id"]], True)
        rest = batch_call(s, f"/batches?after={late['id']}")
        assert [b["id"] for b in rest["data"]] == [bad["id"]]


def test_openai_files_refuse_a_batch_file_that_is_not_jsonl():
    with OpenAIStandin() as s:
        assert upload(s, [line("a")], filename="in.txt") == (
            400, openai_error("Invalid file format for Batch API. Must be .jsonl"))


# ---------------------------------------------------------------- Anthropic

CLAUDE = "claude-sonnet-4-5"


def claude(s: AnthropicStandin, body: Any, headers: dict[str, str] | None = None, path: str = "/v1/messages",
           method: str | None = None) -> tuple[int, Any]:
    sent = {"x-api-key": s.key, "anthropic-version": "2023-06-01"} if headers is None else headers
    status, data, got = call(s.base_url + path, body, headers=sent, method=method)
    if status != 200:
        assert data["request_id"] == got["request-id"]
        del data["request_id"]
    return status, data


def claude_error(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def test_anthropic_answers_a_message_with_thinking_first():
    with AnthropicStandin() as s:
        status, data = claude(s, {"model": CLAUDE, "max_tokens": 2048, "system": "Be brief.", "messages": USER,
                                  "thinking": {"type": "enabled", "budget_tokens": 1024}})
        assert status == 200
        assert [block["type"] for block in data["content"]] == ["thinking", "text"]
        assert data["content"][1]["text"] == SERVER_REPLY
        assert (data["stop_reason"], data["stop_sequence"]) == ("end_turn", None)
        assert data["usage"] == {"input_tokens": 13, "output_tokens": THINKING_TOKENS + REPLY_WORDS,
                                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                                 "service_tier": "standard"}
        status, data = claude(s, {"model": CLAUDE, "max_tokens": 3, "messages": USER})
        assert (data["content"], data["stop_reason"]) == ([{"type": "text", "text": "Step 1: 3"}], "max_tokens")
        status, data = claude(s, {"model": CLAUDE, "max_tokens": 100, "messages": USER, "stop_sequences": ["answer"]})
        assert (data["stop_reason"], data["stop_sequence"]) == ("stop_sequence", "answer")
        assert s.billed == {"requests": 3, "prompt_tokens": 29, "completion_tokens": THINKING_TOKENS + 15 + 3 + 6}


@pytest.mark.parametrize("headers, status, refusal", [
    ({"anthropic-version": "2023-06-01"}, 401, claude_error("x-api-key header is required", "authentication_error")),
    ({"x-api-key": "wrong", "anthropic-version": "2023-06-01"}, 401,
     claude_error("invalid x-api-key", "authentication_error")),
    ({"x-api-key": "KEY"}, 400, claude_error("anthropic-version: header is required")),
    ({"x-api-key": "KEY", "anthropic-version": "2024-13-01"}, 400,
     claude_error('anthropic-version: "2024-13-01" is not a valid version')),
])
def test_anthropic_refuses_missing_headers(headers, status, refusal):
    with AnthropicStandin(key="KEY") as s:
        assert claude(s, {"model": CLAUDE, "max_tokens": 10, "messages": USER}, headers=headers) == (status, refusal)


THINK = {"type": "enabled", "budget_tokens": 1024}


@pytest.mark.parametrize("body, status, refusal", [
    ({"max_tokens": 10, "messages": USER, "n": 2}, 400, claude_error("n: Extra inputs are not permitted")),
    ({"max_tokens": 10, "messages": USER, "seed": 1}, 400, claude_error("seed: Extra inputs are not permitted")),
    ({"messages": USER}, 400, claude_error("max_tokens: Field required")),
    ({"max_tokens": 10, "messages": [{"role": "system", "content": "x"}, *USER]}, 400, claude_error(
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" '
        "as an input message role.")),
    ({"max_tokens": 10, "messages": USER, "temperature": 1.5}, 400,
     claude_error("temperature: Input should be less than or equal to 1")),
    ({"max_tokens": 2000, "messages": USER, "thinking": {"type": "enabled", "budget_tokens": 512}}, 400,
     claude_error("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")),
    ({"max_tokens": 1024, "messages": USER, "thinking": THINK}, 400, claude_error(
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")),
    ({"max_tokens": 2000, "messages": USER, "thinking": THINK, "temperature": 0.5}, 400, claude_error(
        "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        "#important-considerations-when-using-extended-thinking")),
    ({"max_tokens": 2000, "messages": USER, "thinking": THINK, "top_k": 5}, 400, claude_error(
        "`top_k` must be unset when thinking is enabled. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        "#important-considerations-when-using-extended-thinking")),
    ({"max_tokens": 2000, "messages": USER, "thinking": THINK, "top_p": 0.9}, 400, claude_error(
        "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our "
        "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        "#important-considerations-when-using-extended-thinking")),
    ({"max_tokens": 100_000, "messages": USER}, 400, claude_error(
        f"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for {CLAUDE}")),
])
def test_anthropic_refuses_what_anthropic_refuses(body, status, refusal):
    with AnthropicStandin() as s:
        assert claude(s, {"model": CLAUDE, **body}) == (status, refusal)
        assert s.billed["requests"] == 0


def test_anthropic_unknown_model_context_overflow_size_and_faults():
    with AnthropicStandin(models={CLAUDE: (10, 64_000, True)}) as s:
        assert claude(s, {"model": "claude-9", "max_tokens": 5, "messages": USER}) == (
            404, claude_error("model: claude-9", "not_found_error"))
        long = [{"role": "user", "content": "word " * 20}]
        assert claude(s, {"model": CLAUDE, "max_tokens": 5, "messages": long}) == (
            400, claude_error("prompt is too long: 23 tokens > 10 maximum"))
        s.max_request_bytes = 50
        assert claude(s, {"model": CLAUDE, "max_tokens": 5, "messages": long}) == (
            413, claude_error("Request exceeds the maximum allowed number of bytes.", "request_too_large"))
        s.faults += [OVERLOADED, rate_limited(retry_after=3)]
        status, data, _ = call(s.base_url + "/v1/messages", {}, headers={"x-api-key": s.key})
        assert (status, data) == (529, claude_error("Overloaded", "overloaded_error"))
        status, data, headers = call(s.base_url + "/v1/messages", {}, headers={"x-api-key": s.key})
        assert (status, data["error"]["type"], headers["retry-after"], headers["anthropic-ratelimit-requests-remaining"]
                ) == (429, "rate_limit_error", "3", "0")


def test_anthropic_batch_results_succeeded_errored_expired_and_canceled():
    with AnthropicStandin() as s:
        ok = {"model": CLAUDE, "max_tokens": 100, "messages": USER}
        status, batch = claude(s, {"requests": [{"custom_id": "a", "params": ok},
                                                {"custom_id": "b", "params": {**ok, "n": 3}}]},
                               path="/v1/messages/batches")
        assert (status, batch["processing_status"], batch["results_url"]) == (200, "in_progress", None)
        assert batch["request_counts"] == {"processing": 2, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        s.advance()
        status, ended = claude(s, None, path=f"/v1/messages/batches/{batch['id']}")
        assert ended["processing_status"] == "ended"
        assert ended["request_counts"] == {"processing": 0, "succeeded": 1, "errored": 1, "canceled": 0, "expired": 0}
        _, text, _ = call(ended["results_url"], headers={"x-api-key": s.key, "anthropic-version": "2023-06-01"})
        a, b = iter_jsonl(text)
        assert (a["custom_id"], a["result"]["type"], a["result"]["message"]["content"][0]["text"]) == (
            "a", "succeeded", SERVER_REPLY)
        assert b == {"custom_id": "b", "result": {"type": "errored", "error": claude_error(
            "n: Extra inputs are not permitted")}}
        _, late = claude(s, {"requests": [{"custom_id": f"r{i}", "params": ok} for i in range(3)]},
                         path="/v1/messages/batches")
        s.expire(late["id"], done=2)
        _, stopped = claude(s, {"requests": [{"custom_id": "c", "params": ok}]}, path="/v1/messages/batches")
        _, canceling = claude(s, {}, path=f"/v1/messages/batches/{stopped['id']}/cancel")
        assert canceling["processing_status"] == "canceling"
        s.finish_batches()
        _, page = claude(s, None, path="/v1/messages/batches?limit=2")
        assert [(b["id"], b["request_counts"]["expired"], b["request_counts"]["canceled"]) for b in page["data"]] == [
            (stopped["id"], 0, 1), (late["id"], 1, 0)]
        assert page["has_more"] is True
        assert s.billed["requests"] == 0 and s.billed_batch["requests"] == 3
        assert [job.custom_ids for job in s.batches] == [["a", "b"], ["r0", "r1", "r2"], ["c"]]
        assert claude(s, {"requests": [{"custom_id": "has space", "params": ok}]}, path="/v1/messages/batches") == (
            400, claude_error("requests.0.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"))


# ---------------------------------------------------------------- Google

CONTENTS = [{"role": "user", "parts": [{"text": "What is 3 + 4?"}]}]


def gemini(s: GoogleStandin, model: str, body: Any, key: str | None = "header") -> tuple[int, Any]:
    url = s.base_url + f"/v1beta/models/{model}:generateContent"
    headers = {"x-goog-api-key": s.key} if key == "header" else {}
    if key not in (None, "header"):
        url += f"?key={key}"
    status, data, _ = call(url, body, headers=headers)
    return status, data


def google_error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def test_google_answers_candidates_with_thoughts_first_when_asked():
    with GoogleStandin(reply=numbered) as s:
        status, data = gemini(s, "gemini-2.5-flash", {
            "contents": CONTENTS, "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "generationConfig": {"candidateCount": 2, "seed": 3, "thinkingConfig": {"includeThoughts": True}}})
        assert status == 200
        assert [[p.get("thought", False) for p in c["content"]["parts"]] for c in data["candidates"]] == [
            [True, False], [True, False]]
        assert [c["content"]["parts"][1]["text"] for c in data["candidates"]] == ["Answer: 0", "Answer: 1"]
        assert data["usageMetadata"] == {"promptTokenCount": 13, "candidatesTokenCount": 4,
                                         "thoughtsTokenCount": 2 * THOUGHT_TOKENS, "totalTokenCount": 97,
                                         "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 13}]}
        assert s.billed == {"requests": 1, "prompt_tokens": 13, "completion_tokens": 84}
        # The thinking spends maxOutputTokens first; a candidate left without text has no parts.
        status, data = gemini(s, "gemini-2.5-flash", {"contents": CONTENTS, "generationConfig": {
            "maxOutputTokens": 30}}, key=s.key)
        assert data["candidates"][0] == {"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}
        status, data = gemini(s, "gemini-2.0-flash", {"contents": CONTENTS, "generationConfig": {
            "maxOutputTokens": 1, "responseLogprobs": True, "logprobs": 2}})
        assert data["candidates"][0]["content"]["parts"] == [{"text": "Answer:"}]
        assert data["candidates"][0]["logprobsResult"]["chosenCandidates"] == [
            {"token": "Answer:", "logProbability": 0.0}]
        assert "thoughtsTokenCount" not in data["usageMetadata"]


@pytest.mark.parametrize("model, body, key, status, refusal", [
    ("gemini-2.5-flash", {"contents": CONTENTS}, None, 403, google_error(
        403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.")),
    ("gemini-9", {"contents": CONTENTS}, "header", 404, google_error(
        404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their supported methods.")),
    ("gemini-2.5-flash", {"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "header", 400,
     google_error(400, "INVALID_ARGUMENT", "Please use a valid role: user, model.")),
    ("gemini-2.5-flash", {"contents": CONTENTS, "n": 2}, "header", 400,
     google_error(400, "INVALID_ARGUMENT", 'Invalid JSON payload received. Unknown name "n": Cannot find field.')),
    ("gemini-2.5-pro", {"contents": CONTENTS, "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}},
     "header", 400, google_error(400, "INVALID_ARGUMENT", "Budget 0 is invalid. This model only works in thinking "
                                                          "mode.")),
])
def test_google_refuses_what_gemini_refuses(model, body, key, status, refusal):
    with GoogleStandin() as s:
        assert gemini(s, model, body, key=key) == (status, refusal)


def test_google_bad_key_context_overflow_and_faults():
    with GoogleStandin(models={"gemini-2.5-flash": (5, 100)}) as s:
        status, data = gemini(s, "gemini-2.5-flash", {"contents": CONTENTS}, key="wrong")
        assert (status, data["error"]["message"], data["error"]["status"]) == (
            400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
        assert gemini(s, "gemini-2.5-flash", {"contents": CONTENTS}) == (400, google_error(
            400, "INVALID_ARGUMENT", "The input token count (8) exceeds the maximum number of tokens allowed (5)."))
        s.faults += [GOOGLE_OVERLOADED, exhausted(7)]
        assert gemini(s, "gemini-2.5-flash", {}) == (503, google_error(
            503, "UNAVAILABLE", "The model is overloaded. Please try again later."))
        status, data = gemini(s, "gemini-2.5-flash", {})
        assert (status, data["error"]["details"][0]["retryDelay"]) == (429, "7s")
        assert "key" not in s.requests[0].query and "x-goog-api-key" not in s.requests[1].headers


# ---------------------------------------------------------------- Ollama


def test_ollama_answers_without_a_key_and_streams_unless_told_not_to():
    with OllamaStandin() as s:
        status, data, _ = call(s.base_url + "/api/chat", {"model": "qwen3", "messages": USER, "stream": False,
                                                          "think": True, "options": {"seed": 1, "temperature": 0}},
                               headers={"Authorization": "Bearer anything"})
        assert status == 200
        assert data["message"] == {"role": "assistant", "content": SERVER_REPLY, "thinking": OLLAMA_THINKING}
        assert (data["done"], data["done_reason"], data["prompt_eval_count"], data["eval_count"]) == (
            True, "stop", 8, 8 + REPLY_WORDS)
        status, text, headers = call(s.base_url + "/api/chat", {"model": "llama3.2", "messages": USER})
        assert headers["content-type"] == "application/x-ndjson"
        stream = list(iter_jsonl(text))
        assert [c["done"] for c in stream] == [False] * REPLY_WORDS + [True]
        assert "".join(c["message"]["content"] for c in stream).split() == SERVER_REPLY.split()
        status, data, _ = call(s.base_url + "/api/chat", {"model": "llama3.2", "messages": USER, "stream": False,
                                                          "options": {"num_predict": 2, "num_ctx": 4}})
        assert (data["message"]["content"], data["done_reason"], data["prompt_eval_count"]) == ("Step 1:", "length", 4)
        assert s.truncated == 1
        assert s.billed == {"requests": 3, "prompt_tokens": 20, "completion_tokens": 8 + 2 * REPLY_WORDS + 2}


def test_ollama_refusals_and_model_list():
    with OllamaStandin() as s:
        assert call(s.base_url + "/api/chat", {"model": "mistral", "messages": USER, "stream": False})[:2] == (
            404, {"error": 'model "mistral" not found, try pulling it first'})
        assert call(s.base_url + "/api/chat", {"model": "llama3.2", "messages": USER, "think": "high",
                                               "stream": False})[:2] == (
            400, {"error": '"llama3.2" does not support thinking'})
        status, tags, _ = call(s.base_url + "/api/tags")
        assert [m["name"] for m in tags["models"]] == ["llama3.2:latest", "qwen3:latest", "gpt-oss:20b"]
        assert call(s.base_url + "/v1/api/chat", {})[:2] == (404, "404 page not found")


def test_ollama_prompt_eval_count_leaves_out_cached_tokens():
    with OllamaStandin(prefix_cache=True) as s:
        for expected in (8, None):
            _, data, _ = call(s.base_url + "/api/chat", {"model": "llama3.2", "messages": USER, "stream": False})
            assert data.get("prompt_eval_count") == expected


# ---------------------------------------------------------------- vLLM


def vllm(s: VLLMStandin, body: Any, path: str = "/chat/completions") -> tuple[int, Any]:
    status, data, _ = call(s.base_url + path, body, headers={"Authorization": f"Bearer {s.key}"})
    return status, data


def test_vllm_answers_n_reasoning_and_reports_the_cached_prefix():
    with VLLMStandin(reply=numbered) as s:
        status, data = vllm(s, {"model": "Qwen/Qwen3-8B", "messages": USER, "n": 2, "seed": 0, "top_k": 20,
                                "max_tokens": 100})
        assert status == 200
        assert [c["message"]["content"] for c in data["choices"]] == ["Answer: 0", "Answer: 1"]
        assert data["choices"][0]["message"]["reasoning_content"] == VLLM_REASONING
        assert data["choices"][0]["message"]["reasoning"] == VLLM_REASONING
        reasoning = len(VLLM_REASONING.split())
        assert data["usage"] == {"prompt_tokens": 8, "completion_tokens": 2 * (reasoning + 2),
                                 "total_tokens": 8 + 2 * (reasoning + 2), "prompt_tokens_details": {"cached_tokens": 0}}
        longer = [*USER, {"role": "assistant", "content": "7"}, {"role": "user", "content": "Sure?"}]
        status, data = vllm(s, {"model": "Qwen/Qwen2.5-1.5B-Instruct", "messages": longer, "logprobs": True})
        assert data["usage"]["prompt_tokens_details"] == {"cached_tokens": 8}
        assert data["choices"][0]["message"]["reasoning_content"] is None
        assert data["choices"][0]["logprobs"]["content"][0]["token"] == "Answer:"
        assert s.billed == {"requests": 2, "prompt_tokens": 8 + 16, "completion_tokens": 2 * (reasoning + 2) + 2}


def test_vllm_errors_have_vllms_shape():
    with VLLMStandin(models={"Qwen/Qwen3-8B": 20}) as s:
        assert vllm(s, {"model": "Qwen/Qwen3-8B", "messages": USER, "max_tokens": 15}) == (400, {
            "object": "error", "message": "This model's maximum context length is 20 tokens. However, you requested "
            "23 tokens (8 in the messages, 15 in the completion). Please reduce the length of the messages or "
            "completion.", "type": "BadRequestError", "param": None, "code": 400})
        assert vllm(s, {"model": "llama", "messages": USER}) == (404, {
            "object": "error", "message": "The model `llama` does not exist.", "type": "NotFoundError", "param": None,
            "code": 404})
        assert vllm(s, {"input_file_id": "file-1"}, path="/batches") == (404, {"detail": "Not Found"})
        assert call(s.base_url + "/chat/completions", {"model": "Qwen/Qwen3-8B", "messages": USER},
                    headers={"Authorization": "Bearer wrong"})[:2] == (401, {"error": "Unauthorized"})
