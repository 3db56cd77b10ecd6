"""Anthropic's Messages API (POST /v1/messages), spoken without its SDK.

What a call becomes:
- System messages are joined into the top-level `system`; the rest alternate user /
  assistant as the API requires: consecutive messages of one role are joined (a blank line
  between them), an empty one (which the API refuses) is left out, and a conversation that
  opens with the assistant gets an opening user turn of its own ("(start)"), said in a
  notice.
- `max_tokens` is the call's; with thinking it is raised by the thinking budget, so the
  answer keeps the room the call asked for (`sent` shows both numbers).
- A reasoning effort turns thinking on. Claude models before 4.6 take a fixed budget
  (`thinking: {type: enabled, budget_tokens}`: minimal 1024, low 2048, medium 8192,
  high 24576); 4.6 and later take adaptive thinking with an effort (`thinking: {type:
  adaptive}`, `output_config: {effort}`, minimal sent as low), and 4.7 and later refuse
  the budget form.
- Sampling: the temperature is sent (0 is greedy; above 1, the API's ceiling, it is sent
  as 1), and top_p only when no temperature is (Anthropic takes one of the two, and its
  newer models refuse both). With thinking on, Anthropic samples at its own temperature
  (top_p from 0.95 to 1 still taken), and Claude 4.7 and later always do: what is left
  out is said in a notice ("asks for greedy decoding; ...").
- No n (one sample per request), no seed; a call asking log probabilities is refused in
  one line (the Messages API returns none).

What an answer becomes: text blocks joined are the text; thinking blocks are the
reasoning (a redacted one is "[redacted]"); stop_reason end_turn / stop_sequence are
"stop", max_tokens "length". prompt_tokens is input_tokens plus the cache's reads and
writes (cached_prompt_tokens: its reads); completion_tokens is output_tokens, which
includes the thinking. Anthropic does not report thinking tokens apart, so
reasoning_tokens stays 0 and the thinking text is what the record keeps.

A 529 (overloaded) or 429 is retried by the transport, honouring retry-after.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ...errors import ContextOverflow, VeriloopError
from ...records import Message
from ..base import Completion, GenParams
from ._wire import THINKING_BUDGETS, error_of, excerpt, key_refused, shown, turns, whole
from .base import Damaged, Provider, Request, Supports, WrongShape

API_VERSION = "2023-06-01"
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
ADAPTIVE_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
# Claude versions from which thinking is adaptive, and from which the model samples only
# at its defaults (a temperature or top_p is a 400 even without thinking).
ADAPTIVE_FROM = (4, 6)
FIXED_SAMPLING_FROM = (4, 7)
# Families named without a number that are of the newest kind.
NEWEST_UNNUMBERED = ("mythos",)
OPENING_TURN = "(start)"


def claude_version(model: str) -> tuple[int, int] | None:
    """(major, minor) of a Claude model id: claude-sonnet-4-5-20250929 is (4, 5),
    claude-3-7-sonnet-20250219 (3, 7), claude-opus-4-20250514 (4, 0); a date is no
    version. None when the id has no number."""
    parts = [p for p in re.split(r"[-.@:_/]", model.lower()) if p]
    for i, part in enumerate(parts):
        if part.isdigit() and len(part) <= 2:
            following = parts[i + 1] if i + 1 < len(parts) else ""
            minor = int(following) if following.isdigit() and len(following) <= 2 else 0
            return int(part), minor
    return None


class AnthropicProvider(Provider):
    prefix = "anthropic"
    title = "Anthropic Messages API"
    key_variables = ("ANTHROPIC_API_KEY",)
    base_url_variables = ("ANTHROPIC_BASE_URL",)
    default_base_url: ClassVar[str | None] = "https://api.anthropic.com"
    supports = Supports(temperature=True, seed=False, n=False, logprobs=False, reasoning=True, batch=True)
    answer_shape = '{"type": "message", "content": [{"type": "text", "text": ...}], ...}'
    request_name = "a Messages API request"
    answer_name = "a message"
    api_name = "an Anthropic Messages API"
    path = "/v1/messages"

    def __init__(self, model: str, reasoning_effort: str | None = None) -> None:
        super().__init__(model, reasoning_effort)
        version = claude_version(model)
        newest = version is None and any(name in model.lower() for name in NEWEST_UNNUMBERED)
        self.adaptive = newest or (version is not None and version >= ADAPTIVE_FROM)
        self.fixed_sampling = newest or (version is not None and version >= FIXED_SAMPLING_FROM)

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        if params.logprobs:
            raise VeriloopError(
                f"{self.model!r} cannot return log probabilities (the Anthropic Messages API gives none); "
                "run this strategy or study on a model that does (openai/, vllm/, google/, ollama/, a local model)"
            )
        notices: list[str] = []
        system, turns = self._turns(messages, notices)
        options: dict[str, Any] = {"model": self.model, "max_tokens": params.max_tokens}
        effort = self.reasoning_effort
        if effort is not None:
            options["max_tokens"] = params.max_tokens + THINKING_BUDGETS[effort]
            if self.adaptive:
                options["thinking"] = {"type": "adaptive"}
                options["output_config"] = {"effort": ADAPTIVE_EFFORT[effort]}
            else:
                options["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGETS[effort]}
        options.update(self._sampling(params, notices))
        if params.stop:
            options["stop_sequences"] = list(params.stop)
        body = dict(options)
        if system is not None:
            body["system"] = system
        body["messages"] = turns
        return Request(path=self.path, body=body, sent=options, notices=notices)

    def _turns(self, messages: list[Message], notices: list[str]) -> tuple[str | None, list[dict[str, str]]]:
        system, merged = turns(messages)
        if not merged or merged[0][0] != "user":
            merged.insert(0, ("user", OPENING_TURN))
            notices.append(f"a conversation that opens with the assistant (or is empty) is sent to {self.model} "
                           f"after a user turn {OPENING_TURN!r}: the Messages API opens with the user")
        if merged[-1][0] == "assistant":  # the API refuses a final assistant turn ending in whitespace
            merged[-1] = ("assistant", merged[-1][1].rstrip())
        return system, [{"role": role, "content": text} for role, text in merged]

    def _sampling(self, params: GenParams, notices: list[str]) -> dict[str, Any]:
        """The sampling parameters the model takes, with a notice for each left out."""
        thinking = self.reasoning_effort is not None
        why = (f"{self.model} samples only at its default temperature" if self.fixed_sampling
               else f"with thinking on, {self.model} samples at its default temperature")
        if self.fixed_sampling or thinking:
            if params.temperature == 0:
                notices.append(f"asks for greedy decoding; {why}")
            elif params.temperature != 1:
                notices.append(f"asks for temperature {params.temperature:g}; {why}")
            if params.top_p >= 1:
                return {}
            if self.fixed_sampling:
                notices.append(f"asks for top_p {params.top_p:g}; {self.model} samples only at its default top_p")
                return {}
            if params.top_p < 0.95:
                notices.append(f"asks for top_p {params.top_p:g}; with thinking on, Anthropic takes top_p from "
                               "0.95 to 1: sent 0.95")
                return {"top_p": 0.95}
            return {"top_p": params.top_p}
        temperature = params.temperature
        if temperature > 1:
            notices.append(f"asks for temperature {temperature:g}; Anthropic's temperatures end at 1: sent 1")
            temperature = 1.0
        if params.top_p < 1:
            notices.append(f"asks for top_p {params.top_p:g} with a temperature; Anthropic takes one of the two: "
                           "sent the temperature only")
        return {"temperature": temperature}

    def limits(self) -> list[str]:
        if self.fixed_sampling:
            return [f"{self.model} samples only at its default temperature and top_p: every call is sampled so "
                    "(a greedy strategy's calls too)"]
        if self.reasoning_effort is not None:
            return [f"{self.model} with thinking on samples at its default temperature: every call is sampled so "
                    "(a greedy strategy's calls too)"]
        return []

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        if not isinstance(data, dict) or "content" not in data:
            if isinstance(data, dict) and data.get("type") == "error":
                kind, message = error_of_value(data)
                if kind in ("overloaded_error", "api_error"):
                    raise Damaged(f"an error in a 200 answer ({kind}: {excerpt(message, 80)})")
                raise VeriloopError(f"Anthropic answered with an error ({kind}: {excerpt(message, 160)})")
            raise WrongShape(self.answer_shape)
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise Damaged(f"a message whose content is not a list ({shown(blocks, 60)})")
        texts: list[str] = []
        thoughts: list[str] = []
        for block in blocks:
            block_type = block.get("type") if isinstance(block, dict) else None
            if block_type == "text":
                texts.append(_text(block, "text"))
            elif block_type == "thinking":
                thoughts.append(_text(block, "thinking"))
            elif block_type == "redacted_thinking":
                thoughts.append("[redacted]")
            elif not isinstance(block, dict):
                raise Damaged(f"a content block that is not an object ({shown(block, 60)})")
        stop = data.get("stop_reason")
        usage = data.get("usage")
        cached = whole(usage, "cache_read_input_tokens")
        completion = Completion(
            text="".join(texts),
            finish_reason=FINISH.get(stop, stop) if isinstance(stop, str) and stop else "stop",
            prompt_tokens=whole(usage, "input_tokens") + cached + whole(usage, "cache_creation_input_tokens"),
            completion_tokens=whole(usage, "output_tokens"),
            reasoning="\n\n".join(thoughts) if thoughts else None,
            cached_prompt_tokens=cached,
        )
        return [completion]

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        kind, message = error_of(body)
        if kind == "authentication_error" or status == 401:
            return key_refused("Anthropic", self.key_variables, message)
        if kind == "permission_error" or status == 403:
            return VeriloopError(f"Anthropic forbade the request for {self.model!r} ({excerpt(message, 160)}); "
                                 "give a key whose workspace may use this model, or choose one it may")
        if kind == "not_found_error" or status == 404:
            if "model" not in message.lower():
                return None  # a path the server does not serve: the transport names the URL
            return VeriloopError(f"Anthropic does not know the model {self.model!r} ({excerpt(message, 120)}); "
                                 "give an id it lists, e.g. anthropic/claude-sonnet-4-5")
        if kind == "request_too_large" or status == 413:
            return ContextOverflow(f"the prompt does not fit a request to {self.model} ({excerpt(message, 120)})")
        lowered = message.lower()
        if "prompt is too long" in lowered or "exceed context limit" in lowered:
            return ContextOverflow(f"prompt does not fit the context of {self.model} ({excerpt(message, 120)})")
        if "thinking" in lowered and self.reasoning_effort is not None:
            return VeriloopError(f"Anthropic refused thinking for {self.model!r} ({excerpt(message, 160)}); "
                                 "remove reasoning_effort for this model, or choose one that thinks")
        if kind == "invalid_request_error" or status == 400:
            return VeriloopError(f"Anthropic rejected the request for {self.model!r}: {excerpt(message, 200)}; "
                                 "change what it names, then re-run")
        return None


def error_of_value(data: dict[str, Any]) -> tuple[str, str]:
    error = data.get("error")
    error = error if isinstance(error, dict) else {}
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else "", message if isinstance(message, str) else "")


def _text(block: dict[str, Any], field: str) -> str:
    value = block.get(field)
    if not isinstance(value, str):
        raise Damaged(f"a {block.get('type')} block whose {field} is not text ({shown(value, 60)})")
    return value
