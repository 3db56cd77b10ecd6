"""A stand-in for OpenAI's API: chat completions, the model list, and the Files and Batch
APIs, with OpenAI's documented rules and error bodies ({"error": {message, type, param,
code}}).

Invariants (beyond the base's):
- Reasoning models (ids starting o1, o3, o4, gpt-5) refuse `max_tokens`, a temperature or
  top_p other than 1, and logprobs, exactly as OpenAI does; only they accept
  `reasoning_effort`. Their usage reports reasoning tokens (a fixed count per effort,
  inside completion_tokens and inside the max_completion_tokens limit).
- n samples come back as n choices, choice i being `reply(messages, i)`; the prompt is
  billed once. With `ignore_n` the server answers one choice whatever n is (as
  llama.cpp's server does), so a client's fallback can be tested.
- A batch line is answered by the very code that answers the live endpoint: a line the
  live endpoint refuses gets that 400 body, in the error file. Batch work is billed to
  `billed_batch` only.
- Batch states: validating -> in_progress -> finalizing -> completed, or validating ->
  failed (a bad input file, with its per-line errors), or expired (`expire`), or
  cancelling -> cancelled. One `advance` moves one state; lines are answered on the move
  out of in_progress.
"""

from __future__ import annotations

import json
from email import policy
from email.parser import BytesParser
from typing import Any

from .base import EPOCH, Answer, Job, Seen, Standin, cut_at_stop, first_words, prompt_words

REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
EFFORTS = ("minimal", "low", "medium", "high")
# Reasoning tokens a sample spends at each effort: fixed, so a test can tell the efforts apart.
EFFORT_TOKENS = {"minimal": 8, "low": 16, "medium": 64, "high": 256}
CHAT_FIELDS = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stop", "seed",
    "logprobs", "top_logprobs", "reasoning_effort", "stream", "stream_options", "presence_penalty",
    "frequency_penalty", "logit_bias", "user", "response_format", "tools", "tool_choice", "parallel_tool_calls",
    "metadata", "store", "service_tier", "modalities", "prediction", "audio", "verbosity",
}
ROLES = ("system", "assistant", "user", "function", "tool", "developer")
EXPIRED_LINE = "This request could not be executed before the completion window expired."


def is_reasoning(model: str) -> bool:
    return model.startswith(REASONING_PREFIXES)


def one_of(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def number(value: Any) -> str:
    return json.dumps(value)


class Refusal(Exception):
    """Raised while checking a request: the answer to give instead."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.status)
        self.answer = answer


class OpenAIStandin(Standin):
    version_path = "/v1"
    key_headers = ("authorization",)
    terminal = ("completed", "failed", "expired", "cancelled")
    batch_api = True

    def __init__(self, *, ignore_n: bool = False, reasoning_models: tuple[str, ...] = (), **options: Any) -> None:
        super().__init__(**options)
        self.ignore_n = ignore_n
        # Reasoning models under names of their own (an Azure deployment, a gateway's alias).
        self.reasoning_models = reasoning_models
        self.files: dict[str, dict[str, Any]] = {}

    def reasons(self, model: str) -> bool:
        return is_reasoning(model) or model in self.reasoning_models

    def default_models(self) -> dict[str, Any]:
        """Model id -> context window (tokens)."""
        return {"gpt-4o-mini": 128_000, "gpt-4.1-mini": 1_047_576, "o3-mini": 200_000, "o4-mini": 200_000,
                "gpt-5-mini": 400_000}

    # ------------------------------------------------------------ errors and auth

    def error(self, status: int, message: str, type: str = "invalid_request_error", param: str | None = None,
              code: str | None = None) -> Answer:
        return Answer(status, {"error": {"message": message, "type": type, "param": param, "code": code}})

    def refuse(self, message: str, param: str | None = None, code: str | None = None, status: int = 400) -> Refusal:
        return Refusal(self.error(status, message, param=param, code=code))

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        given = headers.get("authorization", "")
        if not given:
            return self.error(401, "You didn't provide an API key. You need to provide your API key in an "
                                   "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
        if given != f"Bearer {self.key}":
            token = given.removeprefix("Bearer ")
            masked = token[:3] + "*" * max(len(token) - 7, 0) + token[-4:] if len(token) > 7 else token
            return self.error(401, f"Incorrect API key provided: {masked}. You can find your API key at "
                                   "https://platform.openai.com/account/api-keys.", code="invalid_api_key")
        return None

    def no_route(self, seen: Seen) -> Answer:
        return self.error(404, f"Invalid URL ({seen.method} {seen.path})")

    def unknown_model(self, model: str) -> Answer:
        return self.error(404, f"The model `{model}` does not exist or you do not have access to it.",
                          code="model_not_found")

    # ------------------------------------------------------------ routes

    def parse(self, headers: dict[str, str], raw: bytes) -> Any:
        content_type = headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            return form(content_type, raw)
        return super().parse(headers, raw)

    def route(self, seen: Seen) -> Answer:
        v, path, method = self.version_path, seen.path, seen.method
        if method == "POST" and path == v + "/chat/completions":
            return self.chat(seen.body)
        if method == "GET" and path == v + "/models":
            return Answer(200, {"object": "list", "data": [self.model_object(m) for m in self.models]})
        if method == "GET" and path.startswith(v + "/models/"):
            model = path.removeprefix(v + "/models/")
            return Answer(200, self.model_object(model)) if model in self.models else self.unknown_model(model)
        if self.batch_api and path.startswith((v + "/files", v + "/batches")):
            try:
                return self.batch_route(seen)
            except Refusal as refusal:
                return refusal.answer
        return self.no_route(seen)

    def model_object(self, model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": EPOCH, "owned_by": "system"}

    # ------------------------------------------------------------ chat completions

    def chat(self, body: Any, job: Job | None = None) -> Answer:
        try:
            return self.complete(body, job)
        except Refusal as refusal:
            return refusal.answer

    def complete(self, body: Any, job: Job | None) -> Answer:
        if not isinstance(body, dict):
            raise self.refuse("We could not parse the JSON body of your request. The OpenAI API expects a JSON "
                              "payload.")
        model = body.get("model")
        if not model:
            raise self.refuse("you must provide a model parameter")
        if "messages" not in body:
            raise self.refuse("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
        self.check_fields(body)
        if model not in self.models:
            raise Refusal(self.unknown_model(model))
        messages = body["messages"]
        for i, message in enumerate(messages):
            if message.get("role") not in ROLES:
                raise self.refuse(f"Invalid value: '{message.get('role')}'. Supported values are: {one_of(ROLES)}.",
                                  f"messages[{i}].role", "invalid_value")
        self.check_params(model, body)
        n = body.get("n") or 1
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        prompt = prompt_words([m.get("content") for m in messages])
        self.check_context(model, len(prompt), limit)
        cached = self.cached(prompt)
        reasoning = self.reasoning_tokens(model, body)
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        choices, completion, reasoning_total = [], 0, 0
        for i, text in enumerate(self.samples(messages, 1 if self.ignore_n else n)):
            content, finish, spent, thought = self.sample(text, limit, stops, reasoning)
            completion += spent
            reasoning_total += thought
            choice = {"index": i, "message": self.message(content, thought), "logprobs": None,
                      "finish_reason": finish}
            if body.get("logprobs"):
                choice["logprobs"] = {"content": token_logprobs(content, body.get("top_logprobs") or 0),
                                      "refusal": None}
            choices.append(choice)
        self.bill(len(prompt), completion, job)
        usage = {"prompt_tokens": len(prompt), "completion_tokens": completion,
                 "total_tokens": len(prompt) + completion, **self.usage_details(cached, reasoning_total)}
        return Answer(200, {"id": self.next_id("chatcmpl-"), "object": "chat.completion", "created": self.tick(),
                            "model": model, "choices": choices, "usage": usage, **self.extra_fields()})

    def reasoning_tokens(self, model: str, body: dict[str, Any]) -> int:
        """What one sample spends reasoning."""
        return EFFORT_TOKENS[body.get("reasoning_effort") or "medium"] if self.reasons(model) else 0

    def extra_fields(self) -> dict[str, Any]:
        return {"service_tier": "default", "system_fingerprint": "fp_standin"}

    def usage_details(self, cached: int, reasoning: int) -> dict[str, Any]:
        return {"prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}

    def message(self, content: str, reasoning: int) -> dict[str, Any]:
        return {"role": "assistant", "content": content, "refusal": None, "annotations": []}

    def sample(self, text: str, limit: int | None, stops: list[str], reasoning: int) -> tuple[str, str, int, int]:
        """(content, finish_reason, completion tokens, reasoning tokens) of one sample."""
        if limit is not None and reasoning >= limit:
            return "", "length", limit, limit  # the whole budget spent thinking: an empty answer
        text, _ = cut_at_stop(text, stops)
        room = None if limit is None else limit - reasoning
        if room is not None and len(text.split()) > room:
            return first_words(text, room), "length", reasoning + room, reasoning
        return text, "stop", reasoning + len(text.split()), reasoning

    def check_fields(self, body: dict[str, Any]) -> None:
        for name in body:
            if name not in CHAT_FIELDS:
                raise self.refuse(f"Unrecognized request argument supplied: {name}")

    def check_params(self, model: str, body: dict[str, Any]) -> None:
        effort = body.get("reasoning_effort")
        if self.reasons(model):
            if "max_tokens" in body:
                raise self.refuse("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                  "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
            for name in ("temperature", "top_p"):
                if body.get(name, 1) != 1:
                    raise self.refuse(f"Unsupported value: '{name}' does not support {number(body[name])} with this "
                                      "model. Only the default (1) value is supported.", name, "unsupported_value")
            for name in ("logprobs", "top_logprobs"):
                if body.get(name):
                    raise self.refuse(f"Unsupported parameter: '{name}' is not supported with this model.", name,
                                      "unsupported_parameter")
            if effort is not None and effort not in EFFORTS:
                raise self.refuse(f"Invalid value: '{effort}'. Supported values are: {one_of(EFFORTS)}.",
                                  "reasoning_effort", "invalid_value")
            if effort == "minimal" and not model.startswith("gpt-5"):
                raise self.refuse("Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. "
                                  f"Supported values are: {one_of(EFFORTS[1:])}.", "reasoning_effort",
                                  "unsupported_value")
        elif effort is not None:
            raise self.refuse("Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                              "reasoning_effort", "unsupported_parameter")
        self.check_range(body, "temperature", 0, 2)
        self.check_range(body, "top_p", 0, 1)
        self.check_range(body, "n", 1, 128)
        self.check_range(body, "top_logprobs", 0, 20)

    def check_range(self, body: dict[str, Any], name: str, low: float, high: float) -> None:
        value = body.get(name)
        if value is None:
            return
        kind = "integer" if isinstance(value, int) else "decimal"
        if value > high:
            raise self.refuse(f"Invalid '{name}': {kind} above maximum value. Expected a value <= {high}, but got "
                              f"{number(value)} instead.", name, f"{kind}_above_max_value")
        if value < low:
            raise self.refuse(f"Invalid '{name}': {kind} below minimum value. Expected a value >= {low}, but got "
                              f"{number(value)} instead.", name, f"{kind}_below_min_value")

    def check_context(self, model: str, prompt: int, limit: int | None) -> None:
        window = self.models[model]
        if prompt + (limit or 0) <= window:
            return
        if limit is None:
            asked = f"your messages resulted in {prompt} tokens. Please reduce the length of the messages."
        else:
            asked = (f"you requested {prompt + limit} tokens ({prompt} in the messages, {limit} in the completion). "
                     "Please reduce the length of the messages or completion.")
        raise Refusal(self.error(400, f"This model's maximum context length is {window} tokens. However, {asked}",
                                 param="messages", code="context_length_exceeded"))

    # ------------------------------------------------------------ files and batches

    def batch_route(self, seen: Seen) -> Answer:
        v, path, method = self.version_path, seen.path, seen.method
        parts = path.removeprefix(v + "/").split("/")
        if method == "POST" and parts == ["files"]:
            return self.upload(seen.body)
        if method == "GET" and parts[0] == "files" and len(parts) in (2, 3):
            file = self.files.get(parts[1])
            if file is None:
                raise self.refuse(f"No such File object: {parts[1]}", "id", status=404)
            if len(parts) == 2:
                return Answer(200, file["meta"])
            if parts[2] == "content":
                return Answer(200, file["content"], content_type="application/octet-stream")
        if method == "POST" and parts == ["batches"]:
            return self.create_batch(seen.body)
        if method == "GET" and parts == ["batches"]:
            if self.auto_advance:
                self.advance()
            return self.list_batches(seen.query)
        if parts[0] == "batches" and len(parts) >= 2:
            job = self.job(parts[1])
            if job is None:
                raise self.refuse(f"No such Batch object: {parts[1]}", "id", status=404)
            if method == "GET" and len(parts) == 2:
                if self.auto_advance:
                    self.advance(job.id)
                return Answer(200, self.batch_object(job))
            if method == "POST" and parts[2:] == ["cancel"]:
                return self.cancel(job)
        return self.no_route(seen)

    def new_file(self, filename: str, content: bytes, purpose: str) -> str:
        file_id = self.next_id("file-")
        self.files[file_id] = {"content": content, "meta": {
            "id": file_id, "object": "file", "bytes": len(content), "created_at": self.tick(), "filename": filename,
            "purpose": purpose, "status": "processed", "status_details": None, "expires_at": None}}
        return file_id

    def upload(self, fields: Any) -> Answer:
        if not isinstance(fields, dict):
            raise self.refuse("The request must be multipart/form-data with a file and a purpose.")
        for name in ("purpose", "file"):
            if name not in fields:
                raise self.refuse(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        purposes = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
        if fields["purpose"] not in purposes:
            raise self.refuse(f"Invalid value: '{fields['purpose']}'. Supported values are: {one_of(purposes)}.",
                              "purpose", "invalid_value")
        if not isinstance(fields["file"], tuple):
            raise self.refuse("'file' must be a file upload.", "file")
        filename, content = fields["file"]
        if fields["purpose"] == "batch" and not filename.endswith(".jsonl"):
            raise self.refuse("Invalid file format for Batch API. Must be .jsonl")
        return Answer(200, self.files[self.new_file(filename, content, fields["purpose"])]["meta"])

    def create_batch(self, body: Any) -> Answer:
        if not isinstance(body, dict):
            raise self.refuse("We could not parse the JSON body of your request.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if name not in body:
                raise self.refuse(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        for name, allowed in (("endpoint", "/v1/chat/completions"), ("completion_window", "24h")):
            if body[name] != allowed:
                raise self.refuse(f"Invalid value: '{body[name]}'. Supported values are: '{allowed}'.", name,
                                  "invalid_value")
        file = self.files.get(body["input_file_id"])
        if file is None:
            raise self.refuse(f"No such File object: {body['input_file_id']}", "input_file_id", status=404)
        lines, errors = read_input(file["content"].decode(errors="replace"), body["endpoint"])
        created = self.tick()
        job = Job(self.next_id("batch_"), [cid for cid, _ in lines], lines, "validating", created,
                  stamps={"created": created},
                  extra={"input_file_id": body["input_file_id"], "endpoint": body["endpoint"],
                         "completion_window": "24h", "metadata": body.get("metadata"), "errors": errors,
                         "output": [], "failed": []})
        self.batches.append(job)
        return Answer(200, self.batch_object(job))

    def cancel(self, job: Job) -> Answer:
        if job.state not in ("validating", "in_progress", "finalizing"):
            raise self.refuse(f"Cannot cancel a batch with status '{job.state}'.")
        job.state = "cancelling"
        job.stamps["cancelling"] = self.tick()
        return Answer(200, self.batch_object(job))

    def step(self, job: Job) -> None:
        if job.state == "validating":
            job.state = "failed" if job.extra["errors"] else "in_progress"
        elif job.state == "in_progress":
            self.run_lines(job, len(job.lines))
            job.state = "finalizing"
        elif job.state == "finalizing":
            self.write_files(job)
            job.state = "completed"
        elif job.state == "cancelling":
            self.write_files(job)
            job.state = "cancelled"
        job.stamps[job.state] = self.tick()

    def end_expired(self, job: Job, done: int) -> None:
        self.run_lines(job, done)
        for custom_id, _ in job.lines:
            if custom_id not in job.results:
                job.results[custom_id] = None
                job.extra["failed"].append({"id": self.next_id("batch_req_"), "custom_id": custom_id,
                                            "response": None,
                                            "error": {"code": "batch_expired", "message": EXPIRED_LINE}})
        self.write_files(job)
        job.state = "expired"
        job.stamps["expired"] = self.tick()

    def run_lines(self, job: Job, count: int) -> None:
        for custom_id, body in job.lines[:count]:
            if custom_id in job.results:
                continue
            answer = self.chat(body, job)
            job.results[custom_id] = answer.body
            line = {"id": self.next_id("batch_req_"), "custom_id": custom_id,
                    "response": {"status_code": answer.status, "request_id": self.next_id("req_"),
                                 "body": answer.body}, "error": None}
            job.extra["output" if answer.status == 200 else "failed"].append(line)

    def write_files(self, job: Job) -> None:
        for kind, key in (("output", "output_file_id"), ("failed", "error_file_id")):
            if job.extra[kind] and key not in job.extra:
                text = "".join(json.dumps(line) + "\n" for line in job.extra[kind])
                job.extra[key] = self.new_file(f"{job.id}_{kind}.jsonl", text.encode(), "batch_output")

    def batch_object(self, job: Job) -> dict[str, Any]:
        extra, stamps = job.extra, job.stamps
        errors = extra["errors"] if job.state == "failed" else None
        return {
            "id": job.id, "object": "batch", "endpoint": extra["endpoint"],
            "errors": {"object": "list", "data": errors} if errors else None,
            "input_file_id": extra["input_file_id"], "completion_window": "24h", "status": job.state,
            "output_file_id": extra.get("output_file_id"), "error_file_id": extra.get("error_file_id"),
            "created_at": job.created_at, "in_progress_at": stamps.get("in_progress"),
            "expires_at": job.created_at + 86_400, "finalizing_at": stamps.get("finalizing"),
            "completed_at": stamps.get("completed"), "failed_at": stamps.get("failed"),
            "expired_at": stamps.get("expired"), "cancelling_at": stamps.get("cancelling"),
            "cancelled_at": stamps.get("cancelled"),
            "request_counts": {"total": 0 if errors else len(job.lines), "completed": len(extra["output"]),
                               "failed": len(extra["failed"])},
            "metadata": extra["metadata"],
        }

    def list_batches(self, query: dict[str, str]) -> Answer:
        newest = [job for job in reversed(self.batches)]
        if "after" in query:
            ids = [job.id for job in newest]
            newest = newest[ids.index(query["after"]) + 1:] if query["after"] in ids else []
        limit = int(query.get("limit", 20))
        if not 1 <= limit <= 100:
            raise self.refuse(f"Invalid 'limit': expected a value between 1 and 100, but got {limit} instead.",
                              "limit", "invalid_value")
        page = newest[:limit]
        return Answer(200, {"object": "list", "data": [self.batch_object(job) for job in page],
                            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None,
                            "has_more": len(newest) > limit})


def form(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body as {name: text, or (filename, bytes) for a file}."""
    message = BytesParser(policy=policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        payload = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        fields[str(name)] = (filename, payload) if filename is not None else payload.decode()
    return fields


def read_input(text: str, endpoint: str) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """A batch input file's (custom_id, body) lines, and the errors that fail its validation."""
    lines: list[tuple[str, Any]] = []
    errors: list[dict[str, Any]] = []
    models: set[str] = set()

    def fail(number: int, code: str, message: str, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "param": param, "line": number})

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            fail(number, "invalid_json_line", "This line is not parseable as valid JSON.")
            continue
        if not isinstance(entry, dict):
            fail(number, "invalid_json_line", "This line is not a JSON object.")
            continue
        custom_id = entry.get("custom_id")
        if not isinstance(custom_id, str):
            fail(number, "missing_required_parameter", "Missing required parameter: 'custom_id'.", "custom_id")
            continue
        if custom_id in (cid for cid, _ in lines):
            fail(number, "duplicate_custom_id", "The custom_id for this request is a duplicate of another request. "
                                                "The custom_id parameter must be unique for each request in a batch.",
                 "custom_id")
        if entry.get("method") != "POST":
            fail(number, "invalid_method", "The method of this request must be POST.", "method")
        if entry.get("url") != endpoint:
            fail(number, "mismatched_endpoint", f"The url of this request does not match the batch's endpoint "
                                                f"{endpoint}.", "url")
        body = entry.get("body")
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            models.add(body["model"])
            if len(models) > 1:
                fail(number, "mismatched_model", "The model of this request differs from the model of the batch's "
                                                 "other requests: a batch holds one model.", "body.model")
        lines.append((custom_id, body))
    if not lines and not errors:
        fail(1, "empty_file", "The input file has no requests.")
    return lines, errors


def token_logprobs(content: str, top: int) -> list[dict[str, Any]]:
    """Deterministic log-probabilities, one entry per word of `content`."""
    entries = []
    for i, word in enumerate(content.split()):
        logprob = -0.01 * (i % 7)
        alternatives = [{"token": word, "logprob": logprob, "bytes": list(word.encode())}]
        alternatives += [{"token": f"{word}~{k}", "logprob": logprob - k, "bytes": list(f"{word}~{k}".encode())}
                         for k in range(1, top)]
        entries.append({"token": word, "logprob": logprob, "bytes": list(word.encode()),
                        "top_logprobs": alternatives[:top]})
    return entries
