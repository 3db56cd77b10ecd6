"""A stand-in for Ollama's native chat API (/api/chat, /api/tags), with Ollama's documented
rules and error bodies ({"error": "..."}).

Invariants (beyond the base's):
- No key: Authorization is ignored. `base_url` is the root (http://host:port).
- `stream` defaults to TRUE: without stream:false the answer is NDJSON chunks (a word a
  chunk, thinking first) and a last chunk with done:true and the counts.
- A model name without a tag means ":latest". `think` (true/false, or "low"|"medium"|
  "high") on a model that cannot think is refused; with it the message carries
  `thinking`, whose words count in eval_count and in num_predict.
- A prompt over num_ctx (the request's, else the stand-in's `num_ctx`, as a server's
  OLLAMA_CONTEXT_LENGTH sets it; default DEFAULT_NUM_CTX) is not refused: Ollama keeps
  its end and evaluates num_ctx tokens (counted in `truncated`). With prefix caching on,
  prompt_eval_count counts only the tokens evaluated anew, and is left out when none were.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from .base import Answer, Seen, Standin, cut_at_stop, first_words, prompt_words

DEFAULT_NUM_CTX = 4096
THINKING = "I add 3 and 4 to get 7."


class OllamaStandin(Standin):
    key_headers = ("authorization",)
    request_id_header = "x-standin-request-id"

    def __init__(self, *, num_ctx: int = DEFAULT_NUM_CTX, **options: Any) -> None:
        super().__init__(**options)
        self.num_ctx = num_ctx
        self.truncated = 0

    def default_models(self) -> dict[str, Any]:
        """Model name -> thinks."""
        return {"llama3.2:latest": False, "qwen3:latest": True, "gpt-oss:20b": True}

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        return None

    def route(self, seen: Seen) -> Answer:
        if seen.method == "POST" and seen.path == "/api/chat":
            return self.chat(seen.body)
        if seen.method == "GET" and seen.path == "/api/tags":
            return Answer(200, {"models": [
                {"name": m, "model": m, "modified_at": "2025-06-01T00:00:00Z", "size": 2_019_393_189,
                 "digest": f"{i:064x}", "details": {"format": "gguf", "family": m.split(":")[0],
                                                    "parameter_size": "3B", "quantization_level": "Q4_K_M"}}
                for i, m in enumerate(self.models)]})
        return Answer(404, "404 page not found", content_type="text/plain")

    def chat(self, body: Any) -> Answer:
        if not isinstance(body, dict):
            return Answer(400, {"error": "invalid request body"})
        model = body.get("model")
        if not model:
            return Answer(400, {"error": "model is required"})
        name = model if ":" in model else f"{model}:latest"
        if name not in self.models:
            return Answer(404, {"error": f'model "{model}" not found, try pulling it first'})
        think = body.get("think")
        if think and not self.models[name]:
            return Answer(400, {"error": f'"{model}" does not support thinking'})
        options = body.get("options") or {}
        messages = body.get("messages") or []
        tokens = prompt_words([m.get("content") for m in messages])
        num_ctx = options.get("num_ctx", self.num_ctx)
        if len(tokens) > num_ctx:
            self.truncated += 1
            tokens = tokens[-num_ctx:]
        evaluated = len(tokens) - self.cached(tokens)
        stops = options.get("stop") or []
        text, _ = cut_at_stop(self.reply(messages, 0), [stops] if isinstance(stops, str) else stops)
        thinking = THINKING if think else ""
        limit = options.get("num_predict", -1)
        reason = "stop"
        if limit >= 0 and len(thinking.split()) + len(text.split()) > limit:
            thinking = first_words(thinking, limit)
            text, reason = first_words(text, limit - len(thinking.split())), "length"
        generated = len(thinking.split()) + len(text.split())
        self.bill(evaluated, generated)
        created = datetime.fromtimestamp(self.tick(), UTC).isoformat().replace("+00:00", "Z")
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if think:
            message["thinking"] = thinking
        last: dict[str, Any] = {"model": model, "created_at": created, "message": message, "done": True,
                                "done_reason": reason, "total_duration": 5_000_000, "load_duration": 1_000_000}
        if evaluated:
            last.update(prompt_eval_count=evaluated, prompt_eval_duration=1_000_000)
        last.update(eval_count=generated, eval_duration=3_000_000)
        if body.get("stream", True) is False:
            return Answer(200, last)
        return Answer(200, "".join(json.dumps(chunk) + "\n" for chunk in chunks(last, thinking, text)),
                      content_type="application/x-ndjson")


def chunks(last: dict[str, Any], thinking: str, text: str) -> list[dict[str, Any]]:
    """The stream: one chunk a word (thinking first), then the last chunk with empty content."""
    head = {"model": last["model"], "created_at": last["created_at"], "done": False}
    out = [{**head, "message": {"role": "assistant", "content": "", "thinking": word + " "}}
           for word in thinking.split()]
    out += [{**head, "message": {"role": "assistant", "content": word + " "}} for word in text.split()]
    final_message = {"role": "assistant", "content": ""}
    return out + [{**last, "message": final_message}]
