"""The providers' batch APIs over HTTP: OpenAI's Files + Batches, Anthropic's Message
Batches. Each turns requests (built by the provider, `Provider.request`) into one batch,
looks at a batch, reads its results by custom_id, and finds the batch an intent made
(for an intent whose submit was cut by a kill).

Transport discipline as the live client's (veriloop.models.openai_compat, whose helpers
are used): aiohttp, faults (a connection error, 408, 429 after its Retry-After, 5xx,
Anthropic's 529) retried with jittered backoff within a retry budget, anything else one
line naming the fix; the key travels in the headers only and is masked in every message.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from ...errors import ModelTransportError, VeriloopError
from ..openai_compat import (
    RETRY_AFTER_MAX_SECONDS,
    RETRY_BASE_SECONDS,
    RETRY_BUDGET_SECONDS,
    RETRY_MAX_WAIT_SECONDS,
    _excerpt,
    _retry_after,
    _server_message,
    _transient_status,
    url_without_secrets,
)
from ..providers.base import Provider, Request

if TYPE_CHECKING:
    import aiohttp

# How far back, before an intent's time, a batch it may have made is looked for (clocks differ).
CLOCK_SLACK_SECONDS = 600.0


@dataclass
class Look:
    """A batch as the provider shows it: its state word, whether it has ended, its
    counts for the progress display, and why it failed as a whole (None: it did not)."""

    state: str
    ended: bool
    counts: str
    failure: str | None = None
    data: Any = None


@dataclass
class Outcome:
    """One custom_id's result: "ok" with the API's reply (`data`), "retry" (expired,
    cancelled by the window, a provider's fault: the call goes in the next batch), or
    "error" (a refusal no retry changes: `why`, one line)."""

    kind: str
    data: Any = None
    why: str = ""


FIX_AND_RE_RUN = "change what it names, then re-run (finished work is kept)"
PENDING = "pending"  # find(): a batch that may be the intent's has not ended yet


class Http:
    """JSON over HTTP with the live client's retry rules; one session per event loop."""

    def __init__(self, title: str, headers: dict[str, str], secret: str | None, *,
                 retry_budget: float | None = None, sleep: Callable[[float], Awaitable[Any]] | None = None) -> None:
        self.title = title
        self.headers = headers
        self.secret = secret
        self.retry_budget = RETRY_BUDGET_SECONDS if retry_budget is None else retry_budget
        self._sleep = sleep or asyncio.sleep
        self._random = random.Random()
        self._session: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession] | None = None

    def masked(self, text: str) -> str:
        return text.replace(self.secret, "***") if self.secret and len(self.secret) >= 4 else text

    async def send(self, method: str, url: str, *, body: Any = None, form: Any = None, text: bool = False) -> Any:
        """The parsed JSON (or the text) of a 2xx answer; faults retried; a refusal raised."""
        import aiohttp

        first_fault: float | None = None
        attempts = 0
        shown = url_without_secrets(url)
        while True:
            attempts += 1
            session = await self._open()
            try:
                data = form() if form is not None else None
                payload = json.dumps(body).encode() if body is not None else None
                headers = {"Content-Type": "application/json"} if payload is not None else {}
                async with session.request(method, url, data=data if data is not None else payload,
                                           headers=headers) as response:
                    status, raw = response.status, await response.read()
                    retry_after = _retry_after(response.headers)
                answer = raw.decode("utf-8", errors="replace")
                if 200 <= status < 300:
                    if text:
                        return answer
                    try:
                        return json.loads(answer)
                    except ValueError:
                        fault = f"a body that is not JSON ({self.masked(_excerpt(answer))})"
                elif _transient_status(status):  # 529 (Anthropic overloaded) among them
                    fault = f"{status} ({self.masked(_excerpt(_server_message(answer)))})"
                else:
                    raise self.refusal(method, shown, status, answer)
            except (aiohttp.ClientError, TimeoutError) as exc:
                fault, retry_after = f"{type(exc).__name__}", None
            now = time.monotonic()
            first_fault = now if first_fault is None else first_fault
            left = self.retry_budget - (now - first_fault)
            if retry_after is not None:
                wait = min(retry_after, RETRY_AFTER_MAX_SECONDS)
            else:
                ceiling = min(RETRY_MAX_WAIT_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempts - 1))
                wait = ceiling / 2 + self._random.uniform(0, ceiling / 2)
            if wait >= left:
                raise ModelTransportError(
                    f"{self.title} at {shown} kept failing for {now - first_fault:.1f} s ({attempts} attempts); "
                    f"last error: {fault}; check that it is reachable, then re-run (submitted batches are kept "
                    "in the run directory and collected by the re-run)")
            await self._sleep(wait)

    def refusal(self, method: str, url: str, status: int, answer: str) -> VeriloopError:
        message = self.masked(_excerpt(_server_message(answer), 200))
        if status == 401:
            return VeriloopError(f"{self.title} refused the API key ({status}: {message}); set VERILOOP_API_KEY (or "
                                 "the provider's own key variable) or pass --api-key")
        return VeriloopError(f"{self.title} answered {status} to {method} {url}: {message}")

    async def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session[0] is not loop or self._session[1].closed:
            session = aiohttp.ClientSession(headers=self.headers, timeout=aiohttp.ClientTimeout(total=600,
                                                                                                sock_read=120))
            self._session = (loop, session)
        return self._session[1]

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and session[0] is asyncio.get_running_loop():
            await session[1].close()


class BatchAPI:
    """One provider's batch API at a base URL."""

    name: ClassVar[str]

    def __init__(self, provider: Provider, base_url: str, http: Http) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.http = http

    async def submit(self, intent: str, lines: list[tuple[str, Request]]) -> str:
        """Send `lines` (custom_id, request) as one batch; its id."""
        raise NotImplementedError

    async def look(self, batch: str) -> Look:
        raise NotImplementedError

    async def results(self, batch: str, look: Look) -> dict[str, Outcome]:
        """Every result of an ended batch by custom_id."""
        raise NotImplementedError

    async def find(self, intent: str, since: float, count: int, known: set[str]) -> str | None:
        """The batch `intent` made (its id), None when it made none, PENDING when a batch
        that may be it has not ended yet (ask again later). `known`: batch ids the journal
        gives to other intents."""
        raise NotImplementedError


class OpenAIBatches(BatchAPI):
    """POST /files (purpose batch, JSONL), POST /batches with the intent id in its
    metadata; GET /batches/{id}; the output and error files' content."""

    name = "OpenAI Batch API"
    TERMINAL = ("completed", "failed", "expired", "cancelled")

    async def submit(self, intent: str, lines: list[tuple[str, Request]]) -> str:
        import aiohttp

        prefix = urlsplit(self.base_url).path.rstrip("/")
        paths = {request.path for _, request in lines}
        endpoint = prefix + paths.pop()
        content = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": endpoint, "body": request.body})
                          + "\n" for cid, request in lines).encode()

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", content, filename=f"veriloop-{intent}.jsonl", content_type="application/jsonl")
            return data

        uploaded = await self.http.send("POST", f"{self.base_url}/files", form=form)
        made = await self.http.send("POST", f"{self.base_url}/batches", body={
            "input_file_id": _field(uploaded, "id", "an uploaded file"), "endpoint": endpoint,
            "completion_window": "24h", "metadata": {"veriloop_intent": intent},
        })
        return _field(made, "id", "a batch")

    async def look(self, batch: str) -> Look:
        data = await self.http.send("GET", f"{self.base_url}/batches/{batch}")
        state = str(data.get("status")) if isinstance(data, dict) else "?"
        counts = data.get("request_counts") if isinstance(data, dict) else None
        shown = (f"{counts.get('completed', 0)}/{counts.get('total', 0)} done, {counts.get('failed', 0)} failed"
                 if isinstance(counts, dict) else "")
        failure = None
        if state == "failed":
            errors = (data.get("errors") or {}).get("data") or [] if isinstance(data.get("errors"), dict) else []
            reasons = [f"{e.get('code')}: {e.get('message')}" for e in errors if isinstance(e, dict)]
            failure = "; ".join(reasons[:2]) or "no reason given"
        elif state == "cancelled":
            failure = "it was cancelled (outside veriloop)"
        return Look(state, state in self.TERMINAL, shown, failure, data)

    async def results(self, batch: str, look: Look) -> dict[str, Outcome]:
        found: dict[str, Outcome] = {}
        for name in ("output_file_id", "error_file_id"):
            file_id = look.data.get(name) if isinstance(look.data, dict) else None
            if not isinstance(file_id, str):
                continue
            text = await self.http.send("GET", f"{self.base_url}/files/{file_id}/content", text=True)
            for line in _jsonl(text):
                cid = line.get("custom_id")
                if isinstance(cid, str):
                    found[cid] = self._outcome(line)
        return found

    def _outcome(self, line: dict[str, Any]) -> Outcome:
        response: dict[str, Any] = line["response"] if isinstance(line.get("response"), dict) else {}
        error: dict[str, Any] | None = line["error"] if isinstance(line.get("error"), dict) else None
        status = response.get("status_code")
        if error is None and status == 200:
            return Outcome("ok", response.get("body"))
        code = str((error or {}).get("code") or "")
        if code in ("batch_expired", "batch_cancelled") or (isinstance(status, int) and _transient_status(status)):
            return Outcome("retry", why=code or str(status))
        body = response.get("body")
        text = json.dumps(body) if body is not None else json.dumps(error)
        refused = self.provider.refusal(status, text) if isinstance(status, int) else None
        if refused is None and status == 404 and "model" in text.lower():
            refused = VeriloopError(f"{self.name}: the server does not know the model {self.provider.model!r}; give "
                                    f"--model {self.provider.prefix}/NAME with a name it serves")
        return Outcome("error", why=str(refused) if refused else
                       f"{self.name} refused a request ({status or code}: {_excerpt(_server_message(text), 200)}); "
                       f"{FIX_AND_RE_RUN}")

    async def find(self, intent: str, since: float, count: int, known: set[str]) -> str | None:
        after: str | None = None
        while True:
            page = await self.http.send("GET", f"{self.base_url}/batches?limit=100" + (f"&after={after}" if after else ""))
            items = page.get("data") if isinstance(page, dict) else None
            if not isinstance(items, list) or not items:
                return None
            older = True
            for item in items:
                if not isinstance(item, dict):
                    continue
                if (item.get("metadata") or {}).get("veriloop_intent") == intent:
                    return str(item["id"])
                made = item.get("created_at")
                older = older and isinstance(made, (int, float)) and made < since - CLOCK_SLACK_SECONDS
            if older or not page.get("has_more"):  # newest first: a page all older ends the search
                return None
            after = str(items[-1].get("id"))


class AnthropicBatches(BatchAPI):
    """POST /messages/batches with each request's params; GET /messages/batches/{id};
    the results_url JSONL. A batch carries no metadata, so every custom_id starts with
    the intent id, and `find` reads the results of the batches made since the intent."""

    name = "Anthropic Message Batches API"

    def _url(self, lines_path: str = "/messages") -> str:
        return f"{self.base_url}{lines_path}/batches"

    async def submit(self, intent: str, lines: list[tuple[str, Request]]) -> str:
        self._path = lines[0][1].path
        made = await self.http.send("POST", self._url(self._path), body={
            "requests": [{"custom_id": cid, "params": request.body} for cid, request in lines]})
        return _field(made, "id", "a message batch")

    def _batches(self) -> str:
        return self._url(getattr(self, "_path", self._default_path()))

    def _default_path(self) -> str:
        # The Messages path under the base URL, as the provider builds it.
        return "/messages" if urlsplit(self.base_url).path.rstrip("/").endswith("/v1") else "/v1/messages"

    async def look(self, batch: str) -> Look:
        data = await self.http.send("GET", f"{self._batches()}/{batch}")
        state = str(data.get("processing_status")) if isinstance(data, dict) else "?"
        counts = data.get("request_counts") if isinstance(data, dict) else None
        shown = ", ".join(f"{v} {k}" for k, v in counts.items() if v) if isinstance(counts, dict) else ""
        return Look(state, state == "ended", shown, None, data)

    async def results(self, batch: str, look: Look) -> dict[str, Outcome]:
        url = look.data.get("results_url") if isinstance(look.data, dict) else None
        if not isinstance(url, str):
            return {}
        found = {}
        for line in _jsonl(await self.http.send("GET", url, text=True)):
            cid, result = line.get("custom_id"), line.get("result")
            if isinstance(cid, str) and isinstance(result, dict):
                found[cid] = self._outcome(result)
        return found

    def _outcome(self, result: dict[str, Any]) -> Outcome:
        kind = result.get("type")
        if kind == "succeeded":
            return Outcome("ok", result.get("message"))
        if kind in ("expired", "canceled"):
            return Outcome("retry", why=str(kind))
        error: dict[str, Any] = result["error"] if isinstance(result.get("error"), dict) else {}
        inner: dict[str, Any] = error["error"] if isinstance(error.get("error"), dict) else error
        what = str(inner.get("type") or "")
        if what in ("overloaded_error", "api_error", "rate_limit_error", "timeout_error"):
            return Outcome("retry", why=what)
        text = json.dumps(error)
        refused = self.provider.refusal(400 if what == "invalid_request_error" else 500, text)
        return Outcome("error", why=str(refused) if refused else
                       f"{self.name} refused a request ({what}: {_excerpt(str(inner.get('message') or ''), 200)}); "
                       f"{FIX_AND_RE_RUN}")

    async def find(self, intent: str, since: float, count: int, known: set[str]) -> str | None:
        after: str | None = None
        pending = False
        while True:
            page = await self.http.send("GET", f"{self._batches()}?limit=100" + (f"&after_id={after}" if after else ""))
            items = page.get("data") if isinstance(page, dict) else None
            if not isinstance(items, list) or not items:
                break
            older = False
            for item in items:
                if not isinstance(item, dict) or item.get("id") in known:
                    continue
                made = _rfc3339(item.get("created_at"))
                if made is not None and made < since - CLOCK_SLACK_SECONDS:
                    older = True
                    continue
                counts = item.get("request_counts")
                if isinstance(counts, dict) and sum(v for v in counts.values() if isinstance(v, int)) != count:
                    continue  # another number of requests: not this intent's
                look = await self.look(str(item["id"]))
                if not look.ended:
                    pending = True
                    continue
                if any(cid.startswith(intent + "-") for cid in await self.results(str(item["id"]), look)):
                    return str(item["id"])
            if older or not page.get("has_more"):
                break
            after = str(items[-1].get("id"))
        return PENDING if pending else None


BATCH_APIS: dict[str, type[BatchAPI]] = {"openai": OpenAIBatches, "anthropic": AnthropicBatches}


def _field(data: Any, name: str, what: str) -> str:
    value = data.get(name) if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise VeriloopError(f"the batch API answered without the id of {what} ({_excerpt(json.dumps(data))})")
    return value


def _jsonl(text: str) -> list[dict[str, Any]]:
    lines = []
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _rfc3339(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
