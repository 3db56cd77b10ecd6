"""A stand-in for vLLM's OpenAI-compatible server (`vllm serve`): the OpenAI stand-in's chat
completions with vLLM's own ways.

Invariants (beyond the OpenAI stand-in's):
- Errors have vLLM's shape {"object": "error", message, type ("BadRequestError",
  "NotFoundError"), param: null, code: <status>}; a wrong key gets {"error":
  "Unauthorized"}; an unknown path FastAPI's {"detail": "Not Found"}. No Files or Batch API.
- Fields vLLM does not know are ignored, not refused; vLLM's own (top_k, min_p,
  repetition_penalty) are accepted. No reasoning-model refusals: max_tokens is fine.
- The reasoning model (`reasoning_model`) answers with its reasoning in the message's
  `reasoning_content` and `reasoning`; its words count in completion_tokens.
- Prefix caching is on: prompt_tokens_details.cached_tokens is the longest prompt prefix
  (in tokens) seen before.
"""

from __future__ import annotations

from typing import Any

from .base import Answer, Seen
from .openai import OpenAIStandin

REASONING = "The question adds 3 and 4. That makes 7."
TYPES = {400: "BadRequestError", 401: "UnauthorizedError", 404: "NotFoundError"}


class VLLMStandin(OpenAIStandin):
    batch_api = False
    caches_prefixes = True

    def __init__(self, *, reasoning_model: str = "Qwen/Qwen3-8B", **options: Any) -> None:
        super().__init__(**options)
        self.reasoning_model = reasoning_model

    def default_models(self) -> dict[str, Any]:
        return {"Qwen/Qwen2.5-1.5B-Instruct": 32_768, "Qwen/Qwen3-8B": 40_960}

    def error(self, status: int, message: str, type: str = "", param: str | None = None,
              code: str | None = None) -> Answer:
        return Answer(status, {"object": "error", "message": message, "type": TYPES.get(status, "InternalServerError"),
                               "param": None, "code": status})

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        if self.key and headers.get("authorization") != f"Bearer {self.key}":
            return Answer(401, {"error": "Unauthorized"})
        return None

    def no_route(self, seen: Seen) -> Answer:
        return Answer(404, {"detail": "Not Found"})

    def unknown_model(self, model: str) -> Answer:
        return self.error(404, f"The model `{model}` does not exist.")

    def check_fields(self, body: dict[str, Any]) -> None:
        pass  # vLLM logs the fields it does not know and goes on

    def check_params(self, model: str, body: dict[str, Any]) -> None:
        for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1), ("n", 1, 128), ("top_logprobs", 0, 20)):
            self.check_range(body, name, low, high)

    def reasoning_tokens(self, model: str, body: dict[str, Any]) -> int:
        return len(REASONING.split()) if model == self.reasoning_model else 0

    def message(self, content: str, reasoning: int) -> dict[str, Any]:
        thought = REASONING if reasoning else None
        return {"role": "assistant", "content": content, "reasoning_content": thought, "reasoning": thought,
                "tool_calls": []}

    def usage_details(self, cached: int, reasoning: int) -> dict[str, Any]:
        return {"prompt_tokens_details": {"cached_tokens": cached}}

    def extra_fields(self) -> dict[str, Any]:
        return {"system_fingerprint": None, "prompt_logprobs": None}
