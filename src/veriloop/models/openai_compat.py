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

An attempt has limits of its own, all faults when reached: no byte for `stall_timeout`
seconds (default 60; a completion is not streamed, so a server generating a long reply
sends nothing until it is done: a slow server needs a larger limit), no complete reply
within `attempt_timeout` seconds (default 600), a reply larger than `max_reply_bytes`
(default 8 MiB, read in pieces and abandoned at the limit, never buffered whole). Once a
call has faulted, an attempt never outlives what its retry budget has left: when the
backoff would take more than half of it, the wait is cut to half and the attempt after it
is the last. Every retry is counted on the progress display open in the task ("waiting for
the server: 2 retries, 1 stalled"), through `progress.server_retried`. A client the caller
gives keeps the attempt limit only: its own transport reads the reply.

The identity that keys the call cache is the server's model name at the normalised base
URL, or at a deployment name the user gives, so two servers that both call their model
`default` never share cached answers unless declared one deployment.

Secrets in a base URL: the URL must be http:// or https:// with a host (and a port from 1
to 65535); anything else is refused at construction in one line. A URL holding a user name
or password (`http://user:pass@host`) is refused too, rather than its password used as the
API key: a server behind such credentials expects HTTP basic authentication, which a bearer
key would not pass, so the user is told to give the key as a key. Query parameters that
look secret (api-key, key, token, access_token, sig, secret, password...) are kept in the
URL the client calls but removed from every URL it shows or records (`url_without_secrets`:
the identity, config.json, messages). The API key and those values are masked (`***`) in
every message the client raises, including a server's text quoted in it.

Transport: a client made here posts chat completions itself over aiohttp (one session per
event loop, no connection limit of its own: the in-flight bound is ours), because the
openai SDK's stack (request transform, httpx, httpcore's pool, anyio) costs several
milliseconds of CPU per request, which caps a fast server's throughput long before the
concurrency does. It still keeps an `openai.AsyncOpenAI` for its settings (base URL,
organisation, project) and builds its status errors with the SDK, so every answer is
classified as the SDK would; that client's own HTTP client never sends (it refuses to), so
it is made without the SSL context (the system's certificates, ~35 ms of CPU a model) the
SDK's default one would load. A client the caller gives is used through the SDK, as given.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from ..errors import ContextOverflow, ModelTransportError, VeriloopError
from ..progress import model_notice, server_retried, server_settled
from ..records import Message
from .base import Completion, GenParams
from .providers.base import Damaged, Provider, Request, Reshape, WrongShape

if TYPE_CHECKING:
    import aiohttp

RETRY_BUDGET_SECONDS = 120.0
RETRY_BASE_SECONDS = 0.5
RETRY_MAX_WAIT_SECONDS = 20.0  # the longest backoff between two attempts
RETRY_AFTER_MAX_SECONDS = 60.0  # a server's Retry-After is honoured up to this
STALL_TIMEOUT_SECONDS = 60.0  # no byte from the server for this long abandons an attempt
ATTEMPT_TIMEOUT_SECONDS = 600.0  # the longest one attempt may take, reply read
MAX_REPLY_BYTES = 8 * 2**20  # a chat completion is a few kB; a reply this large is a fault
DEFAULT_PORTS = {"http": 80, "https": 443}
BASE_URL_OPTION = "--base-url, an experiment's base_url or VERILOOP_BASE_URL"
# Query parameter names (lowercased, letters and digits only) that carry a credential.
SECRET_PARAMS = frozenset({"key", "sig", "code", "auth", "pass", "pwd", "token", "secret", "session", "sessionid"})
SECRET_PARAM_ENDINGS = ("key", "token", "secret", "password", "signature", "credential", "credentials")


class _Fault(Exception):
    """A transient fault of one attempt: `what` describes it in one line (for the final
    error only); `retry_after` is the wait the server asked for, if any; `stalled` says
    the attempt was abandoned for slowness (no byte for the stall limit, or no reply within
    the attempt's limit)."""

    def __init__(self, what: str, retry_after: float | None = None, stalled: bool = False) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after
        self.stalled = stalled


def _secret_param(name: str) -> bool:
    plain = re.sub(r"[^a-z0-9]", "", unquote_plus(name).lower())
    return plain in SECRET_PARAMS or plain.endswith(SECRET_PARAM_ENDINGS)


def _public_query(query: str) -> str:
    return "&".join(pair for pair in query.split("&") if pair and not _secret_param(pair.partition("=")[0]))


def url_without_secrets(url: str) -> str:
    """The URL as it may be shown and recorded: without user name, password, fragment
    and secret-looking query parameters; otherwise spelled as given."""
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError:  # too broken to take apart (e.g. an unclosed [): keep the part before any secret
        scheme, sep, rest = text.partition("://")
        rest = rest.split("?", 1)[0].split("#", 1)[0]
        host, slash, path = rest.partition("/")
        return scheme + sep + host.rpartition("@")[2] + slash + path
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, _public_query(parts.query), ""))


def _unsent_http_client() -> Any:
    """An httpx client for an SDK client kept for its settings: our session sends every
    request, so this one refuses to (a request sent through it would be a defect), and it
    loads no certificates for the requests it never sends.

    The SDK's own client class, on the SDK's own httpx: openai 1.x runs on `httpx`, later
    releases on `httpx2`, and the SDK refuses a client of the other one."""
    import importlib

    import openai

    client_class = openai.DefaultAsyncHttpxClient
    httpx = importlib.import_module(client_class.__mro__[1].__module__.partition(".")[0])

    class Unsent(httpx.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        async def handle_async_request(self, request: Any) -> Any:
            raise RuntimeError("veriloop sends this model's requests on its own aiohttp session, never the SDK's")

    # A client given its transport makes no other (and so no SSL context); trust_env=False:
    # no proxy transports from the environment either.
    return client_class(transport=Unsent(), trust_env=False)


def _url_secrets(url: str) -> list[str]:
    """The credentials a URL holds: its password and user name, its secret parameters' values."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    found = [parts.password or "", parts.username or ""]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if _secret_param(name):
            found += [value, unquote_plus(value)]
    return [secret for secret in found if secret]


def check_base_url(url: str) -> None:
    """Refuse, in one line naming the option and the fix, a base URL no request could
    use: not http(s), without a host, with a bad port, or with credentials in it."""
    shown = url_without_secrets(url)
    example = "e.g. http://localhost:8000/v1"
    where = f"the base URL {shown!r} ({BASE_URL_OPTION})"
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise VeriloopError(f"{where} is malformed ({exc}); write it as http://HOST:PORT/PATH, {example}") from None
    if "://" not in url:
        raise VeriloopError(f"{where} has no scheme; write it with http:// or https://, {example}")
    if parts.scheme.lower() not in DEFAULT_PORTS:
        raise VeriloopError(
            f"{where} is a {parts.scheme}:// URL; a model server is reached over http:// or https://, {example}"
        )
    if not parts.hostname:
        raise VeriloopError(f"{where} has no host; write it as http://HOST:PORT/PATH, {example}")
    if port == 0:
        raise VeriloopError(f"{where} has port 0; give the port the server listens on (1 to 65535), {example}")
    if parts.username is not None or parts.password is not None:
        raise VeriloopError(
            f"{where} holds a user name or password (USER:PASSWORD@); remove them from the URL and give the key "
            "with --api-key, VERILOOP_API_KEY or an experiment's api_key_env (a key is never recorded)"
        )


def normalise_url(url: str) -> str:
    """One spelling per server: scheme and host lowercased, credentials (user, password,
    secret query parameters) and default ports dropped, repeated and trailing slashes
    removed (the path's case is kept: it matters)."""
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
    query = _public_query(parts.query)
    return f"{scheme}://{host}" + (f"/{path}" if path else "") + (f"?{query}" if query else "")


def server_identity(model: str, base_url: str, deployment: str | None = None) -> str:
    """The cache identity of a server model: its name at the deployment when one is
    declared, else at the normalised base URL."""
    where = f"deployment:{deployment.strip()}" if deployment else normalise_url(base_url)
    return f"{model}@{where}"


class ServerModel:
    """A model behind an HTTP API, spoken through its provider (models/providers): OpenAI's
    chat completions by default, or any registered wire format."""

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
        stall_timeout: float | None = None,
        attempt_timeout: float | None = None,
        max_reply_bytes: int | None = None,
        reasoning_effort: str | None = None,
        batch: bool | None = None,
        batch_poll_seconds: float | None = None,
        provider: Provider | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`client`: an `openai.AsyncOpenAI` of the caller's (its URL, key and retry
        settings are used as they are, and it is left open on aclose). `concurrency`
        bounds the requests in flight to the server, every sample counted.
        `retry_budget`: seconds from a call's first fault during which faults are retried
        (default 120). `deployment`: a name for the server, used in the cache identity
        instead of the base URL, so that several URLs of one deployment share cached
        answers. `stall_timeout`: seconds without a byte from the server after which an
        attempt is abandoned (default 60); `attempt_timeout`: the most one attempt may
        take (default 600); `max_reply_bytes`: the largest reply read (default 8 MiB); each
        is a fault when reached, retried within the budget. `timeout` bounds connecting.
        `sleep` and `clock` (asyncio.sleep and time.monotonic) time the retries.
        `provider`: the wire format (default: OpenAI's chat completions for `model` at
        `reasoning_effort`); its variables give the base URL and key when none is given,
        after VERILOOP_BASE_URL and VERILOOP_API_KEY."""
        import openai

        from .providers.openai import OpenAIProvider

        self._openai = openai
        if not model:
            raise VeriloopError("an openai model id needs a model name, e.g. `openai/gpt-4o-mini`")
        self.provider = provider or OpenAIProvider(model, reasoning_effort)
        self.backend = self.provider.prefix
        if client is not None and not isinstance(self.provider, OpenAIProvider):
            raise VeriloopError(f"a client object speaks OpenAI's API, not {self.provider.title}")
        base_url = (base_url or os.environ.get("VERILOOP_BASE_URL")
                    or _host_url(_first_set(*self.provider.base_url_variables)) or self.provider.default_base_url)
        api_key = api_key or _first_set("VERILOOP_API_KEY", *self.provider.key_variables) or "not-needed"
        if deployment is not None and not deployment.strip():
            raise VeriloopError("a deployment name must not be empty")
        if retry_budget is not None and not (retry_budget >= 0 and math.isfinite(retry_budget)):
            raise VeriloopError(f"the retry budget must be a number of seconds, at least 0, not {retry_budget}")
        for what, seconds in (("stall timeout", stall_timeout), ("attempt timeout", attempt_timeout)):
            if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
                raise VeriloopError(f"the {what} must be a number of seconds above 0, not {seconds}")
        if max_reply_bytes is not None and not max_reply_bytes >= 1:
            raise VeriloopError(f"the reply size limit must be a number of bytes, at least 1, not {max_reply_bytes}")
        if client is None and base_url:
            check_base_url(base_url)
        self.name = model
        self.base_url = base_url
        self.deployment = deployment.strip() if deployment else None
        self.preferred_concurrency = concurrency
        self.retry_base_seconds = retry_base_seconds
        self.retry_budget = RETRY_BUDGET_SECONDS if retry_budget is None else retry_budget
        self.stall_timeout = STALL_TIMEOUT_SECONDS if stall_timeout is None else stall_timeout
        self.attempt_timeout = ATTEMPT_TIMEOUT_SECONDS if attempt_timeout is None else attempt_timeout
        self.max_reply_bytes = MAX_REPLY_BYTES if max_reply_bytes is None else max_reply_bytes
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
            self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout,
                                              http_client=_unsent_http_client())
        self._timeout = timeout
        self._endpoints: dict[str, str] = {}  # request path -> the URL called, the base URL's query kept
        self.notices: list[str] = []  # what the provider changed from what calls asked, each said once
        self._n_ignored = False  # the server answered fewer choices than `n` asked: one request a sample
        # The session of a client made here, on the loop it belongs to, with what closes it.
        self._http: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession, AsyncGenerator[None, None],
                          dict[str, Any]] | None = None
        # The URL the client really calls (the default OpenAI endpoint when none is given);
        # the key is never part of it.
        self.identity = server_identity(model, self._url(), self.deployment) + self.provider.identity_suffix()
        # What every message raised here is cleaned of, longest first (a key may hold another).
        key = str(getattr(self._client, "api_key", "") or "")
        secrets = _url_secrets(str(getattr(self._client, "base_url", "") or ""))
        self._secrets = sorted({*secrets, *([key] if key and key != "not-needed" else [])}, key=len, reverse=True)

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        """`params.n` completions: in requests of up to `provider.max_n` samples each where
        the provider takes `n` (its prompt billed once a request), else one request a
        sample, each with its own seed. A server that answers fewer choices than asked
        (many ignore `n`) gets the rest asked again, and one request a sample from then on."""
        slots = self._in_flight()
        per = self.provider.max_n if self.provider.supports.n and not self._n_ignored else 1
        if params.n <= per:  # the common case (n = 1), without a task of its own
            return await self._samples(messages, params, 0, params.n, slots)
        starts = range(0, params.n, per)
        parts = await asyncio.gather(*(self._samples(messages, params, i, min(per, params.n - i), slots)
                                       for i in starts))
        return [c for part in parts for c in part]

    async def _samples(
        self, messages: list[Message], params: GenParams, first: int, count: int, slots: asyncio.Semaphore
    ) -> list[Completion]:
        """Samples first .. first+count-1, asking again for those a server left out."""
        out = await self._one(messages, params, first, count, slots)
        if len(out) < count:
            self._n_ignored = True
            rest = await asyncio.gather(*(self._one(messages, params, i, 1, slots)
                                          for i in range(first + len(out), first + count)))
            out += [c for part in rest for c in part]
        return out

    def _notice(self, notice: str) -> None:
        """Say once on the run's output what the provider changed from what calls asked."""
        if notice not in self.notices:
            self.notices.append(notice)
            model_notice(f"{self.provider.prefix}/{self.name}: {notice}")

    def _in_flight(self) -> asyncio.Semaphore:
        """The slots every request to the server takes, shared by all calls, so that k
        samples of many calls never put more than `preferred_concurrency` requests in
        flight. One per event loop (a semaphore belongs to the loop it waits on)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop or self._slots[1] != self.preferred_concurrency:
            self._slots = (loop, self.preferred_concurrency, asyncio.Semaphore(max(1, self.preferred_concurrency)))
        return self._slots[2]

    async def _one(
        self, messages: list[Message], params: GenParams, first: int, count: int, slots: asyncio.Semaphore
    ) -> list[Completion]:
        """One request for `count` samples from `first`: 1 to `count` completions."""
        reshaped = False
        while True:
            try:
                request = self.provider.request(messages, params, first, count)
                for notice in request.notices:
                    self._notice(notice)
                # The slot is held through the backoff too: while a server struggles, the calls
                # waiting for a slot neither add to its load nor spend their own retry budget.
                async with slots:
                    completions = await self._with_retries(request, params, count)
                break
            except Reshape as exc:  # the provider changed what it sends: ask once more
                if reshaped:
                    raise VeriloopError(self._masked(f"the server at {self._url()} refused {self.name!r} again after "
                                                     f"{exc}")) from None
                reshaped = True
                self._notice(str(exc))
            except VeriloopError as exc:  # every message raised here leaves through this door
                exc.args = (self._masked(str(exc)),)
                raise
        share = completions[0].seconds / len(completions)
        for completion in completions:
            completion.seconds, completion.sent = share, request.sent
        return completions

    async def _with_retries(self, request: Request, params: GenParams, count: int) -> list[Completion]:
        first_fault: float | None = None
        attempts = 0
        last = False  # the attempt after a wait cut to the budget
        retried = False
        try:
            while True:
                attempts += 1
                fault = await self._attempt(request, params, count, first_fault)
                if not isinstance(fault, _Fault):
                    return fault  # the completions
                now = self._clock()
                first_fault = now if first_fault is None else first_fault
                left = self.retry_budget - (now - first_fault)
                wait = None if last else self._wait(attempts, fault.retry_after, left)
                if wait is None:
                    raise ModelTransportError(
                        f"the model server at {self._url()} kept failing for {round(now - first_fault, 1):g} s "
                        f"({attempts} attempt{'' if attempts == 1 else 's'}, retry budget {self.retry_budget:g} s); "
                        f"last error: {fault.what}; "
                        "check that it is running and reachable, then re-run (finished work is kept)"
                    ) from None
                last = fault.retry_after is None and wait >= left / 2
                server_retried(first=not retried, stalled=fault.stalled)
                retried = True
                await (self._sleep or asyncio.sleep)(wait)
        finally:
            if retried:
                server_settled()

    async def _attempt(
        self, request: Request, params: GenParams, count: int, first_fault: float | None
    ) -> list[Completion] | _Fault:
        """One request: its completion, or the transient fault to retry. Once the call has
        faulted, the attempt ends with what the retry budget has left."""
        openai = self._openai
        left = math.inf if first_fault is None else self.retry_budget - (self._clock() - first_fault)
        limit = min(self.attempt_timeout, max(left, 0.0))
        deadline = asyncio.timeout(limit)
        started = time.perf_counter()
        try:
            try:
                async with deadline:
                    # The body as text, to tell a damaged answer from another API's.
                    body = await (self._post(request) if self._owns_client else self._post_with_sdk(request.body))
            except TimeoutError:
                if not deadline.expired():
                    raise
                why = ("what the retry budget had left" if limit < self.attempt_timeout
                       else "the attempt limit; raise it with --attempt-timeout or attempt_timeout")
                raise _Fault(f"no complete reply within {limit:.3g} s ({why})", stalled=True) from None
            completions = self._parsed(body, count, params)
            completions[0].seconds = time.perf_counter() - started
            return completions
        except _Fault as exc:
            return exc
        except openai.APIConnectionError as exc:  # refused, reset, timed out (APITimeoutError)
            return _Fault(_connection_fault(exc))
        except openai.APIStatusError as exc:
            if not _transient_status(exc.status_code):
                raise self._refusal(exc) from None
            response = exc.response
            return _Fault(f"{exc.status_code} {response.reason_phrase} ({self._quote(response.text)})",
                          _retry_after(response.headers))

    async def _post_with_sdk(self, kwargs: dict[str, Any]) -> str:
        raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
        return str(raw.http_response.text)

    async def _post(self, request: Request) -> str:
        """POST the request on our own session; the body of a 2xx answer. Faults are
        raised as the SDK's exceptions (a status error built by the SDK from the answer,
        APIConnectionError or APITimeoutError caused by aiohttp's), so they are classified
        as the SDK's own requests are."""
        import aiohttp

        session, proxy = await self._session()
        url = self._endpoint(request.path)
        # aiohttp's read timeout is the time without a byte, headers or body alike.
        stall = aiohttp.ClientTimeout(total=None, sock_connect=min(self._timeout, self.stall_timeout),
                                      sock_read=self.stall_timeout)
        try:
            async with session.post(url, data=json.dumps(request.body).encode(), timeout=stall, **proxy) as response:
                content = await self._read_capped(response)
                status, reason, charset = response.status, response.reason, response.charset
                headers = list(response.raw_headers)
        except aiohttp.ServerTimeoutError:
            raise _Fault(f"no byte from the server for {self.stall_timeout:g} s (the stall limit; raise it with "
                         "--stall-timeout or stall_timeout)", stalled=True) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            sent = self._httpx.Request("POST", url)
            if isinstance(exc, TimeoutError):
                raise self._openai.APITimeoutError(request=sent) from exc
            raise self._openai.APIConnectionError(request=sent) from exc
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

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes:
        """The reply's body, read in pieces; a _Fault as soon as it is larger than the limit."""
        cap = self.max_reply_bytes
        too_large = _Fault(f"a reply larger than {cap} bytes (the reply size limit; raise it with --max-reply-bytes "
                           "or max_reply_bytes)")
        if response.content_length is not None and response.content_length > cap:
            raise too_large
        pieces, size = [], 0
        async for piece in response.content.iter_chunked(1 << 16):
            size += len(piece)
            if size > cap:
                raise too_large
            pieces.append(piece)
        return b"".join(pieces)

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
        key = client.api_key if client.api_key and client.api_key != "not-needed" else None
        headers.update(self.provider.headers(key if self.provider.key_variables else client.api_key))
        if self.provider.prefix == "openai":  # the openai SDK's own settings, read from its environment
            if client.organization:
                headers["OpenAI-Organization"] = client.organization
            if client.project:
                headers["OpenAI-Project"] = client.project
        # HTTP(S)_PROXY and NO_PROXY are honoured as the SDK honours them, looked up once here:
        # aiohttp's trust_env would look them (and ~/.netrc) up on a thread for every request.
        proxy: dict[str, Any] = {}
        try:
            proxy["proxy"], proxy["proxy_auth"] = aiohttp.helpers.get_env_proxy_for_url(yarl.URL(self._endpoint("")))
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
        so calls that failed together do not all come back together, and cut to half of what
        the budget has left (the attempt after it then has the other half, and is the last)."""
        if left <= 0:
            return None
        if retry_after is not None:
            wait = min(retry_after, RETRY_AFTER_MAX_SECONDS)
            wait += self._random.uniform(0, 0.1 * wait)
            return wait if wait < left else None
        ceiling = min(RETRY_MAX_WAIT_SECONDS, self.retry_base_seconds * 2 ** (attempts - 1))
        return min(left / 2, ceiling / 2 + self._random.uniform(0, ceiling / 2))

    def _refusal(self, exc: Any) -> VeriloopError:
        """The error for an HTTP status that retrying would not change: the provider's
        own when its body says more than the status, else by the status."""
        openai = self._openai
        own = self.provider.refusal(exc.status_code, exc.response.text)
        if own is not None:
            return own
        if isinstance(exc, openai.BadRequestError):
            if "context" in str(exc).lower():
                return ContextOverflow(f"prompt does not fit the context of {self.name}")
            return VeriloopError(f"the server rejected the request: {_short(exc)}; change what it names (the model's "
                                 "settings or the strategy's options), then re-run")
        response = exc.response
        if isinstance(exc, openai.AuthenticationError):  # 401: the key itself
            return VeriloopError(
                f"the server at {self._url()} refused the API key ({exc.status_code} {response.reason_phrase}: "
                f"{self._quote(_server_message(response.text), 200)}); set "
                + " (or ".join(("VERILOOP_API_KEY", *self.provider.key_variables)) + ")" * len(self.provider.key_variables)
                + " or pass --api-key"
            )
        if isinstance(exc, openai.PermissionDeniedError):  # 403: its reason says what (a region, a plan, a model)
            return VeriloopError(
                f"the server at {self._url()} forbade the request ({exc.status_code} {response.reason_phrase}): "
                f"{self._quote(_server_message(response.text), 200)}; change what it names (the key's access to "
                f"{self.name!r}, the account, the region), then re-run"
            )
        if isinstance(exc, openai.NotFoundError):
            return VeriloopError(self._not_found(exc))
        return VeriloopError(
            f"the server at {self._url()} answered {exc.status_code} {response.reason_phrase} "
            f"({self._quote(response.text)}) to POST {self._path_url()}"
        )

    def _url(self) -> str:
        """The base URL as messages show it, without credentials."""
        url = self.base_url or str(getattr(self._client, "base_url", "")) or "the default OpenAI endpoint"
        return url_without_secrets(url).rstrip("/")

    def _masked(self, text: str) -> str:
        """`text` with the API key and the URL's secrets replaced by ***. A short secret is
        masked only where it stands alone, so that it does not eat ordinary words."""
        for secret in self._secrets:
            if len(secret) >= 8:
                text = text.replace(secret, "***")
            else:
                text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
        return text

    def _quote(self, body: str, limit: int = 80) -> str:
        """An excerpt of a server's text for a message, masked before it is cut (a key cut
        in half would no longer be found)."""
        return _excerpt(self._masked(body), limit)

    def _parsed(self, body: str, count: int, params: GenParams) -> list[Completion]:
        """The completions of a 2xx answer, by the provider. A damaged one (a body cut
        short or not valid JSON, an empty body, no choices) is a _Fault, to be retried; a
        VeriloopError quotes the body when the server answered something else (a web page,
        a JSON error, another API's JSON), which no retry would change."""
        try:
            data = json.loads(body)
        except ValueError:
            # JSON that does not parse is a damaged answer; anything else was never JSON.
            if not body.strip() or body.lstrip().startswith(("{", "[")):
                raise _Fault(f"a truncated or invalid JSON body ({self._quote(body)})") from None
            data = None
        try:
            if data is None:
                raise WrongShape(self.provider.answer_shape)
            completions = self.provider.replies(data, count, params)
        except Damaged as exc:
            raise _Fault(str(exc)) from None
        except WrongShape as exc:
            raise VeriloopError(
                f"the server at {self._url()} answered {self.provider.request_name} with {self._quote(body)}, "
                f"not {self.provider.answer_name} in JSON ({exc})" + self._v1_hint()
            ) from None
        if not 1 <= len(completions) <= count:
            raise VeriloopError(f"the {self.provider.prefix} provider made {len(completions)} completions of an "
                                f"answer to a request for {count}; a provider returns 1 to {count}")
        return completions

    def _not_found(self, exc: Any) -> str:
        """Unknown model only when the 404 says so; a 404 about the path (a base URL
        without /v1, say) names the URL that answered it."""
        body = exc.response.text
        if "model" in body.lower():
            return (f"the server does not know the model {self.name!r}; give --model {self.provider.prefix}/NAME with a "
                    f"name the server at {self._url()} serves")
        url = self._url()
        return (
            f"the server at {url} answered {exc.status_code} {exc.response.reason_phrase} ({self._quote(body)}) "
            f"to POST {self._path_url()}" + (self._v1_hint() or f"; check that it is {self.provider.api_name or 'the ' + self.provider.title}")
        )

    def _path_url(self) -> str:
        """The URL a generation request is posted to, as messages show it."""
        return self._url() + self.provider.path

    def _endpoint(self, path: str) -> str:
        """The URL of `path` below the base URL, the base URL's query kept (a key may be there)."""
        url = self._endpoints.get(path)
        if url is None:
            base = self._client.base_url
            url = self._endpoints[path] = str(base.copy_with(path=base.path.rstrip("/") + path))
        return url

    def _v1_hint(self) -> str:
        if self.provider.prefix not in ("openai", "vllm"):
            return ""
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


def _excerpt(body: str, limit: int = 80) -> str:
    text = " ".join(body.split())
    if not text:
        return "an empty body"
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _server_message(body: str) -> str:
    """The message of an OpenAI-style JSON error ({"error": {"message": ...}}), else the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return message if isinstance(message, str) and message.strip() else body


def _first_set(*variables: str) -> str | None:
    """The value of the first of these environment variables that is set and not empty."""
    return next((value for name in variables if (value := os.environ.get(name))), None)


def _host_url(value: str | None) -> str | None:
    """A provider's own base URL variable as a URL: such a variable often holds what its
    server binds to (OLLAMA_HOST=0.0.0.0:11434), without a scheme, and a client reaches
    0.0.0.0 at 127.0.0.1."""
    if not value or "://" in value:
        return value
    host, colon, port = value.partition(":")
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}{colon}{port}"


# The name the transport had when it spoke OpenAI's format only.
OpenAICompatModel = ServerModel
