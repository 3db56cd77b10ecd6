"""What every conformance stand-in shares: a stdlib HTTP server on 127.0.0.1 (port 0, polled
every 10 ms), the record of every request, the billing counters, the faults a test queues,
the deterministic replies and token counts, and the batch clock the test drives.

A stand-in plays one provider's documented wire format without the internet, so veriloop's
providers are tested end to end: it enforces that provider's rules and answers with its
exact shapes and error bodies. Invariants:
- Everything is deterministic: ids count up from 1, timestamps come from a fake clock that
  ticks once per object created (from EPOCH, or from `clock`: a client that compares the
  provider's times with its own is tested from the real time), token counts are word
  counts (3 more per message), and the text of sample i is `reply(messages, i)`.
- A prompt is billed once per request whatever the number of samples; completion tokens
  are billed per sample (reasoning included). Batch work is billed to `billed_batch` (and
  to its `Job.billed`), never to `billed`.
- A queued fault answers the next request (any path) instead of the normal answer; the
  request is still recorded.
- Batches move only when the test says so (`advance`, `finish_batches`, `expire`), or on
  every GET of a batch when `auto_advance` is set: no test waits on a clock.
- The key is never recorded: `requests` keeps the headers without it.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers import SERVER_REPLY, serving

Reply = Callable[[list[dict[str, Any]], int], str]
EPOCH = 1_750_000_000  # the fake clock's first second
PER_MESSAGE = 3  # tokens a message costs beyond its words (role and separators)


def default_reply(messages: list[dict[str, Any]], index: int) -> str:
    """SERVER_REPLY for every sample: every veriloop strategy parses it."""
    return SERVER_REPLY


def words(content: Any) -> list[str]:
    """The words of a message content: a string, or a list of blocks/parts with text."""
    if isinstance(content, str):
        return content.split()
    if isinstance(content, list):
        return [w for block in content if isinstance(block, dict) for w in str(block.get("text", "")).split()]
    return []


def first_words(text: str, count: int) -> str:
    """`text` cut after its first `count` words (its line breaks kept)."""
    if count <= 0:
        return ""
    spans = list(re.finditer(r"\S+", text))
    return text if len(spans) <= count else text[: spans[count - 1].end()]


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, str | None]:
    """`text` up to the earliest stop sequence in it, and that sequence (or None)."""
    found = [(text.index(s), s) for s in stops if s and s in text]
    if not found:
        return text, None
    at, stop = min(found)
    return text[:at], stop


def prompt_words(texts: list[Any]) -> list[str]:
    """The prompt as tokens: each message's words after a separator token, so that two
    prompts share a prefix exactly as far as their messages agree."""
    tokens: list[str] = []
    for content in texts:
        tokens += ["<msg>"] * PER_MESSAGE + words(content)
    return tokens


@dataclass
class Seen:
    """One request as the stand-in received it (the key header left out)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any  # parsed JSON, the multipart form (name -> str or (filename, bytes)), or None
    raw: bytes = b""


@dataclass
class Answer:
    status: int
    body: Any  # dict/list -> JSON; str/bytes -> as is with `content_type`
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def counters() -> dict[str, int]:
    return {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}


@dataclass
class Job:
    """One batch as submitted: its id, each line's custom_id and request body, its state
    (the provider's own word), its results by custom_id, and what it billed."""

    id: str
    custom_ids: list[str]
    lines: list[tuple[str, Any]]
    state: str
    created_at: int
    results: dict[str, Any] = field(default_factory=dict)
    billed: dict[str, int] = field(default_factory=counters)
    stamps: dict[str, int] = field(default_factory=dict)  # state -> when it was entered
    extra: dict[str, Any] = field(default_factory=dict)  # provider-specific (files, metadata)


class Standin:
    """The base of every stand-in: a context manager that serves while open.

    Subclasses set `version_path` (what `base_url` adds to the root, e.g. "/v1"),
    `key_headers` (headers never recorded) and implement `route`, `unauthorized`,
    `not_found` and, for batches, `step`, `end_expired` and `terminal`."""

    version_path = ""
    key_headers: tuple[str, ...] = ("authorization",)
    request_id_header = "x-request-id"
    terminal: tuple[str, ...] = ()  # batch states that no longer move
    caches_prefixes = False  # whether prompts report the longest prefix seen before as cached

    def __init__(self, *, key: str = "sk-standin-key", reply: Reply | None = None,
                 models: dict[str, Any] | None = None, auto_advance: bool = False,
                 prefix_cache: bool | None = None, clock: int = EPOCH) -> None:
        self.key = key
        if prefix_cache is not None:
            self.caches_prefixes = prefix_cache
        self.prompts: list[list[str]] = []
        self.reply: Reply = reply or default_reply
        self.models: dict[str, Any] = dict(models) if models is not None else dict(self.default_models())
        self.auto_advance = auto_advance
        self.requests: list[Seen] = []
        self.billed = counters()
        self.billed_batch = counters()
        self.faults: list[tuple[Any, ...]] = []
        self.batches: list[Job] = []
        self.lock = threading.RLock()
        self.port = 0
        self._ids: dict[str, int] = {}
        self._clock = clock
        self._stack = ExitStack()
        self.request_id = ""  # the id of the request being answered (some bodies repeat it)

    # ------------------------------------------------------------ serving

    def __enter__(self) -> Standin:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = standin.serve(self.command, self.path, dict(self.headers.items()), raw)
                data = answer.body if isinstance(answer.body, bytes) else (
                    answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode())
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = handle_one

            def log_message(self, *args: object) -> None:
                pass  # the test's output, not an access log

        self.port = self._stack.enter_context(serving(Handler))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What a user passes as --base-url."""
        return self.root + self.version_path

    def serve(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        url = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(url.query))
        lowered = {k.lower(): v for k, v in headers.items()}
        seen = Seen(method, url.path, {k: v for k, v in query.items() if k != "key"},
                    {k: v for k, v in lowered.items() if k not in self.key_headers}, self.parse(lowered, raw), raw)
        with self.lock:
            self.requests.append(seen)
            rid = self.request_id = self.next_id("req_")
            if self.faults:
                fault = self.faults.pop(0)
                answer = Answer(fault[0], fault[1], dict(fault[2]) if len(fault) > 2 else {})
            else:
                answer = self.unauthorized(lowered, query) or self.route(seen)
        answer.headers.setdefault(self.request_id_header, rid)
        return answer

    def parse(self, headers: dict[str, str], raw: bytes) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None  # the route answers the provider's own parse error

    # ------------------------------------------------------------ for subclasses

    def default_models(self) -> dict[str, Any]:
        raise NotImplementedError

    def unauthorized(self, headers: dict[str, str], query: dict[str, str]) -> Answer | None:
        raise NotImplementedError

    def route(self, seen: Seen) -> Answer:
        raise NotImplementedError

    def step(self, job: Job) -> None:
        """Moves `job` one state on."""
        raise NotImplementedError

    def end_expired(self, job: Job, done: int) -> None:
        """Ends `job` as expired, its first `done` lines answered, the rest expired."""
        raise NotImplementedError

    # ------------------------------------------------------------ shared helpers

    def next_id(self, prefix: str) -> str:
        self._ids[prefix] = self._ids.get(prefix, 0) + 1
        return f"{prefix}{self._ids[prefix]}"

    def tick(self) -> int:
        self._clock += 1
        return self._clock

    def bill(self, prompt: int, completion: int, job: Job | None = None) -> None:
        targets = [self.billed] if job is None else [self.billed_batch, job.billed]
        for counter in targets:
            counter["requests"] += 1
            counter["prompt_tokens"] += prompt
            counter["completion_tokens"] += completion

    def samples(self, messages: list[dict[str, Any]], count: int) -> list[str]:
        return [self.reply(messages, i) for i in range(count)]

    def cached(self, prompt: list[str]) -> int:
        """Tokens of the longest prefix of `prompt` that an earlier prompt began with (0
        unless the stand-in caches prefixes); remembers `prompt`."""
        if not self.caches_prefixes:
            return 0
        best = 0
        for earlier in self.prompts:
            same = 0
            for a, b in zip(earlier, prompt):
                if a != b:
                    break
                same += 1
            best = max(best, same)
        self.prompts.append(prompt)
        return best

    def job(self, batch_id: str) -> Job | None:
        return next((j for j in self.batches if j.id == batch_id), None)

    # ------------------------------------------------------------ the batch clock

    def advance(self, batch_id: str | None = None) -> None:
        """Moves one batch (or every batch) one state on."""
        with self.lock:
            for job in self.batches:
                if (batch_id is None or job.id == batch_id) and job.state not in self.terminal:
                    self.step(job)

    def finish_batches(self) -> None:
        """Moves every batch on until none can move."""
        with self.lock:
            while any(job.state not in self.terminal for job in self.batches):
                self.advance()

    def expire(self, batch_id: str, done: int = 0) -> None:
        """Lets `batch_id`'s window pass: its first `done` lines answered, the rest expired."""
        with self.lock:
            job = self.job(batch_id)
            assert job is not None and job.state not in self.terminal, f"no running batch {batch_id}"
            self.end_expired(job, done)


def call(url: str, body: Any = None, *, method: str | None = None, headers: dict[str, str] | None = None,
         data: bytes | None = None) -> tuple[int, Any, dict[str, str]]:
    """One raw HTTP request (what the tests pin the stand-ins with): (status, the body
    parsed when it is JSON else its text, headers lower-cased)."""
    payload = data if data is not None else (json.dumps(body).encode() if body is not None else None)
    all_headers = {"Content-Type": "application/json"} if data is None and body is not None else {}
    all_headers.update(headers or {})
    request = urllib.request.Request(url, data=payload, method=method or ("POST" if payload is not None else "GET"),
                                     headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, raw, got = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, raw, got = error.code, error.read(), error.headers
    text = raw.decode()
    parsed: Any = text
    if (got.get("Content-Type") or "").startswith("application/json"):
        parsed = json.loads(text)
    return status, parsed, {k.lower(): v for k, v in got.items()}


def iter_jsonl(text: str) -> Iterator[Any]:
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)
