"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama, hosted APIs).

The API key is taken from an option or the environment and kept only on the client: it is
never part of the model identity, the cache key, a record or a log line.

Faults of the server or the network are weather, not failures: a connection reset, a
timeout, 408, 429 (after its Retry-After, capped), 5xx, a truncated or invalid JSON body
and a completion with no choices are retried with jittered exponential backoff for as
long as the call's retry budget allows (counted from its first fault); only then does the
run stop, with one line naming the server and the last fault. A fault is never returned,
so its text never reaches a prompt, a record or the cache. Answers that no retry would
change (a refused key, an unknown model, a context overflow, a web page or another API's
JSON) stop the call at once.

The identity that keys the call cache is the server's model name at the normalised base
URL, or at a deployment name the user gives, so two servers that both call their model
`default` never share cached answers unless declared one deployment.

Transport: a client made here posts chat completions itself over aiohttp (one session per
event loop, no connection limit of its own: the in-flight bound is ours), because the
openai SDK's stack (request transform, httpx, httpcore's pool, anyio) costs several
milliseconds of CPU per request, which caps a fast server's throughput long before the
concurrency does. It still keeps an `openai.AsyncOpenAI` for its settings (base URL,
organisation, project) and builds its status errors with the SDK, so every answer is
classified as the SDK would. A client the caller gives is used through the SDK, as given.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ContextOverflow, ModelTransportError, VeriloopError
from ..records import Message
from .base import Completion, GenParams, TokenLogprob

if TYPE_CHECKING:
    import aiohttp

RETRY_BUDGET_SECONDS = 120.0
RETRY_BASE_SECONDS = 0.5
RETRY_MAX_WAIT_SECONDS = 20.0  # the longest backoff between two attempts
RETRY_AFTER_MAX_SECONDS = 60.0  # a server's Retry-After is honoured up to this
DEFAULT_PORTS = {"http": 80, "https": 443}


class _Fault(Exception):
    """A transient fault of one attempt: `what` describes it in one line (for the final
    error only); `retry_after` is the wait the server asked for, if any."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


def normalise_url(url: str) -> str:
    """One spelling per server: scheme and host lowercased, credentials and default ports
    dropped, repeated and trailing slashes removed (the path's case is kept: it matters)."""
    text = url.strip()
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:  # not a port number: keep what was written, it cannot be a different spelling
        port = None
        parts = urlsplit("")
    if not parts.scheme or not parts.hostname:
        return text.rstrip("/")
    scheme = parts.scheme.lower()
    host = parts.hostname  # lowercased by urlsplit, without user:password@
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    path = "/".join(segment for segment in parts.path.split("/") if segment)
    return f"{scheme}://{host}" + (f"/{path}" if path else "") + (f"?{parts.query}" if parts.query else "")


def server_identity(model: str, base_url: str, deployment: str | None = None) -> str:
    """The cache identity of a server model: its name at the deployment when one is
    declared, else at the normalised base URL."""
    where = f"deployment:{deployment.strip()}" if deployment else normalise_url(base_url)
    return f"{model}@{where}"


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
        *,
        retry_budget: float | None = None,
        deployment: str | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`client`: an `openai.AsyncOpenAI` of the caller's (its URL, key and retry
        settings are used as they are, and it is left open on aclose). `concurrency`
        bounds the requests in flight to the server, every sample counted.
        `retry_budget`: seconds from a call's first fault during which faults are retried
        (default 120). `deployment`: a name for the server, used in the cache identity
        instead of the base URL, so that several URLs of one deployment share cached
        answers. `sleep` and `clock` (asyncio.sleep and time.monotonic) time the retries."""
        import openai

        self._openai = openai
        base_url = base_url or os.environ.get("VERILOOP_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("VERILOOP_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        if not model:
            raise VeriloopError("an openai model id needs a model name, e.g. `openai/gpt-4o-mini`")
        if deployment is not None and not deployment.strip():
            raise VeriloopError("a deployment name must not be empty")
        if retry_budget is not None and not (retry_budget >= 0 and math.isfinite(retry_budget)):
            raise VeriloopError(f"the retry budget must be a number of seconds, at least 0, not {retry_budget}")
        self.name = model
        self.base_url = base_url
        self.deployment = deployment.strip() if deployment else None
        self.preferred_concurrency = concurrency
        self.retry_base_seconds = retry_base_seconds
        self.retry_budget = RETRY_BUDGET_SECONDS if retry_budget is None else retry_budget
        self._sleep = sleep
        self._clock = clock or time.monotonic
        self._random = random.Random()
        self._slots: tuple[Any, int, asyncio.Semaphore] | None = None
        # Retries are ours (they must never be cached or leak across calls), so the
        # client's own are off.
        self._owns_client = client is None
        if client is not None:
            self.base_url = str(getattr(client, "base_url", "") or "") or None
            self._client = client
        else:
            self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
        self._timeout = timeout
        self._http_url = ""
        if self._owns_client:  # the chat completions endpoint under the base URL, its query kept
            base = self._client.base_url
            self._http_url = str(base.copy_with(path=base.path.rstrip("/") + "/chat/completions"))
        # The session of a client made here, on the loop it belongs to, with what closes it.
        self._http: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession, AsyncGenerator[None, None],
                          dict[str, Any]] | None = None
        # The URL the client really calls (the default OpenAI endpoint when none is given);
        # the key is never part of it.
        self.identity = server_identity(model, self._url(), self.deployment)

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        # One request per sample with its own seed keeps sample i identical however the
        # samples are batched (and many servers ignore n > 1).
        slots = self._in_flight()
        if params.n == 1:  # the common case, without a task of its own
            return [await self._one(messages, params, 0, slots)]
        return list(await asyncio.gather(*(self._one(messages, params, i, slots) for i in range(params.n))))

    def _in_flight(self) -> asyncio.Semaphore:
        """The slots every request to the server takes, shared by all calls, so that k
        samples of many calls never put more than `preferred_concurrency` requests in
        flight. One per event loop (a semaphore belongs to the loop it waits on)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop or self._slots[1] != self.preferred_concurrency:
            self._slots = (loop, self.preferred_concurrency, asyncio.Semaphore(max(1, self.preferred_concurrency)))
        return self._slots[2]

    async def _one(
        self, messages: list[Message], params: GenParams, index: int, slots: asyncio.Semaphore
    ) -> Completion:
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
        # The slot is held through the backoff too: while a server struggles, the calls
        # waiting for a slot neither add to its load nor spend their own retry budget.
        async with slots:
            return await self._with_retries(kwargs, params)

    async def _with_retries(self, kwargs: dict[str, Any], params: GenParams) -> Completion:
        openai = self._openai
        first_fault: float | None = None
        attempts = 0
        while True:
            attempts += 1
            started = time.perf_counter()
            try:
                # The body as text, to tell a damaged answer from another API's.
                body = await (self._post(kwargs) if self._owns_client else self._post_with_sdk(kwargs))
                choice, usage = self._parsed(body)
                return Completion(
                    text=choice["message"].get("content") or "",
                    finish_reason=str(choice.get("finish_reason") or "stop"),
                    prompt_tokens=_count(usage, "prompt_tokens"),
                    completion_tokens=_count(usage, "completion_tokens"),
                    logprobs=_logprobs(choice) if params.logprobs else None,
                    seconds=time.perf_counter() - started,
                )
            except _Fault as exc:
                fault = exc
            except openai.APIConnectionError as exc:  # refused, reset, timed out (APITimeoutError)
                fault = _Fault(_connection_fault(exc))
            except openai.APIStatusError as exc:
                if not _transient_status(exc.status_code):
                    raise self._refusal(exc) from None
                response = exc.response
                fault = _Fault(f"{exc.status_code} {response.reason_phrase} ({_excerpt(response.text)})",
                               _retry_after(response.headers))
            now = self._clock()
            first_fault = now if first_fault is None else first_fault
            left = self.retry_budget - (now - first_fault)
            wait = self._wait(attempts, fault.retry_after, left)
            if wait is None:
                raise ModelTransportError(
                    f"the model server at {self._url()} kept failing for {round(now - first_fault, 1):g} s "
                    f"({attempts} attempt{'' if attempts == 1 else 's'}, retry budget {self.retry_budget:g} s); "
                    f"last error: {fault.what}; "
                    "check that it is running and reachable, then re-run (finished work is kept)"
                ) from None
            await (self._sleep or asyncio.sleep)(wait)

    async def _post_with_sdk(self, kwargs: dict[str, Any]) -> str:
        raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
        return str(raw.http_response.text)

    async def _post(self, kwargs: dict[str, Any]) -> str:
        """POST /chat/completions on our own session; the body of a 2xx answer. Faults are
        raised as the SDK's exceptions (a status error built by the SDK from the answer,
        APIConnectionError or APITimeoutError caused by aiohttp's), so they are classified
        as the SDK's own requests are."""
        import aiohttp

        session, proxy = await self._session()
        url = self._http_url
        try:
            async with session.post(url, data=json.dumps(kwargs).encode(), **proxy) as response:
                content = await response.read()
                status, reason, charset = response.status, response.reason, response.charset
                headers = list(response.raw_headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            request = self._httpx.Request("POST", url)
            if isinstance(exc, TimeoutError):
                raise self._openai.APITimeoutError(request=request) from exc
            raise self._openai.APIConnectionError(request=request) from exc
        try:
            body = content.decode(charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            body = content.decode("utf-8", errors="replace")
        if 200 <= status < 300:
            return body
        answer = self._httpx.Response(
            status, headers=headers, content=content, request=self._httpx.Request("POST", url),
            extensions={"reason_phrase": reason.encode()} if reason else {},
        )
        raise self._client._make_status_error_from_response(answer)

    async def _session(self) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
        """This event loop's session, made on first use, and the proxy options of a request.
        A session belongs to its loop, so a model used under several `asyncio.run`s gets
        one per loop, each closed when its loop shuts down (asyncio.run closes the async
        generators a loop started) if aclose has not closed it before."""
        loop = asyncio.get_running_loop()
        if self._http is not None and self._http[0] is loop:
            return self._http[1], self._http[3]
        import aiohttp
        import aiohttp.helpers
        import yarl

        client = self._client
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": client.user_agent}
        if client.api_key:
            headers["Authorization"] = f"Bearer {client.api_key}"
        if client.organization:
            headers["OpenAI-Organization"] = client.organization
        if client.project:
            headers["OpenAI-Project"] = client.project
        # HTTP(S)_PROXY and NO_PROXY are honoured as the SDK honours them, looked up once here:
        # aiohttp's trust_env would look them (and ~/.netrc) up on a thread for every request.
        proxy: dict[str, Any] = {}
        try:
            proxy["proxy"], proxy["proxy_auth"] = aiohttp.helpers.get_env_proxy_for_url(yarl.URL(self._http_url))
        except LookupError:
            pass
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # no limit here: requests in flight are bounded by our slots
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=self._timeout),
        )
        closer = _closed_with_the_loop(session)
        await anext(closer)
        self._http = (loop, session, closer, proxy)
        return session, proxy

    @property
    def _httpx(self) -> Any:
        import httpx2

        return httpx2

    def _wait(self, attempts: int, retry_after: float | None, left: float) -> float | None:
        """The wait before the next attempt, None when the budget does not allow one. A
        server's Retry-After (capped) is honoured, not shortened: retrying sooner would only
        be refused again. Otherwise the backoff doubles from retry_base_seconds, jittered
        so calls that failed together do not all come back together, and cut to the budget."""
        if left <= 0:
            return None
        if retry_after is not None:
            wait = min(retry_after, RETRY_AFTER_MAX_SECONDS)
            wait += self._random.uniform(0, 0.1 * wait)
            return wait if wait <= left else None
        ceiling = min(RETRY_MAX_WAIT_SECONDS, self.retry_base_seconds * 2 ** (attempts - 1))
        return min(left, ceiling / 2 + self._random.uniform(0, ceiling / 2))

    def _refusal(self, exc: Any) -> VeriloopError:
        """The error for an HTTP status that retrying would not change."""
        openai = self._openai
        if isinstance(exc, openai.BadRequestError):
            if "context" in str(exc).lower():
                return ContextOverflow(f"prompt does not fit the context of {self.name}")
            return VeriloopError(f"the server rejected the request: {_short(exc)}")
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return VeriloopError(
                "the server refused the API key; set VERILOOP_API_KEY (or OPENAI_API_KEY) or pass --api-key"
            )
        if isinstance(exc, openai.NotFoundError):
            return VeriloopError(self._not_found(exc))
        response = exc.response
        return VeriloopError(
            f"the server at {self._url()} answered {exc.status_code} {response.reason_phrase} "
            f"({_excerpt(response.text)}) to POST {self._url()}/chat/completions"
        )

    def _url(self) -> str:
        url = self.base_url or str(getattr(self._client, "base_url", "")) or "the default OpenAI endpoint"
        return url.rstrip("/")

    def _parsed(self, body: str) -> tuple[dict[str, Any], Any]:
        """The first choice and the usage of a chat completion. A damaged one (a body cut
        short or not valid JSON, an empty body, no choices) is a _Fault, to be retried; a
        VeriloopError quotes the body when the server answered something else (a web page,
        a JSON error, another API's JSON), which no retry would change."""
        try:
            data = json.loads(body)
        except ValueError:
            # JSON that does not parse is a damaged answer; anything else was never JSON.
            if not body.strip() or body.lstrip().startswith(("{", "[")):
                raise _Fault(f"a truncated or invalid JSON body ({_excerpt(body)})") from None
            data = None
        if isinstance(data, dict) and "choices" in data and not data["choices"]:
            raise _Fault("a chat completion with no choices")
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else 0
        if choice is not None and (content is None or isinstance(content, str)):
            return choice, data.get("usage")  # type: ignore[union-attr]  # a dict, since it has a choice
        raise VeriloopError(
            f"the server at {self._url()} answered a chat completion request with {_excerpt(body)}, "
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
            http, self._http = self._http, None
            if http is not None and http[0] is asyncio.get_running_loop():
                await http[2].aclose()  # closes the session (another loop's closes with its loop)
            await self._client.close()


async def _closed_with_the_loop(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Started once, this generator closes the session when it is closed: by aclose, or by
    the event loop's shutdown (asyncio.run closes the async generators it started)."""
    try:
        yield
    finally:
        await session.close()


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300]


def _transient_status(status: int) -> bool:
    # 501 Not Implemented and 505 are answers about the request, the rest of 5xx the server's trouble.
    return status in (408, 429) or (status >= 500 and status not in (501, 505))


def _connection_fault(exc: Exception) -> str:
    """The connection fault in one line: openai's "Connection error." says less than its cause."""
    cause = exc.__cause__
    if cause is None:
        return type(exc).__name__
    text = " ".join(str(cause).split())[:200]
    return f"{type(exc).__name__} ({type(cause).__name__}{': ' + text if text else ''})"


def _retry_after(headers: Any) -> float | None:
    """The wait a 429 or 503 asks for: retry-after-ms (OpenAI's), or Retry-After in seconds
    or as an HTTP date; None when there is none or it cannot be read."""
    try:
        if headers.get("retry-after-ms") is not None:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after") is not None:
            value = headers["retry-after"].strip()
            try:
                seconds = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                seconds = when.timestamp() - time.time()
        else:
            return None
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _excerpt(body: str) -> str:
    text = " ".join(body.split())
    if not text:
        return "an empty body"
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _count(usage: Any, field: str) -> int:
    value = usage.get(field, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) else 0


def _logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if content is None:
        return None
    return [
        TokenLogprob(
            token=t["token"],
            logprob=t["logprob"],
            top={alt["token"]: alt["logprob"] for alt in (t.get("top_logprobs") or [])},
        )
        for t in content
    ]
