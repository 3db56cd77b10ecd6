"""Ollama's own chat API (POST /api/chat, not its OpenAI-compatible /v1), which takes a
seed, log probabilities and a thinking switch, and returns the thinking apart.

What a call becomes: the messages as they are (Ollama takes system messages and any order
of turns), `stream: false`, `options` {temperature, top_p, seed (the sample's own, so
sample i is the same however samples are requested), num_predict, stop}, `logprobs` /
`top_logprobs` when the call asks them. No n: one sample per request.

A reasoning effort sets `think`: "low", "medium" or "high" (gpt-oss takes these levels;
a model that only switches thinking on or off takes any level as on), and minimal is sent
as "low", the least thinking every thinking model takes (gpt-oss cannot think none at all,
so `false` would not be minimal effort but a refusal on some models). Thinking tokens count
against num_predict, so it is raised by the effort's budget (low 2048, medium 8192, high
24576; minimal 1024) and the answer keeps the room the call asked for. Without an effort
no `think` is sent: the model thinks as it does by default.

What an answer becomes: message.content is the text, message.thinking the reasoning;
done_reason is the finish reason ("stop", "length" kept); prompt_eval_count and eval_count
are the tokens (eval_count includes the thinking; Ollama does not count it apart, so
reasoning_tokens stays 0). prompt_eval_count counts only the prompt tokens evaluated anew:
a prefix Ollama kept from the call before is in no count (and the field is left out when
nothing was evaluated: 0).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...errors import ContextOverflow, VeriloopError
from ...records import Message
from ..base import Completion, GenParams, TokenLogprob
from ._wire import THINKING_BUDGETS, error_of, excerpt, number, shown, token_logprob, whole
from .base import Damaged, Provider, Request, Supports, WrongShape

THINK_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


class OllamaProvider(Provider):
    prefix = "ollama"
    title = "Ollama"
    key_variables = ()
    base_url_variables = ("OLLAMA_HOST",)
    default_base_url: ClassVar[str | None] = "http://localhost:11434"
    supports = Supports(temperature=True, seed=True, n=False, logprobs=True, reasoning=True, batch=False)
    answer_shape = '{"message": {"content": ...}, "done": true, ...}'
    request_name = "an Ollama chat request"
    answer_name = "an Ollama chat reply"
    api_name = "an Ollama server (its base URL without /v1)"
    path = "/api/chat"

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        options: dict[str, Any] = {"temperature": params.temperature, "top_p": params.top_p}
        seed = params.sample_seed(first)
        if seed is not None:
            options["seed"] = seed
        options["num_predict"] = params.max_tokens
        if params.stop:
            options["stop"] = list(params.stop)
        sent: dict[str, Any] = {"model": self.model, "stream": False}
        if self.reasoning_effort is not None:
            sent["think"] = THINK_LEVELS[self.reasoning_effort]
            options["num_predict"] = params.max_tokens + THINKING_BUDGETS[self.reasoning_effort]
        if params.logprobs:
            sent["logprobs"] = True
            if params.top_logprobs:
                sent["top_logprobs"] = params.top_logprobs
        sent["options"] = options
        body = {"model": self.model, "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                **{k: v for k, v in sent.items() if k != "model"}}
        return Request(path=self.path, body=body, sent=sent)

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict):
            if isinstance(data, dict) and isinstance(data.get("error"), str):
                raise VeriloopError(f"Ollama answered with an error: {excerpt(data['error'], 200)}")
            raise WrongShape(self.answer_shape)
        text = message.get("content", "")
        thinking = message.get("thinking")
        if not isinstance(text, str):
            raise Damaged(f"a chat reply whose content is not text ({shown(text, 60)})")
        if thinking is not None and not isinstance(thinking, str):
            raise Damaged(f"a chat reply whose thinking is not text ({shown(thinking, 60)})")
        if data.get("done") is False:
            raise Damaged("a chat reply that is not done (a streamed piece)")
        reason = data.get("done_reason")
        return [Completion(
            text=text,
            finish_reason=reason if isinstance(reason, str) and reason else "stop",
            prompt_tokens=whole(data, "prompt_eval_count"),
            completion_tokens=whole(data, "eval_count"),
            logprobs=_logprobs(data.get("logprobs")) if params.logprobs else None,
            reasoning=thinking or None,
        )]

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        _, message = error_of(body)
        lowered = message.lower()
        if "try pulling it first" in lowered or (status == 404 and "not found" in lowered and "model" in lowered):
            return VeriloopError(f"Ollama does not have the model {self.model!r}; run `ollama pull {self.model}` "
                                 "on the server, then re-run")
        if "does not support thinking" in lowered:
            return VeriloopError(f"{self.model!r} does not think ({excerpt(message, 120)}); remove reasoning_effort "
                                 "for this model, or choose one that thinks")
        if "context length" in lowered and "exceed" in lowered:
            return ContextOverflow(f"prompt does not fit the context of {self.model} ({excerpt(message, 120)})")
        if status == 400:
            return VeriloopError(f"Ollama rejected the request for {self.model!r}: {excerpt(message, 200)}; "
                                 "change what it names, then re-run")
        return None


def _logprobs(entries: Any) -> list[TokenLogprob] | None:
    if not isinstance(entries, list):
        return None
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise Damaged(f"a logprob entry that is not an object ({shown(entry, 60)})")
        alternatives = entry.get("top_logprobs")
        top: dict[str, float] = {}
        for alt in alternatives if isinstance(alternatives, list) else []:
            if isinstance(alt, dict) and isinstance(alt.get("token"), str):
                top[alt["token"]] = number(alt.get("logprob"))
        out.append(token_logprob(entry.get("token"), entry.get("logprob"), top))
    return out
