"""A stand-in for Gemini's generateContent (the Gemini API, v1beta), with Google's documented
rules and error bodies ({"error": {code, message, status}}).

Invariants (beyond the base's):
- The key comes in the x-goog-api-key header or the `key` query parameter; `base_url` is
  the root (the SDKs add /v1beta), the paths are /v1beta/models/<model>:generateContent.
- contents take the roles user and model only; the system prompt is the top-level
  systemInstruction. Unknown fields are refused as Google's JSON parser refuses them.
- candidateCount (1..8) candidates come back, candidate i being reply(messages, i); the
  prompt is billed once, candidatesTokenCount sums all candidates.
- Thinking models (ids with "2.5" or "-3") think by default: THOUGHT_TOKENS per candidate
  (fewer if thinkingBudget is smaller; none at budget 0, which the pro models refuse),
  reported as thoughtsTokenCount (not in candidatesTokenCount) and spent from
  maxOutputTokens first; a thought part {text, thought: true} comes first only with
  includeThoughts. A candidate left without text has a content without parts.
"""

from __future__ import annotations

from typing import Any

from .base import Answer, Seen, Standin, cut_at_stop, first_words, prompt_words

FIELDS = {"contents", "systemInstruction", "generationConfig", "safetySettings", "tools", "toolConfig",
          "cachedContent"}
CONFIG = {"temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "candidateCount", "seed",
          "responseLogprobs", "logprobs", "thinkingConfig", "presencePenalty", "frequencyPenalty",
          "responseMimeType", "responseSchema"}
THOUGHT = "I add three and four, then check the sum."
THOUGHT_TOKENS = 40


def error_body(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        body["details"] = details
    return {"error": body}


OVERLOADED = (503, error_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."))


def exhausted(retry_seconds: int = 7) -> tuple[int, dict[str, Any]]:
    """A 429 fault as the free tier answers it, with the retry delay in its details."""
    return (429, error_body(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and "
                                                       "billing details.",
                            [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_seconds}s"}]))


def thinks(model: str) -> bool:
    return "2.5" in model or "-3" in model


class Refusal(Exception):
    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.status)
        self.answer = answer


def invalid(message: str) -> Refusal:
    return Refusal(Answer(400, error_body(400, "INVALID_ARGUMENT", message)))


class GoogleStandin(Standin):
    key_headers = ("x-goog-api-key",)
    request_id_header = "x-goog-request-id"

    def default_models(self) -> dict[str, Any]:
        """Model id -> (input token limit, output token limit)."""
        return {"gemini-2.5-flash": (1_048_576, 65_536), "gemini-2.5-pro": (1_048_576, 65_536),
                "gemini-2.0-flash": (1_048_576, 8_192)}

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        given = headers.get("x-goog-api-key", query.get("key"))
        if given is None:
            return Answer(403, error_body(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers "
                                          "(callers without established identity). Please use API Key or other form "
                                          "of API consumer identity to call this API."))
        if given != self.key:
            return Answer(400, error_body(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]))
        return None

    def route(self, seen: Seen) -> Answer:
        path = seen.path
        if seen.method == "GET" and path == "/v1beta/models":
            return Answer(200, {"models": [
                {"name": f"models/{m}", "version": "001", "displayName": m, "inputTokenLimit": limits[0],
                 "outputTokenLimit": limits[1], "supportedGenerationMethods": ["generateContent", "countTokens"],
                 "thinking": thinks(m)} for m, limits in self.models.items()]})
        if seen.method == "POST" and path.startswith("/v1beta/models/") and path.endswith(":generateContent"):
            model = path.removeprefix("/v1beta/models/").removesuffix(":generateContent")
            try:
                return Answer(200, self.generate(model, seen.body))
            except Refusal as refusal:
                return refusal.answer
        return Answer(404, "<!DOCTYPE html><title>Error 404 (Not Found)!!1</title>", content_type="text/html")

    def generate(self, model: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise invalid("Invalid JSON payload received.")
        for name in body:
            if name not in FIELDS:
                raise invalid(f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.')
        config = body.get("generationConfig") or {}
        for name in config:
            if name not in CONFIG:
                raise invalid(f"Invalid JSON payload received. Unknown name \"{name}\" at 'generation_config': "
                              "Cannot find field.")
        if model not in self.models:
            raise Refusal(Answer(404, error_body(404, "NOT_FOUND", f"models/{model} is not found for API version "
                                                 "v1beta, or is not supported for generateContent. Call ListModels "
                                                 "to see the list of available models and their supported methods.")))
        contents = body.get("contents")
        if not contents:
            raise invalid("* GenerateContentRequest.contents: contents is not specified\n")
        for content in contents:
            if content.get("role", "user") not in ("user", "model"):
                raise invalid("Please use a valid role: user, model.")
        count = config.get("candidateCount", 1)
        if not 1 <= count <= 8:
            raise invalid(f"* GenerateContentRequest.generation_config.candidate_count: must be between 1 and 8, "
                          f"got {count}\n")
        thought = self.thought_tokens(model, config.get("thinkingConfig"))
        texts = [(body.get("systemInstruction") or {}).get("parts")] if body.get("systemInstruction") else []
        prompt_tokens = prompt_words(texts + [c.get("parts") for c in contents])
        window = self.models[model][0]
        if len(prompt_tokens) > window:
            raise invalid(f"The input token count ({len(prompt_tokens)}) exceeds the maximum number of tokens allowed "
                          f"({window}).")
        prompt, cached = len(prompt_tokens), self.cached(prompt_tokens)
        limit = config.get("maxOutputTokens")
        messages = [{"role": c.get("role", "user"), "content": c.get("parts")} for c in contents]
        include = bool((config.get("thinkingConfig") or {}).get("includeThoughts"))
        candidates, spoken, thoughts = [], 0, 0
        for i, text in enumerate(self.samples(messages, count)):
            text, _ = cut_at_stop(text, config.get("stopSequences") or [])
            spent = thought if limit is None else min(thought, limit)
            finish = "STOP"
            if limit is not None and spent + len(text.split()) > limit:
                text, finish = first_words(text, limit - spent), "MAX_TOKENS"
            parts = ([{"text": THOUGHT, "thought": True}] if include and spent else []) + (
                [{"text": text}] if text else [])
            candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"} if parts else {"role": "model"},
                                         "finishReason": finish, "index": i}
            if config.get("responseLogprobs"):
                candidate.update(logprobs(text, config.get("logprobs") or 0))
            candidates.append(candidate)
            spoken += len(text.split())
            thoughts += spent
        self.bill(prompt, spoken + thoughts)
        usage: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": spoken,
                                 "totalTokenCount": prompt + spoken + thoughts,
                                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        if cached:
            usage["cachedContentTokenCount"] = cached
        return {"candidates": candidates, "usageMetadata": usage, "modelVersion": model,
                "responseId": self.next_id("resp-")}

    def thought_tokens(self, model: str, thinking: dict[str, Any] | None) -> int:
        budget = (thinking or {}).get("thinkingBudget", -1)
        if not thinks(model):
            if thinking and budget != 0:
                raise invalid("Thinking is not supported by this model.")
            return 0
        if budget == 0 and "pro" in model:
            raise invalid("Budget 0 is invalid. This model only works in thinking mode.")
        return THOUGHT_TOKENS if budget < 0 else min(budget, THOUGHT_TOKENS)


def logprobs(text: str, top: int) -> dict[str, Any]:
    chosen: list[dict[str, Any]] = [{"token": word, "logProbability": -0.01 * (i % 7)} for i, word in enumerate(text.split())]
    return {"avgLogprobs": sum(c["logProbability"] for c in chosen) / len(chosen) if chosen else 0.0,
            "logprobsResult": {"chosenCandidates": chosen,
                               "topCandidates": [{"candidates": [c] + [
                                   {"token": f"{c['token']}~{k}", "logProbability": c["logProbability"] - k}
                                   for k in range(1, top)][:top]} for c in chosen]}}
