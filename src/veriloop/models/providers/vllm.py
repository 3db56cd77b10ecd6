"""vLLM's OpenAI-compatible server, with what it takes beyond OpenAI's own API.

It is OpenAI's chat completions (providers/openai.py) without OpenAI's reasoning-model
rules (a vLLM model takes temperature, top_p and stop whatever its name), and with:
- `n` samples in one request (the prompt prefilled once), `seed` (the first sample's),
  `logprobs`;
- a reasoning effort sent both ways vLLM's chat templates read one: `reasoning_effort`
  (gpt-oss: low, medium or high; minimal is sent as low, the least it takes) and
  `chat_template_kwargs: {enable_thinking: true}` (Qwen3, DeepSeek-R1 and the like); a
  template ignores what it does not use. The reasoning comes back in
  `message.reasoning_content` (or `message.reasoning`) and is recorded;
- prefix caching: `usage.prompt_tokens_details.cached_tokens` (reported when the server
  runs with --enable-prompt-tokens-details) is the cached prompt tokens.

There is no public endpoint: the base URL is required (--base-url, VLLM_BASE_URL); a key
only when the server was started with --api-key (VLLM_API_KEY).

Errors come as {"object": "error", "message": ..., "type": ..., "code": ...} (older
servers) or {"error": {"message": ...}}: a prompt longer than the model's maximum context
length is a ContextOverflow, an unknown model names GET /v1/models.
"""

from __future__ import annotations

from typing import Any

from ...errors import ContextOverflow, VeriloopError
from ...records import Message
from ..base import GenParams
from ._wire import error_of, excerpt, key_refused
from .base import Request, Supports
from .openai import OpenAIProvider

# The levels gpt-oss's template takes; vLLM refuses any other.
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


class VLLMProvider(OpenAIProvider):
    prefix = "vllm"
    title = "vLLM"
    key_variables = ("VLLM_API_KEY",)
    base_url_variables = ("VLLM_BASE_URL",)
    default_base_url = None  # no public endpoint: the user gives the server's
    supports = Supports(temperature=True, seed=True, n=True, logprobs=True, reasoning=True, batch=False)
    api_name = "a vLLM server (OpenAI-compatible, under /v1)"

    @property
    def reasoning(self) -> bool:
        return False  # OpenAI's reasoning-model rules are OpenAI's: a vLLM model takes every parameter

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        request = super().request(messages, params, first, count)
        if self.reasoning_effort is not None:
            extra: dict[str, Any] = {"reasoning_effort": EFFORTS[self.reasoning_effort],
                                     "chat_template_kwargs": {"enable_thinking": True}}
            request.body.update(extra)
            request.sent.update(extra)
        return request

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        _, message = error_of(body)
        lowered = message.lower()
        if "maximum context length" in lowered or ("context length" in lowered and "exceed" in lowered):
            return ContextOverflow(f"prompt does not fit the context of {self.model} ({excerpt(message, 160)})")
        if status == 401:
            return key_refused("The vLLM server", self.key_variables, message)
        if status == 404 and "model" in lowered:
            return VeriloopError(f"the vLLM server does not serve the model {self.model!r} ({excerpt(message, 120)}); "
                                 "give the name GET /v1/models lists (its --served-model-name)")
        return None
