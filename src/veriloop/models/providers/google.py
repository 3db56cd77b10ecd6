"""Google's Gemini API (POST /v1beta/models/MODEL:generateContent), spoken without its SDK.

What a call becomes:
- System messages are joined into `systemInstruction`; the rest become `contents` with
  the roles user and model, consecutive turns of one role joined and empty ones left out.
- `generationConfig`: temperature (above 2, Gemini's ceiling, sent as 2), topP (always:
  Gemini's own default cuts at 0.95, and 1.0 means no cut), maxOutputTokens,
  stopSequences (Gemini takes 5: the others are applied to the text here), seed (the
  first sample's), candidateCount when a request asks for several samples (at most 8 in one
  request), responseLogprobs / logprobs when the call asks log probabilities.
- A reasoning effort sets `thinkingConfig` with includeThoughts: Gemini 2.x takes a
  thinkingBudget (minimal 1024, low 2048, medium 8192, high 24576 tokens), Gemini 3 and
  later a thinkingLevel (the effort's name; their Pro models take only low and high, so
  minimal is sent as low and medium as high, said in a notice). Thoughts count against
  maxOutputTokens, so it is raised by the budget and the answer keeps its own room.

What an answer becomes: one completion per candidate; parts marked `thought` are the
reasoning, the other parts the text; finishReason STOP is "stop", MAX_TOKENS "length",
any other lowercased ("safety"). Usage is reported for the request: the prompt tokens
(cachedContentTokenCount the cached ones) are the first candidate's, the candidates'
tokens in proportion to their text, the thoughts' tokens (reasoning_tokens,
part of completion_tokens) in proportion to their reasoning, so the records add up to
what was billed. A prompt Gemini blocks (promptFeedback.blockReason, no candidate) stops
the call in one line: no retry changes it. An answer with fewer candidates than asked
gives those it has (the transport asks again for the rest).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar
from urllib.parse import quote

from ...errors import ContextOverflow, VeriloopError
from ...records import Message
from ..base import Completion, GenParams, TokenLogprob
from ._wire import (
    THINKING_BUDGETS,
    cut_at_stops,
    error_of,
    excerpt,
    key_refused,
    number,
    shown,
    token_logprob,
    turns,
    whole,
)
from .base import Damaged, Provider, Request, Supports, WrongShape, apportion

MAX_CANDIDATES = 8  # candidateCount's ceiling; the transport splits larger n into requests
MAX_STOP_SEQUENCES = 5
MAX_TEMPERATURE = 2.0
FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
LEVEL_FROM = 3  # the Gemini major version from which thinking takes a level, not a budget
PRO_LEVELS = {"minimal": "low", "low": "low", "medium": "high", "high": "high"}


def gemini_version(model: str) -> int | None:
    """The major version of a Gemini model id (gemini-2.5-flash: 2), None without one."""
    found = re.search(r"gemini-(\d+)", model.lower())
    return int(found.group(1)) if found else None


class GoogleProvider(Provider):
    prefix = "google"
    title = "Gemini API"
    key_variables = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_url_variables = ("GEMINI_BASE_URL",)
    default_base_url: ClassVar[str | None] = "https://generativelanguage.googleapis.com"
    supports = Supports(temperature=True, seed=True, n=True, logprobs=True, reasoning=True, batch=False)
    answer_shape = '{"candidates": [{"content": {"parts": [{"text": ...}]}}], "usageMetadata": {...}}'
    request_name = "a generateContent request"
    answer_name = "a Gemini answer"
    api_name = "a Gemini API"
    max_n = MAX_CANDIDATES

    def __init__(self, model: str, reasoning_effort: str | None = None) -> None:
        # The API names models "models/NAME"; either spelling is the same model.
        super().__init__(model.removeprefix("models/"), reasoning_effort)

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        notices: list[str] = []
        system, merged = turns(messages)
        config: dict[str, Any] = {}
        temperature = params.temperature
        if temperature > MAX_TEMPERATURE:
            notices.append(f"asks for temperature {temperature:g}; Gemini's temperatures end at 2: sent 2")
            temperature = MAX_TEMPERATURE
        config["temperature"] = temperature
        config["topP"] = params.top_p
        config["maxOutputTokens"] = params.max_tokens
        if params.stop:
            config["stopSequences"] = list(params.stop[:MAX_STOP_SEQUENCES])
        if count > 1:
            config["candidateCount"] = count
        seed = params.sample_seed(first)
        if seed is not None:
            config["seed"] = seed
        if params.logprobs:
            config["responseLogprobs"] = True
            if params.top_logprobs:
                config["logprobs"] = params.top_logprobs
        effort = self.reasoning_effort
        if effort is not None:
            config["maxOutputTokens"] = params.max_tokens + THINKING_BUDGETS[effort]
            config["thinkingConfig"] = {**self._thinking(effort, notices), "includeThoughts": True}
        body: dict[str, Any] = {
            "contents": [{"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
                         for role, text in merged],
        }
        if system is not None:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        body["generationConfig"] = config
        return Request(path=self.path, body=body, sent={"generationConfig": config}, notices=notices)

    @property
    def path(self) -> str:
        return f"/v1beta/models/{quote(self.model, safe='-._~')}:generateContent"

    def _thinking(self, effort: str, notices: list[str]) -> dict[str, Any]:
        version = gemini_version(self.model)
        if version is None or version < LEVEL_FROM:
            return {"thinkingBudget": THINKING_BUDGETS[effort]}
        if "-pro" not in self.model.lower():
            return {"thinkingLevel": effort}
        level = PRO_LEVELS[effort]
        if level != effort:
            notices.append(f"asks for reasoning effort {effort}; {self.model} thinks at low or high: sent {level}")
        return {"thinkingLevel": level}

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        if not isinstance(data, dict) or not ({"candidates", "promptFeedback", "usageMetadata"} & data.keys()):
            raise WrongShape(self.answer_shape)
        candidates = data.get("candidates")
        if not candidates:
            feedback = data.get("promptFeedback")
            reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if reason:
                raise VeriloopError(
                    f"Gemini refused the prompt ({shown(reason, 40)}): no retry changes that; leave this prompt "
                    f"out, or run it on another model than {self.model!r}"
                )
            raise Damaged("a Gemini answer without candidates")
        if not isinstance(candidates, list):
            raise Damaged(f"candidates that are not a list ({shown(candidates, 60)})")
        read = [self._candidate(candidate, params) for candidate in candidates[:count]]
        usage = data.get("usageMetadata")
        prompt, cached = whole(usage, "promptTokenCount"), whole(usage, "cachedContentTokenCount")
        answer = apportion(whole(usage, "candidatesTokenCount"), [len(text) for text, *_ in read])
        thought = apportion(whole(usage, "thoughtsTokenCount"), [len(r or "") for _, r, *_ in read])
        return [
            Completion(text=text, finish_reason=finish, prompt_tokens=prompt if i == 0 else 0,
                       completion_tokens=answer[i] + thought[i], logprobs=logprobs, reasoning=reasoning,
                       reasoning_tokens=thought[i], cached_prompt_tokens=min(cached, prompt) if i == 0 else 0)
            for i, (text, reasoning, finish, logprobs) in enumerate(read)
        ]

    def _candidate(
        self, candidate: Any, params: GenParams
    ) -> tuple[str, str | None, str, list[TokenLogprob] | None]:
        if not isinstance(candidate, dict):
            raise Damaged(f"a candidate that is not an object ({shown(candidate, 60)})")
        content = candidate.get("content")
        parts = content.get("parts", []) if isinstance(content, dict) else []
        if content is not None and not isinstance(content, dict) or not isinstance(parts, list):
            raise Damaged(f"a candidate whose content is not Gemini's ({shown(content, 60)})")
        texts: list[str] = []
        thoughts: list[str] = []
        for part in parts:
            if not isinstance(part, dict):
                raise Damaged(f"a content part that is not an object ({shown(part, 60)})")
            text = part.get("text")
            if text is None:
                continue  # a part without text (a thought signature, say) adds nothing to read
            if not isinstance(text, str):
                raise Damaged(f"a content part whose text is not text ({shown(text, 60)})")
            (thoughts if part.get("thought") is True else texts).append(text)
        reason = candidate.get("finishReason")
        finish = FINISH.get(reason, reason.lower()) if isinstance(reason, str) and reason else "stop"
        text, cut = cut_at_stops("".join(texts), params.stop[MAX_STOP_SEQUENCES:])
        if cut:
            finish = "stop"
        logprobs = _logprobs(candidate.get("logprobsResult")) if params.logprobs else None
        return text, ("\n\n".join(thoughts) if thoughts else None), finish, logprobs

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        kind, message = error_of(body)
        lowered = message.lower()
        if "api key not valid" in lowered or "api_key_invalid" in body.lower() or status == 401 \
                or "unregistered callers" in lowered:
            return key_refused("Gemini", self.key_variables, message)
        if "exceeds the maximum number of tokens" in lowered:
            return ContextOverflow(f"prompt does not fit the context of {self.model} ({excerpt(message, 120)})")
        if kind == "NOT_FOUND" or status == 404:
            return VeriloopError(f"Gemini does not know the model {self.model!r} ({excerpt(message, 120)}); "
                                 "give an id it lists, e.g. google/gemini-2.5-flash")
        if kind == "PERMISSION_DENIED" or status == 403:
            return VeriloopError(f"Gemini forbade the request for {self.model!r} ({excerpt(message, 160)}); "
                                 "give a key whose project may use this model, or choose one it may")
        if "think" in lowered and self.reasoning_effort is not None:
            return VeriloopError(f"Gemini refused thinking for {self.model!r} ({excerpt(message, 120)}); "
                                 "remove reasoning_effort for this model")
        if status == 400 or kind in ("INVALID_ARGUMENT", "FAILED_PRECONDITION"):
            return VeriloopError(f"Gemini rejected the request for {self.model!r}: {excerpt(message, 200)}; "
                                 "change what it names, then re-run")
        return None


def _logprobs(result: Any) -> list[TokenLogprob] | None:
    if not isinstance(result, dict):
        return None
    chosen = result.get("chosenCandidates")
    tops = result.get("topCandidates")
    if not isinstance(chosen, list):
        return None
    tops = tops if isinstance(tops, list) else []
    out = []
    for i, token in enumerate(chosen):
        if not isinstance(token, dict):
            raise Damaged(f"a logprob entry that is not an object ({shown(token, 60)})")
        alternatives = tops[i].get("candidates") if i < len(tops) and isinstance(tops[i], dict) else None
        top: dict[str, float] = {}
        for alt in alternatives if isinstance(alternatives, list) else []:
            if isinstance(alt, dict) and isinstance(alt.get("token"), str):
                top[alt["token"]] = number(alt.get("logProbability"))
        out.append(token_logprob(token.get("token"), token.get("logProbability"), top))
    return out
