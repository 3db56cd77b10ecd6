"""A stand-in for Anthropic's Messages API and Message Batches, with Anthropic's documented
rules and error bodies ({"type": "error", "error": {type, message}, "request_id"}, the id
also in the request-id header).

Invariants (beyond the base's):
- A request needs the x-api-key and anthropic-version headers; the body needs model,
  max_tokens and messages, and any other field than the documented ones is refused
  ("<field>: Extra inputs are not permitted"): there is no n, seed or logprobs.
- Messages take the roles user and assistant only; the system prompt is the top-level
  `system`. One request is one sample: reply(messages, 0).
- With thinking enabled (budget_tokens >= 1024 and < max_tokens) a thinking block comes
  first; its THINKING_TOKENS are part of output_tokens, and temperature other than 1,
  top_k, and top_p below 0.95 are refused.
- A batch request's params are checked when the batch is processed, not when it is
  created (as Anthropic documents): a bad one ends as an `errored` result. Batch states:
  in_progress -> ended, or in_progress -> canceling -> ended; results_url only once ended.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from .base import Answer, Job, Seen, Standin, cut_at_stop, first_words, prompt_words

VERSIONS = ("2023-06-01", "2023-01-01")
FIELDS = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences", "stream",
          "thinking", "metadata", "tools", "tool_choice", "service_tier", "container", "mcp_servers"}
THINKING = "The user asks for a sum. I add the two numbers and check the result once more."
THINKING_TOKENS = 48  # what the (summarised) thinking above is billed as
DOCS = "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def error_body(type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def rate_limited(retry_after: int = 1, limit: int = 50) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A 429 fault with the headers Anthropic sends with it."""
    return (429, error_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            {"retry-after": str(retry_after), "anthropic-ratelimit-requests-limit": str(limit),
             "anthropic-ratelimit-requests-remaining": "0",
             "anthropic-ratelimit-requests-reset": "2025-06-15T12:00:00Z"})


OVERLOADED = (529, error_body("overloaded_error", "Overloaded"))
API_ERROR = (500, error_body("api_error", "Internal server error"))
FORBIDDEN = (403, error_body("permission_error", "Your API key does not have permission to use the specified "
                                                 "resource."))


def stamp(seconds: int | None) -> str | None:
    """RFC 3339, as Anthropic writes times."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class Refusal(Exception):
    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.type, self.message = status, type, message


def invalid(message: str) -> Refusal:
    return Refusal(400, "invalid_request_error", message)


class AnthropicStandin(Standin):
    version_path = ""  # the SDKs' base URL has no version: paths are /v1/messages
    key_headers = ("x-api-key", "authorization")
    request_id_header = "request-id"
    terminal = ("ended",)
    max_request_bytes = 32_000_000

    def default_models(self) -> dict[str, Any]:
        """Model id -> (context window, max output tokens, thinks)."""
        return {"claude-sonnet-4-5": (200_000, 64_000, True), "claude-opus-4-1": (200_000, 32_000, True),
                "claude-3-5-haiku-latest": (200_000, 8_192, False)}

    def error(self, status: int, type: str, message: str) -> Answer:
        return Answer(status, {**error_body(type, message), "request_id": self.request_id})

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        if "x-api-key" not in headers:
            return self.error(401, "authentication_error", "x-api-key header is required")
        if headers["x-api-key"] != self.key:
            return self.error(401, "authentication_error", "invalid x-api-key")
        version = headers.get("anthropic-version")
        if version is None:
            return self.error(400, "invalid_request_error", "anthropic-version: header is required")
        if version not in VERSIONS:
            return self.error(400, "invalid_request_error", f'anthropic-version: "{version}" is not a valid version')
        return None

    def route(self, seen: Seen) -> Answer:
        if len(seen.raw) > self.max_request_bytes:
            return self.error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.")
        parts = seen.path.strip("/").split("/")
        try:
            if seen.method == "POST" and parts == ["v1", "messages"]:
                return Answer(200, self.create(seen.body, None))
            if parts[:3] == ["v1", "messages", "batches"]:
                return self.batch_route(seen.method, parts[3:], seen)
            if seen.method == "GET" and parts == ["v1", "models"]:
                return Answer(200, {"data": [{"type": "model", "id": m, "display_name": m,
                                              "created_at": stamp(1_700_000_000)} for m in self.models],
                                    "has_more": False, "first_id": None, "last_id": None})
        except Refusal as refusal:
            return self.error(refusal.status, refusal.type, refusal.message)
        return self.error(404, "not_found_error", "Not found")

    # ------------------------------------------------------------ messages

    def create(self, body: Any, job: Job | None) -> dict[str, Any]:
        """The Message for `body`, or raises the Refusal Anthropic would answer."""
        if not isinstance(body, dict):
            raise invalid("There was an error parsing the body of your request as JSON.")
        for name in body:
            if name not in FIELDS:
                raise invalid(f"{name}: Extra inputs are not permitted")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                raise invalid(f"{name}: Field required")
        model, max_tokens, messages = body["model"], body["max_tokens"], body["messages"]
        if model not in self.models:
            raise Refusal(404, "not_found_error", f"model: {model}")
        window, max_output, thinks = self.models[model]
        if not messages:
            raise invalid("messages: at least one message is required")
        for i, message in enumerate(messages):
            role = message.get("role")
            if role == "system":
                raise invalid('messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                              'parameter, not "system" as an input message role.')
            if role not in ("user", "assistant"):
                raise invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        temperature = body.get("temperature")
        if temperature is not None and temperature > 1:
            raise invalid("temperature: Input should be less than or equal to 1")
        if temperature is not None and temperature < 0:
            raise invalid("temperature: Input should be greater than or equal to 0")
        thinking = (body.get("thinking") or {}).get("type") == "enabled"
        if thinking:
            self.check_thinking(model, thinks, body)
        if max_tokens > max_output:
            raise invalid(f"max_tokens: {max_tokens} > {max_output}, which is the maximum allowed number of output "
                          f"tokens for {model}")
        system = body.get("system")
        prompt = len(prompt_words(([system] if system else []) + [m.get("content") for m in messages]))
        if prompt > window:
            raise invalid(f"prompt is too long: {prompt} tokens > {window} maximum")
        if prompt + max_tokens > window:
            raise invalid(f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > {window}, "
                          "decrease input length or `max_tokens` and try again")
        text, stop = cut_at_stop(self.reply(messages, 0), body.get("stop_sequences") or [])
        thought = THINKING_TOKENS if thinking else 0
        reason = "stop_sequence" if stop is not None else "end_turn"
        if thought + len(text.split()) > max_tokens:
            text, reason, stop = first_words(text, max_tokens - thought), "max_tokens", None
        output = thought + len(text.split())
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": THINKING, "signature": f"sig-{self.request_id}"})
        content.append({"type": "text", "text": text})
        self.bill(prompt, output, job)
        return {"id": self.next_id("msg_standin_"), "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": reason, "stop_sequence": stop,
                "usage": {"input_tokens": prompt, "output_tokens": output, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "service_tier": "standard"}}

    def check_thinking(self, model: str, thinks: bool, body: dict[str, Any]) -> None:
        if not thinks:
            raise invalid(f"'{model}' does not support thinking.")
        budget = body["thinking"].get("budget_tokens")
        if budget is None:
            raise invalid("thinking.enabled.budget_tokens: Field required")
        if budget < 1024:
            raise invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if body["max_tokens"] <= budget:
            raise invalid(f"`max_tokens` must be greater than `thinking.budget_tokens`. {DOCS}"
                          "#max-tokens-and-context-window-size")
        considerations = f"{DOCS}#important-considerations-when-using-extended-thinking"
        if body.get("temperature", 1) != 1:
            raise invalid(f"`temperature` may only be set to 1 when thinking is enabled. {considerations}")
        if body.get("top_k") is not None:
            raise invalid(f"`top_k` must be unset when thinking is enabled. {considerations}")
        if body.get("top_p") is not None and body["top_p"] < 0.95:
            raise invalid(f"`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. "
                          f"{considerations}")

    # ------------------------------------------------------------ message batches

    def batch_route(self, method: str, rest: list[str], seen: Seen) -> Answer:
        if method == "POST" and not rest:
            return Answer(200, self.create_batch(seen.body))
        if method == "GET" and not rest:
            if self.auto_advance:
                self.advance()
            return self.list_batches(seen.query)
        job = self.job(rest[0])
        if job is None:
            raise Refusal(404, "not_found_error", f"message_batch: {rest[0]} not found")
        if method == "GET" and len(rest) == 1:
            if self.auto_advance:
                self.advance(job.id)
            return Answer(200, self.batch_object(job))
        if method == "POST" and rest[1:] == ["cancel"]:
            if job.state != "in_progress":
                raise invalid(f"Batch {job.id} cannot be canceled: its processing status is {job.state}.")
            job.state = "canceling"
            job.stamps["cancel_initiated"] = self.tick()
            return Answer(200, self.batch_object(job))
        if method == "GET" and rest[1:] == ["results"]:
            if job.state != "ended":
                raise Refusal(404, "not_found_error", f"Results for message_batch {job.id} are not available yet.")
            text = "".join(json.dumps({"custom_id": cid, "result": job.results[cid]}) + "\n" for cid in job.custom_ids)
            return Answer(200, text, content_type="application/x-jsonl")
        raise Refusal(404, "not_found_error", "Not found")

    def create_batch(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or "requests" not in body:
            raise invalid("requests: Field required")
        requests = body["requests"]
        if not requests:
            raise invalid("requests: List should have at least 1 item after validation, not 0")
        seen: set[str] = set()
        for i, request in enumerate(requests):
            custom_id = request.get("custom_id")
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                raise invalid(f"requests.{i}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'")
            if custom_id in seen:
                raise invalid(f"requests: custom_id values must be unique within a batch; {custom_id!r} repeats.")
            seen.add(custom_id)
            if "params" not in request:
                raise invalid(f"requests.{i}.params: Field required")
        created = self.tick()
        job = Job(self.next_id("msgbatch_"), [r["custom_id"] for r in requests],
                  [(r["custom_id"], r["params"]) for r in requests], "in_progress", created)
        self.batches.append(job)
        return self.batch_object(job)

    def step(self, job: Job) -> None:
        self.run_lines(job, len(job.lines) if job.state == "in_progress" else 0)
        self.end(job, {"type": "canceled"})

    def end_expired(self, job: Job, done: int) -> None:
        self.run_lines(job, done)
        self.end(job, {"type": "expired"})

    def end(self, job: Job, rest: dict[str, Any]) -> None:
        for custom_id in job.custom_ids:
            job.results.setdefault(custom_id, rest)
        job.state = "ended"
        job.stamps["ended"] = self.tick()

    def run_lines(self, job: Job, count: int) -> None:
        for custom_id, params in job.lines[:count]:
            try:
                job.results[custom_id] = {"type": "succeeded", "message": self.create(params, job)}
            except Refusal as refusal:
                job.results[custom_id] = {"type": "errored", "error": error_body(refusal.type, refusal.message)}

    def batch_object(self, job: Job) -> dict[str, Any]:
        kinds = [r["type"] for r in job.results.values()]
        counts = {"processing": len(job.lines) - len(kinds)}
        counts.update({kind: kinds.count(kind) for kind in ("succeeded", "errored", "canceled", "expired")})
        ended = job.state == "ended"
        return {"id": job.id, "type": "message_batch", "processing_status": job.state, "request_counts": counts,
                "ended_at": stamp(job.stamps.get("ended")), "created_at": stamp(job.created_at),
                "expires_at": stamp(job.created_at + 86_400), "archived_at": None,
                "cancel_initiated_at": stamp(job.stamps.get("cancel_initiated")),
                "results_url": f"{self.root}/v1/messages/batches/{job.id}/results" if ended else None}

    def list_batches(self, query: dict[str, str]) -> Answer:
        newest = list(reversed(self.batches))
        ids = [job.id for job in newest]
        if "after_id" in query:
            newest = newest[ids.index(query["after_id"]) + 1:] if query["after_id"] in ids else []
        if "before_id" in query:
            newest = newest[:ids.index(query["before_id"])] if query["before_id"] in ids else []
        limit = int(query.get("limit", 20))
        if not 1 <= limit <= 1000:
            raise invalid("limit: Input should be less than or equal to 1000" if limit > 1000 else
                          "limit: Input should be greater than or equal to 1")
        page = newest[:limit]
        return Answer(200, {"data": [self.batch_object(job) for job in page], "has_more": len(newest) > limit,
                            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None})
