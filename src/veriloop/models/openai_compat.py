"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama, hosted APIs).

The API key is taken from an option or the environment and kept only on the client: it is
never part of the model identity, the cache key, a record or a log line. Transport errors
are retried with exponential backoff; if they persist the run stops with a clear error.
They are never cached and never shown to the model as if they were feedback.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import ContextOverflow, ModelTransportError, VeriloopError
from ..records import Message
from .base import Completion, GenParams, TokenLogprob

RETRY_ATTEMPTS = 5
RETRY_BASE_SECONDS = 0.5


class OpenAICompatModel:
    backend = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 600.0,
        retry_base_seconds: float = RETRY_BASE_SECONDS,
        client: Any = None,
    ) -> None:
        """`client`: an `openai.AsyncOpenAI` of the caller's (its URL, key and retry
        settings are used as they are, and it is left open on aclose)."""
        import openai

        self._openai = openai
        base_url = base_url or os.environ.get("VERILOOP_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("VERILOOP_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        if not model:
            raise VeriloopError("an openai model id needs a model name, e.g. `openai/gpt-4o-mini`")
        self.name = model
        self.identity = model  # the server's model name; the key and URL are not identity
        self.base_url = base_url
        self.preferred_concurrency = concurrency
        self.retry_base_seconds = retry_base_seconds
        # Retries are ours (they must never be cached or leak across calls), so the
        # client's own are off.
        self._owns_client = client is None
        if client is not None:
            self.base_url = str(getattr(client, "base_url", "") or "") or None
            self._client = client
        else:
            self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        # One request per sample with its own seed keeps sample i identical however the
        # samples are batched (and many servers ignore n > 1).
        return list(await asyncio.gather(*(self._one(messages, params, i) for i in range(params.n))))

    async def _one(self, messages: list[Message], params: GenParams, index: int) -> Completion:
        kwargs: dict[str, Any] = dict(
            model=self.name,
            messages=messages,
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_tokens,
            n=1,
        )
        if params.stop:
            kwargs["stop"] = list(params.stop)
        seed = params.sample_seed(index)
        if seed is not None:
            kwargs["seed"] = seed
        if params.logprobs:
            kwargs.update(logprobs=True, top_logprobs=params.top_logprobs)
        transient = (
            self._openai.APIConnectionError,
            self._openai.APITimeoutError,
            self._openai.RateLimitError,
            self._openai.InternalServerError,
        )
        for attempt in range(RETRY_ATTEMPTS):
            started = time.perf_counter()
            try:
                # The raw response keeps the body, to quote it when it is not a chat completion.
                raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
                break
            except transient as exc:
                if attempt == RETRY_ATTEMPTS - 1:
                    where = self.base_url or "the default OpenAI endpoint"
                    raise ModelTransportError(
                        f"model server at {where} failed {RETRY_ATTEMPTS} times ({type(exc).__name__}); "
                        "check that it is running and reachable, then re-run (finished work is kept)"
                    ) from None
                await asyncio.sleep(self.retry_base_seconds * 2**attempt)
            except self._openai.BadRequestError as exc:
                if "context" in str(exc).lower():
                    raise ContextOverflow(f"prompt does not fit the context of {self.name}") from None
                raise VeriloopError(f"the server rejected the request: {_short(exc)}") from None
            except (self._openai.AuthenticationError, self._openai.PermissionDeniedError):
                raise VeriloopError(
                    "the server refused the API key; set VERILOOP_API_KEY (or OPENAI_API_KEY) or pass --api-key"
                ) from None
            except self._openai.NotFoundError as exc:
                raise VeriloopError(self._not_found(exc)) from None
        choice, usage = self._parsed(raw)
        return Completion(
            text=choice.message.content or "",
            finish_reason=str(choice.finish_reason or "stop"),
            prompt_tokens=_count(usage, "prompt_tokens"),
            completion_tokens=_count(usage, "completion_tokens"),
            logprobs=_logprobs(choice) if params.logprobs else None,
            seconds=time.perf_counter() - started,
        )

    def _url(self) -> str:
        url = self.base_url or str(getattr(self._client, "base_url", "")) or "the default OpenAI endpoint"
        return url.rstrip("/")

    def _parsed(self, raw: Any) -> tuple[Any, Any]:
        """The first choice and the usage of a chat completion; a VeriloopError quoting the body when the
        server answered something else (a web page, a JSON error, another API's JSON)."""
        try:
            resp = raw.parse()
        except ValueError:  # a JSON content type over a body that is not JSON
            resp = None
        choices = getattr(resp, "choices", None)
        choice = choices[0] if isinstance(choices, list) and choices else None
        content = getattr(getattr(choice, "message", None), "content", 0)
        if content is None or isinstance(content, str):
            return choice, getattr(resp, "usage", None)
        raise VeriloopError(
            f"the server at {self._url()} answered a chat completion request with {_excerpt(raw.http_response.text)}, "
            'not a chat completion in JSON ({"choices": [{"message": {"content": ...}}], ...})' + self._v1_hint()
        )

    def _not_found(self, exc: Any) -> str:
        """Unknown model only when the 404 says so; a 404 about the path (a base URL
        without /v1, say) names the URL that answered it."""
        body = exc.response.text
        if "model" in body.lower():
            return f"the server does not know the model {self.name!r}"
        url = self._url()
        return (
            f"the server at {url} answered {exc.status_code} {exc.response.reason_phrase} ({_excerpt(body)}) "
            f"to POST {url}/chat/completions" + (self._v1_hint() or "; check that it is an OpenAI-compatible API")
        )

    def _v1_hint(self) -> str:
        url = self._url()
        if not url.startswith(("http://", "https://")) or urlsplit(url).path.endswith("/v1"):
            return ""
        return f"; OpenAI-compatible APIs are usually served under /v1: try the base URL {url}/v1"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300]


def _excerpt(body: str) -> str:
    text = " ".join(body.split())
    if not text:
        return "an empty body"
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _count(usage: Any, field: str) -> int:
    value = getattr(usage, field, 0)
    return value if isinstance(value, int) else 0


def _logprobs(choice: Any) -> list[TokenLogprob] | None:
    if not choice.logprobs or choice.logprobs.content is None:
        return None
    return [
        TokenLogprob(
            token=t.token,
            logprob=t.logprob,
            top={alt.token: alt.logprob for alt in (t.top_logprobs or [])},
        )
        for t in choice.logprobs.content
    ]
