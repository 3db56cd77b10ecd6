"""OpenAI's chat completions: OpenAI itself and every server that speaks its format
(llama.cpp's server, vLLM, SGLang, LM Studio, hosted gateways).

Reasoning models (OpenAI's o-series and the gpt-5 family, by name) refuse what other chat
models take, so their requests differ:
- `max_completion_tokens` instead of `max_tokens` (their reasoning counts against it);
- no `temperature` or `top_p` other than the default 1: a call asking for another (every
  greedy strategy asks for 0) is sent without them and sampled at the model's default,
  said once (`Request.notices`, and `limits()` for the run's config.json);
- no `stop`: the reply is cut at the first stop string here instead, as a server would;
- no `logprobs`: a call that needs them stops with one line;
- `reasoning_effort` when the model setting gives one.
A model whose name does not say it reasons (an Azure deployment, a gateway's alias) is
sent the ordinary parameters until its server refuses one of those; the provider then
sends it a reasoning model's (said once), and the call is asked again.

Usage: OpenAI bills a request's prompt once, whatever its `n`, and reports one total for
all its choices. So the first completion of a request carries the prompt (and its cached
tokens), and the completion and reasoning tokens are apportioned over the choices by the
length of their text; the completions of one request add up to what it billed.

A compatible server's reasoning text (`reasoning_content`, or `reasoning`: vLLM, SGLang,
llama.cpp's server, DeepSeek) is recorded as the completion's `reasoning`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import VeriloopError
from ...records import Message
from ..base import Completion, GenParams, TokenLogprob
from ._wire import number, token_logprob
from .base import Damaged, Provider, Request, Reshape, Supports, WrongShape, apportion

# OpenAI's reasoning models: o1, o3, o4-mini, ..., and the gpt-5 family (gpt-5, gpt-5-mini, gpt-5.1, ...).
REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d+(?:-[\w.-]*)?|gpt-5(?:[.-][\w.-]*)?)$", re.IGNORECASE)


def is_reasoning_model(name: str) -> bool:
    return REASONING_MODEL.match(name) is not None


class OpenAIProvider(Provider):
    prefix = "openai"
    title = "OpenAI chat completions"
    key_variables = ("OPENAI_API_KEY",)
    base_url_variables = ("OPENAI_BASE_URL",)
    default_base_url = None  # the openai SDK's default: https://api.openai.com/v1
    supports = Supports(temperature=True, seed=True, n=True, logprobs=True, reasoning=True, batch=True)
    answer_shape = '{"choices": [{"message": {"content": ...}}], ...}'
    request_name = "a chat completion request"
    api_name = "an OpenAI-compatible API"
    answer_name = "a chat completion"
    path = "/chat/completions"

    # Set when a server refused a parameter only reasoning models refuse: a reasoning model
    # under a name of its own (an Azure deployment, a gateway's alias).
    refused_as_reasoning = False

    @property
    def reasoning(self) -> bool:
        """Whether the model takes a reasoning model's parameters: one of OpenAI's reasoning
        models by name, or one whose server refused what they refuse."""
        return self.refused_as_reasoning or is_reasoning_model(self.model)

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        """A refused parameter in one line naming the fix; a reasoning model's refusals, from
        a model whose name did not say it reasons, teach this provider to send it a reasoning
        model's parameters (`Reshape`: the call is asked again once)."""
        if status != 400:
            return None
        param, code, message = _refused(body)
        if code not in ("unsupported_parameter", "unsupported_value") or not param:
            return None
        # A call sent before another call's refusal taught this provider is refused alike.
        if param in REASONING_REFUSES and (self.refused_as_reasoning or not self.reasoning):
            self.refused_as_reasoning = True
            raise Reshape(f"the server refused {param} ({message[:120]}); {self.model} is sent a reasoning model's "
                          "parameters from now on: max_completion_tokens, and no temperature, top_p or stop")
        if param == "reasoning_effort":
            return VeriloopError(f"{self.model} takes no reasoning effort ({message[:120]}); drop --reasoning-effort "
                                 "(reasoning_effort) for it")
        return VeriloopError(f"the server refused {param} for {self.model} ({message[:160]}); {REFUSED_FIX}")

    def limits(self) -> list[str]:
        if not self.reasoning:
            return []
        return [f"{self.model} is a reasoning model: it takes no temperature, top_p or stop, so every call is sampled "
                "at its default temperature (a greedy strategy's calls too) and replies are cut at stop strings here"]

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        notices: list[str] = []
        if self.reasoning:
            if params.logprobs:
                raise VeriloopError(f"{self.model} returns no log probabilities (a reasoning model); choose a strategy "
                                    "or option that does not need them, or another model")
            if params.temperature != 1.0 or params.top_p != 1.0:
                notices.append(f"a call asks for temperature {params.temperature:g}, top_p {params.top_p:g}; "
                               f"{self.model} takes neither, so it is sampled at its default (1)"
                               + (" and cannot be greedy" if params.temperature == 0 else ""))
            body["max_completion_tokens"] = params.max_tokens
            body["n"] = count
            if self.reasoning_effort:
                body["reasoning_effort"] = self.reasoning_effort
        else:
            body.update(temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_tokens, n=count)
            if params.stop:
                body["stop"] = list(params.stop)
            if self.reasoning_effort:
                body["reasoning_effort"] = self.reasoning_effort
        seed = params.sample_seed(first)
        if seed is not None:
            body["seed"] = seed
        if params.logprobs:
            body.update(logprobs=True, top_logprobs=params.top_logprobs)
        return Request(self.path, body, {k: v for k, v in body.items() if k != "messages"}, notices)

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        if isinstance(data, dict) and "choices" in data and not data["choices"]:
            raise Damaged("a chat completion with no choices")
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not all(_is_choice(c) for c in choices[:count]):
            raise WrongShape(self.answer_shape)
        try:
            return self._completions(choices[:count], data.get("usage"), params)
        except (KeyError, TypeError, AttributeError):  # logprobs of another shape
            raise WrongShape(self.answer_shape) from None

    def _completions(self, choices: list[Any], usage: Any, params: GenParams) -> list[Completion]:
        texts = [_cut(c["message"].get("content") or "", params.stop if self.reasoning else ()) for c in choices]
        weights = [len(text[0]) or 1 for text in texts]
        completed = _count(usage, "completion_tokens")
        # Reasoning tokens are part of the completion tokens: never more than them, whatever a server reports.
        thought = min(_count(_details(usage, "completion_tokens_details"), "reasoning_tokens"), completed)
        completion, reasoning = apportion(completed, weights), apportion(thought, weights)
        out = []
        for i, (choice, (text, cut)) in enumerate(zip(choices, texts, strict=True)):
            message = choice["message"]
            thought = message.get("reasoning_content") or message.get("reasoning")
            out.append(Completion(
                text=text,
                finish_reason="stop" if cut else str(choice.get("finish_reason") or "stop"),
                prompt_tokens=_count(usage, "prompt_tokens") if i == 0 else 0,
                completion_tokens=completion[i],
                logprobs=_logprobs(choice) if params.logprobs else None,
                reasoning=thought if isinstance(thought, str) and thought else None,
                reasoning_tokens=reasoning[i],
                cached_prompt_tokens=min(_count(_details(usage, "prompt_tokens_details"), "cached_tokens"),
                                         _count(usage, "prompt_tokens")) if i == 0 else 0,
            ))
        return out


# What OpenAI's reasoning models refuse that other chat models take.
REASONING_REFUSES = ("max_tokens", "temperature", "top_p", "stop")
REFUSED_FIX = "choose a strategy or option that does not ask for it, or another model"


def _refused(body: str) -> tuple[str, str, str]:
    """The parameter, code and message of an OpenAI-style error body ("" where missing)."""
    try:
        data = json.loads(body)
    except ValueError:
        return "", "", ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return "", "", ""
    return tuple(str(v) if isinstance(v, str) else "" for v in (error.get("param"), error.get("code"),  # type: ignore[return-value]
                                                                   error.get("message")))


def _is_choice(choice: Any) -> bool:
    message = choice.get("message") if isinstance(choice, dict) else None
    return isinstance(message, dict) and (message.get("content") is None or isinstance(message.get("content"), str))


def _cut(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """The text up to its first stop string (the server was not sent them), and whether it was cut."""
    ends = [i for stop in stops if stop and (i := text.find(stop)) >= 0]
    return (text[: min(ends)], True) if ends else (text, False)


def _details(usage: Any, field: str) -> Any:
    return usage.get(field) if isinstance(usage, dict) else None


def _count(usage: Any, field: str) -> int:
    value = usage.get(field, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) and value >= 0 else 0


def _logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    return [
        token_logprob(t["token"], t["logprob"], {alt["token"]: number(alt["logprob"]) for alt in (t.get("top_logprobs") or [])})
        for t in content
    ]
