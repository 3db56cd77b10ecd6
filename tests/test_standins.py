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
from standins.base import call, iter_jsonl
from standins.openai import OpenAIStandin

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
