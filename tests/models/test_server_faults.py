"""The OpenAI-compatible client against a fault-injecting server on 127.0.0.1 (issue 15,
items 2-4): every transient fault is retried until the good completion arrives, and none
of it reaches the result or the cache; permanent answers stop at once; the retry budget
ends in one line naming the server; requests in flight stay within the concurrency;
different servers never share cached answers unless declared one deployment."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import sqlite3
import struct
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from helpers import the_error, veriloop
from servers import StandinServer

from veriloop.domains import get_domain
from veriloop.errors import ModelTransportError, VeriloopError
from veriloop.models import CachedModel, CallCache, GenParams
from veriloop.models.openai_compat import OpenAICompatModel, _retry_after, normalise_url
from veriloop.models.providers.openai import _logprobs
from veriloop.runs.identity import check_same_run
from veriloop.runs.runner import load_trajectories, run_experiment
from veriloop.strategies import parse_strategy

QUESTION = [{"role": "user", "content": "What is 6 times 4?"}]
GOOD = "Answer: 24"


def completion(text: str) -> bytes:
    return json.dumps({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "default",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }).encode()


# Each kind of answer: (status, headers, body); "reset" closes the connection instead.
# Every fault carries the word FAULT, so a test can tell whether any of it leaked.
ANSWERS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "invalid_json": (200, {"Content-Type": "application/json"},
                     b'{"choices": [{"message": {"content": "FAULT invalid"}}]}} trailing'),
    "truncated_json": (200, {"Content-Type": "application/json"}, completion("FAULT truncated")[:60]),
    "empty_body": (200, {"Content-Type": "application/json"}, b""),
    "empty_choices": (200, {"Content-Type": "application/json"},
                      b'{"id": "FAULT", "object": "chat.completion", "choices": [], "usage": null}'),
    "rate_limited": (429, {"Content-Type": "application/json", "Retry-After": "1"},
                     b'{"error": {"message": "FAULT slow down", "type": "rate_limit"}}'),
    "rate_limited_long": (429, {"Content-Type": "application/json", "Retry-After": "3600"},
                          b'{"error": {"message": "FAULT come back in an hour"}}'),
    "unavailable": (503, {"Content-Type": "text/plain"}, b"FAULT upstream overloaded"),
    "bad_gateway": (502, {"Content-Type": "text/html"}, b"<html>FAULT bad gateway</html>"),
    "web_page": (200, {"Content-Type": "text/html"}, b"<html><body>FAULT a login page</body></html>"),
    "other_api": (200, {"Content-Type": "application/json"}, b'{"result": "FAULT", "status": "done"}'),
    "unauthorized": (401, {"Content-Type": "application/json"},
                     b'{"error": {"message": "Incorrect API key provided: KEY", "code": "invalid_api_key"}}'),
    "forbidden_region": (403, {"Content-Type": "application/json"},
                         b'{"error": {"message": "Country, region, or territory not supported", '
                         b'"code": "unsupported_country_region_territory"}}'),
    "echo_key": (503, {"Content-Type": "text/plain"}, b"FAULT overloaded; your request had Authorization: KEY"),
    "large": (200, {"Content-Type": "application/json"}, completion("x" * 5000)),
}
# Answers the handler makes itself: "never" holds the request unanswered until the server
# stops; "dribble" sends a completion one byte at a time (every `dribble` seconds);
# "endless" sends a body without a length that never ends (until the client leaves).


class FaultServer:
    """A chat completion server answering request i with script[i] (then `then`), and
    the good completion for "ok". It records when each request arrived and the most
    requests it held at once; `latency` keeps each request in flight that long."""

    def __init__(self, script: list[str], then: str = "ok", latency: float = 0.0, text: str = GOOD,
                 dribble: float = 0.05) -> None:
        self.script, self.then, self.latency, self.text, self.dribble = script, then, latency, text, dribble
        self.arrivals: list[float] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.stopping = threading.Event()
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        fault_server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fault_server.lock:
                    index = len(fault_server.arrivals)
                    fault_server.arrivals.append(time.monotonic())
                    fault_server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fault_server.paths.append(self.path)
                    fault_server.in_flight += 1
                    fault_server.max_in_flight = max(fault_server.max_in_flight, fault_server.in_flight)
                try:
                    time.sleep(fault_server.latency)
                finally:
                    # Out of flight before the reply is written: once the client has the
                    # reply it may send its next request, which must not find this one
                    # still counted because this thread was not scheduled in between.
                    with fault_server.lock:
                        fault_server.in_flight -= 1
                script = fault_server.script
                self.answer(script[index] if index < len(script) else fault_server.then)

            def answer(self, kind: str) -> None:
                if kind == "reset":
                    # Linger 0: closing sends a TCP reset, not an orderly end.
                    self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.request.close()
                    self.close_connection = True
                    return
                if kind in ("never", "dribble", "endless"):
                    self.slowly(kind)
                    return
                status, headers, body = (
                    (200, {"Content-Type": "application/json"}, completion(fault_server.text))
                    if kind == "ok" else ANSWERS[kind]
                )
                body = body.replace(b"KEY", self.headers.get("Authorization", "").removeprefix("Bearer ").encode())
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def slowly(self, kind: str) -> None:
                self.close_connection = True
                if kind == "never":
                    fault_server.stopping.wait()
                    return
                body = completion(fault_server.text)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if kind == "dribble":
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if kind == "dribble":
                        for byte in body:
                            if fault_server.stopping.wait(fault_server.dribble):
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                    while kind == "endless" and not fault_server.stopping.is_set():
                        self.wfile.write(b" " * 65536)
                except OSError:  # the client left, as it should
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(StandinServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a reset connection is the point, not a server error to print

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # Polled every 10 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    @property
    def requests(self) -> int:
        return len(self.arrivals)


class FakeTime:
    """The client's clock and sleep: a wait is recorded and moves the clock, at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def client(url: str, fake: FakeTime | None = None, **options: Any) -> OpenAICompatModel:
    fake = fake or FakeTime()
    return OpenAICompatModel("default", base_url=url, api_key="k", sleep=fake.sleep, clock=fake.clock, **options)


def generate(model: Any, params: GenParams | None = None) -> list[Any]:
    async def go() -> list[Any]:
        try:
            return await model.generate(QUESTION, params or GenParams(max_tokens=8))
        finally:
            await model.aclose()

    return asyncio.run(go())


def cached_texts(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [json.loads(blob)["text"] for (blob,) in db.execute("SELECT completion FROM samples ORDER BY idx")]


# ---------------------------------------------------------------- transient faults are retried


def retried_until_good(tmp_path: Path, script: list[str]) -> tuple[FaultServer, FakeTime]:
    """Run one call through the cache against `script`; check it returns the good
    completion and that neither it nor the cache holds anything of the faults."""
    fake = FakeTime()
    with FaultServer(script) as server:
        model = CachedModel(client(server.url, fake), CallCache(tmp_path / "calls.sqlite"))
        (result,) = generate(model)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == (GOOD, 7, 3)
    assert "FAULT" not in json.dumps(result.to_json())
    assert cached_texts(tmp_path / "calls.sqlite") == [GOOD]
    assert server.requests == len(script) + 1
    assert len(fake.waits) == len(script)
    return server, fake


def test_invalid_json_is_retried(tmp_path):
    retried_until_good(tmp_path, ["invalid_json", "invalid_json"])


def test_truncated_json_and_an_empty_body_are_retried(tmp_path):
    retried_until_good(tmp_path, ["truncated_json", "empty_body"])


def test_empty_choices_are_retried(tmp_path):
    retried_until_good(tmp_path, ["empty_choices"])


def test_a_connection_reset_is_retried(tmp_path):
    retried_until_good(tmp_path, ["reset", "reset"])


def test_5xx_is_retried_with_jittered_exponential_backoff(tmp_path):
    _, fake = retried_until_good(tmp_path, ["unavailable", "bad_gateway", "unavailable"])
    # retry_base_seconds 0.5: waits in [0.25, 0.5], [0.5, 1], [1, 2] (half fixed, half jitter).
    for i, wait in enumerate(fake.waits):
        assert 0.25 * 2**i <= wait <= 0.5 * 2**i, fake.waits


def test_429_waits_as_long_as_retry_after_says_capped(tmp_path):
    _, fake = retried_until_good(tmp_path, ["rate_limited", "rate_limited_long"])
    # Retry-After 1 is honoured (plus up to 10% jitter); 3600 is capped at 60 s.
    assert 1.0 <= fake.waits[0] <= 1.1
    assert 60.0 <= fake.waits[1] <= 66.0


def test_retry_after_as_milliseconds_seconds_or_an_http_date():
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert _retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert _retry_after({"retry-after": " 2 "}) == 2.0
    assert 25 <= (_retry_after({"retry-after": future}) or 0) <= 30
    assert _retry_after({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}) == 0.0
    assert _retry_after({"retry-after": "soon"}) is None
    assert _retry_after({}) is None


@pytest.mark.parametrize(("kind", "described"), [
    ("reset", "APIConnectionError (ClientOSError: [Errno 104] Connection reset by peer)"),
    ("invalid_json", """a truncated or invalid JSON body ('{"choices": [{"message": {"content": "FAULT invalid"}}]}} """
                     """trailing')"""),
    ("truncated_json", """a truncated or invalid JSON body ('{"id": "c1", "object": "chat.completion", "created": 0, """
                       """"mod')"""),
    ("empty_body", "a truncated or invalid JSON body (an empty body)"),
    ("empty_choices", "a chat completion with no choices"),
    ("rate_limited", """429 Too Many Requests ('{"error": {"message": "FAULT slow down", "type": "rate_limit"}}')"""),
    ("bad_gateway", "502 Bad Gateway ('<html>FAULT bad gateway</html>')"),
])
def test_each_fault_is_transient_and_named_in_the_last_error(kind, described):
    with FaultServer([kind]) as server:
        with pytest.raises(ModelTransportError) as info:
            generate(client(server.url, retry_budget=0))  # no retry: the first fault ends the call
    assert str(info.value) == (
        f"the model server at {server.url} kept failing for 0 s (1 attempt, retry budget 0 s); last error: "
        f"{described}; check that it is running and reachable, then re-run (finished work is kept)"
    )


# ---------------------------------------------------------------- permanent answers stop at once


@pytest.mark.parametrize(("kind", "body"), [
    ("web_page", "'<html><body>FAULT a login page</body></html>'"),
    ("other_api", """'{"result": "FAULT", "status": "done"}'"""),
])
def test_a_web_page_or_another_apis_json_is_not_retried(tmp_path, kind, body):
    fake = FakeTime()
    with FaultServer([kind]) as server:
        model = CachedModel(client(server.url, fake), CallCache(tmp_path / "calls.sqlite"))
        with pytest.raises(VeriloopError) as info:
            generate(model)
    assert not isinstance(info.value, ModelTransportError)
    assert str(info.value) == (
        f"the server at {server.url} answered a chat completion request with {body}, "
        'not a chat completion in JSON ({"choices": [{"message": {"content": ...}}], ...})'
    )
    assert (server.requests, fake.waits, cached_texts(tmp_path / "calls.sqlite")) == (1, [], [])


# ---------------------------------------------------------------- the budget


def test_an_exhausted_budget_stops_with_one_line_naming_the_server_and_the_last_error(tmp_path):
    fake = FakeTime()
    with FaultServer([], then="unavailable") as server:
        model = CachedModel(client(server.url, fake, retry_budget=10), CallCache(tmp_path / "calls.sqlite"))
        with pytest.raises(ModelTransportError) as info:
            generate(model)
    message = str(info.value)
    assert "\n" not in message
    assert message == (
        f"the model server at {server.url} kept failing for {round(sum(fake.waits), 1):g} s ({server.requests} "
        "attempts, retry budget 10 s); last error: 503 Service Unavailable ('FAULT upstream overloaded'); check that "
        "it is running and reachable, then re-run (finished work is kept)"
    )
    # The last wait is cut to half of what the budget has left: the last attempt has the
    # other half (an attempt never outlives the budget), and the budget is used to its end.
    assert sum(fake.waits[:-1]) + 2 * fake.waits[-1] == pytest.approx(10)
    assert server.requests == len(fake.waits) + 1 >= 5
    assert cached_texts(tmp_path / "calls.sqlite") == []


def test_a_zero_budget_does_not_retry_and_names_a_refused_connection():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(ModelTransportError, match=rf"^the model server at {url} kept failing for 0 s \(1 attempt, "
                       r"retry budget 0 s\); last error: APIConnectionError \(ClientConnectorError: .*\); check that"):
        generate(client(url, retry_budget=0))


def test_a_run_stopped_by_the_budget_keeps_every_finished_trajectory(tmp_path):
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=3)
    with FaultServer(["ok"], then="unavailable") as server:
        model = CachedModel(client(server.url, retry_budget=0), CallCache(tmp_path / "calls.sqlite"))

        async def go() -> None:
            try:
                await run_experiment(model, domain, [parse_strategy("standard")], instances, tmp_path / "run",
                                     concurrency=1)
            finally:
                await model.aclose()

        with pytest.raises(ModelTransportError, match=f"^the model server at {server.url} kept failing"):
            asyncio.run(go())
    kept = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert [t.instance_id for t in kept] == [instances[0].id]
    assert cached_texts(tmp_path / "calls.sqlite") == [GOOD]
    for path in (tmp_path / "run").iterdir():
        assert b"FAULT" not in path.read_bytes(), path


# ---------------------------------------------------------------- requests in flight


def test_requests_in_flight_never_exceed_the_concurrency_counting_every_sample():
    with FaultServer([], latency=0.2) as server:
        model = client(server.url, concurrency=3)
        params = GenParams(max_tokens=8, temperature=1.0, seed=1)

        async def go() -> list[list[Any]]:
            try:
                return list(await asyncio.gather(model.generate(QUESTION, params.with_(n=8)),
                                                 model.generate(QUESTION, params.with_(n=5))))
            finally:
                await model.aclose()

        eight, five = asyncio.run(go())
    assert (len(eight), len(five), server.requests) == (8, 5, 13)
    assert server.max_in_flight == 3


# ---------------------------------------------------------------- the transport


def test_a_model_serves_one_event_loop_after_another_and_leaves_no_session_open():
    with FaultServer([]) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = client(server.url)
        for _ in range(2):  # each asyncio.run closes the session it made when its loop shuts down
            (result,) = asyncio.run(model.generate(QUESTION, GenParams(max_tokens=8)))
            assert result.text == GOOD
        (result,) = generate(model)  # and aclose closes the current one
        assert result.text == GOOD
        del model
        gc.collect()
    assert server.requests == 3
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert server.headers[0]["authorization"] == "Bearer k"


def test_a_callers_openai_client_is_used_as_given_and_left_open():
    import openai

    with FaultServer([]) as server:
        given = openai.AsyncOpenAI(base_url=server.url, api_key="theirs", max_retries=0,
                                   default_headers={"X-Caller": "yes"})
        (result,) = generate(OpenAICompatModel("default", client=given))
        assert result.text == GOOD and not given.is_closed()
        asyncio.run(given.close())
    assert (server.headers[0]["x-caller"], server.headers[0]["authorization"]) == ("yes", "Bearer theirs")


def test_logprobs_are_read_from_the_completion():
    top = [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.5}]
    choice = {"logprobs": {"content": [{"token": "A", "logprob": -0.1, "bytes": None, "top_logprobs": top}]}}
    (only,) = _logprobs(choice) or []
    assert (only.token, only.logprob, only.top) == ("A", -0.1, {"A": -0.1, "B": -2.5})
    assert _logprobs({"logprobs": None}) is None
    assert _logprobs({"logprobs": {"content": []}}) == []


# ---------------------------------------------------------------- cache identity


def test_server_urls_are_normalised():
    assert normalise_url("HTTP://LocalHost:80//v1/") == "http://localhost/v1"
    assert normalise_url("https://user:secret@API.Example.com:443/V1") == "https://api.example.com/V1"
    assert normalise_url("https://api.example.com:8443/v1?x=1") == "https://api.example.com:8443/v1?x=1"
    assert normalise_url("http://[::1]:8000/v1/") == "http://[::1]:8000/v1"
    assert normalise_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    model = OpenAICompatModel("default", base_url="HTTP://LocalHost:80/v1/", api_key="k")
    assert model.identity == "default@http://localhost/v1"
    named = OpenAICompatModel("default", base_url="http://a:1/v1", api_key="k", deployment=" prod ")
    assert named.identity == "default@deployment:prod"


def test_two_servers_with_one_model_name_share_cache_entries_only_as_one_deployment(tmp_path):
    with FaultServer([], text="Answer: from A") as a, FaultServer([], text="Answer: from B") as b:

        def ask(url: str, cache: Path, deployment: str | None = None) -> str:
            model = CachedModel(client(url, deployment=deployment), CallCache(cache))
            (result,) = generate(model)
            return str(result.text)

        apart = tmp_path / "apart.sqlite"
        assert (ask(a.url, apart), ask(b.url, apart), ask(a.url + "/", apart)) == (
            "Answer: from A", "Answer: from B", "Answer: from A")
        assert (a.requests, b.requests) == (1, 1)  # the trailing slash is the same server

        shared = tmp_path / "shared.sqlite"
        assert (ask(a.url, shared, "prod"), ask(b.url, shared, "prod")) == ("Answer: from A", "Answer: from A")
        assert (a.requests, b.requests) == (2, 1)


def test_a_run_recorded_with_the_name_alone_resumes_on_the_same_server(tmp_path):
    old = {"model": "openai/default", "base_url": "http://h:1/v1", "model_identity": "default"}
    same = {"model": "openai/default", "base_url": "http://h:1/v1", "model_identity": "default@http://h:1/v1"}
    check_same_run(tmp_path, old, same)
    other = {"model": "openai/default", "base_url": "http://g:1/v1", "model_identity": "default@http://g:1/v1"}
    with pytest.raises(VeriloopError, match=r"holds a run made with model openai/default \(default\), not "
                       r"openai/default \(default@http://g:1/v1\)"):
        check_same_run(tmp_path, old, other)


def test_a_deployment_or_retry_budget_is_refused_for_a_local_model():
    from veriloop.models import load_backend

    with pytest.raises(VeriloopError, match="^a deployment name applies to a server model"):
        load_backend("smollm2-135m", deployment="prod")
    with pytest.raises(VeriloopError, match="^a retry budget applies to a server model"):
        load_backend("smollm2-135m", retry_budget=5)


# ---------------------------------------------------------------- the options: CLI and experiment file


def test_the_cli_stops_after_its_retry_budget_with_one_line_and_keeps_finished_work(tmp_path):

    with FaultServer(["ok"], then="unavailable") as server:
        proc = veriloop("run", "--model", "openai/default", "--base-url", server.url, "-n", "2", "-s", "standard",
                        "--concurrency", "1", "--retry-budget", "0", "--no-cache", "--out", str(tmp_path / "run"),
                        home=tmp_path / "home")
    assert the_error(proc) == (
        f"error: the model server at {server.url} kept failing for 0 s (1 attempt, retry budget 0 s); last error: "
        "503 Service Unavailable ('FAULT upstream overloaded'); check that it is running and reachable, then re-run "
        "(finished work is kept)"
    )
    assert len(load_trajectories(tmp_path / "run" / "trajectories.jsonl")) == 1


def test_the_cli_deployment_flag_lets_two_urls_share_cached_answers(tmp_path):

    def run(url: str, out: str, *deployment: str) -> str:
        proc = veriloop("run", "--model", "openai/default", "--base-url", url, "-n", "1", "-s", "standard",
                        *deployment, "--out", str(tmp_path / out), home=tmp_path / "home")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    with FaultServer([]) as a, FaultServer([]) as b:
        assert "1 backend calls" in run(a.url, "a")
        assert "1 backend calls" in run(b.url, "b")  # another server: its own cache entries
        assert "1 backend calls" in run(a.url, "a-prod", "--deployment", "prod")
        assert "0 backend calls" in run(b.url, "b-prod", "--deployment", "prod")
    assert (a.requests, b.requests) == (2, 1)


def test_an_experiment_model_entry_takes_a_deployment_and_a_retry_budget(tmp_path):
    from veriloop.experiment.engine import load_models
    from veriloop.experiment.schema import Experiment

    experiment = Experiment.model_validate({
        "name": "e", "concurrency": 3, "domains": [{"name": "game24"}], "strategies": ["standard"],
        "models": {"main": {"id": "openai/default", "base_url": "http://127.0.0.1:9/v1", "deployment": "prod",
                            "retry_budget": 30}},
    })
    model = load_models(experiment, ["main"], cache_path=tmp_path / "calls.sqlite")["main"]
    assert isinstance(model, CachedModel) and isinstance(model.inner, OpenAICompatModel)
    # The experiment's concurrency bounds the server's requests in flight when the entry sets none.
    assert (model.identity, model.inner.retry_budget, model.inner.preferred_concurrency) == (
        "default@deployment:prod", 30, 3)
    asyncio.run(model.aclose())


# ---------------------------------------------------------------- a server that stalls (issue 25, item 5)


def test_a_request_never_answered_is_abandoned_at_the_stall_limit():
    with FaultServer(["never"]) as server:
        with pytest.raises(ModelTransportError) as info:
            generate(client(server.url, retry_budget=0, stall_timeout=0.2))
    assert str(info.value) == (
        f"the model server at {server.url} kept failing for 0 s (1 attempt, retry budget 0 s); last error: no byte "
        "from the server for 0.2 s (the stall limit; raise it with --stall-timeout or stall_timeout); check that it "
        "is running and reachable, then re-run (finished work is kept)"
    )


def test_a_server_dribbling_bytes_is_abandoned_at_the_attempt_limit():
    # A byte every 0.02 s never trips the stall limit; the attempt's total limit ends it.
    with FaultServer(["dribble"], dribble=0.02) as server:
        with pytest.raises(ModelTransportError, match=r"; last error: no complete reply within 0\.3 s \(the attempt "
                           r"limit; raise it with --attempt-timeout or attempt_timeout\); check that"):
            generate(client(server.url, retry_budget=0, stall_timeout=5, attempt_timeout=0.3))


def test_an_attempt_after_a_fault_never_outlives_the_retry_budget():
    # 0.4 s of budget: the backoff (at least 0.25 s) is cut to half of it, and the attempt
    # after it, the last, has the other half, however long the server would take.
    fake = FakeTime()
    with FaultServer(["unavailable", "never"]) as server:
        with pytest.raises(ModelTransportError) as info:
            generate(client(server.url, fake, retry_budget=0.4))
    assert fake.waits == [pytest.approx(0.2)]
    assert str(info.value) == (
        f"the model server at {server.url} kept failing for 0.2 s (2 attempts, retry budget 0.4 s); last error: "
        "no complete reply within 0.2 s (what the retry budget had left); check that it is running and reachable, "
        "then re-run (finished work is kept)"
    )


@pytest.mark.parametrize("kind", ["large", "endless"])
def test_a_reply_larger_than_the_limit_is_a_fault_read_no_further(kind):
    # "large" declares its length; "endless" never ends, so only a read that stops at the
    # limit returns (the attempt limit is the guard, and would name itself).
    with FaultServer([kind]) as server:
        with pytest.raises(ModelTransportError, match=r"; last error: a reply larger than 1000 bytes \(the reply size "
                           r"limit; raise it with --max-reply-bytes or max_reply_bytes\); check that"):
            generate(client(server.url, retry_budget=0, max_reply_bytes=1000, attempt_timeout=20))


def test_a_reply_within_the_limit_is_read_whole():
    with FaultServer(["large"]) as server:
        (result,) = generate(client(server.url, max_reply_bytes=6000))
    assert result.text == "x" * 5000


def test_retries_show_on_the_progress_line_until_the_answer_comes():
    import io

    from rich.console import Console

    from veriloop.progress import ProgressReporter

    printed = io.StringIO()
    reporter = ProgressReporter("run", live=False, console=Console(file=printed, width=200), now=lambda: 0.0)
    seen: list[str] = []
    fake = FakeTime()

    async def sleep(seconds: float) -> None:
        seen.append(reporter.status())
        await fake.sleep(seconds)

    with FaultServer(["unavailable", "never", "reset"]) as server:
        # The stall limit is real time: the replies that do come must beat it on a loaded
        # machine too (at 0.2 s one that came late would count as a second stall).
        model = OpenAICompatModel("default", base_url=server.url, api_key="k", sleep=sleep, clock=fake.clock,
                                  stall_timeout=1.0)

        async def go() -> list[Any]:
            with reporter:
                reporter.update(0, 1)
                try:
                    return await model.generate(QUESTION, GenParams(max_tokens=8))
                finally:
                    await model.aclose()

        (result,) = asyncio.run(go())
    assert result.text == GOOD
    assert [line.split(", 0 calls")[0] for line in seen] == [
        "0/1, waiting for the server: 1 retry, 0 stalled",
        "0/1, waiting for the server: 2 retries, 1 stalled",
        "0/1, waiting for the server: 3 retries, 1 stalled",
    ]
    assert "waiting" not in reporter.status()  # the answer came
    # Without a live bar, one line when the waiting starts (then at most every 10 s).
    assert [line for line in printed.getvalue().splitlines() if "waiting" in line] == [
        "run: waiting for the server: 1 retry, 0 stalled"
    ]


def test_the_limits_are_refused_unless_positive():
    for options, message in [
        ({"stall_timeout": 0}, "the stall timeout must be a number of seconds above 0, not 0"),
        ({"attempt_timeout": float("inf")}, "the attempt timeout must be a number of seconds above 0, not inf"),
        ({"max_reply_bytes": 0}, "the reply size limit must be a number of bytes, at least 1, not 0"),
    ]:
        with pytest.raises(VeriloopError, match=f"^{message}$"):
            client("http://127.0.0.1:9/v1", **options)


def test_the_cli_takes_the_stall_limit(tmp_path):

    with FaultServer([], then="never") as server:
        proc = veriloop("run", "--model", "openai/default", "--base-url", server.url, "-n", "1", "-s", "standard",
                        "--retry-budget", "0", "--stall-timeout", "0.2", "--no-cache", "--out", str(tmp_path / "run"),
                        home=tmp_path / "home")
    assert the_error(proc) == (
        f"error: the model server at {server.url} kept failing for 0 s (1 attempt, retry budget 0 s); last error: no "
        "byte from the server for 0.2 s (the stall limit; raise it with --stall-timeout or stall_timeout); check that "
        "it is running and reachable, then re-run (finished work is kept)"
    )


# ---------------------------------------------------------------- bad base URLs (issue 25, items 8 and 9)


OPTION = "(--base-url, an experiment's base_url or VERILOOP_BASE_URL)"


@pytest.mark.parametrize(("url", "why"), [
    ("file:///etc/passwd", "is a file:// URL; a model server is reached over http:// or https://, "
                           "e.g. http://localhost:8000/v1"),
    ("ftp://example.com/v1", "is a ftp:// URL; a model server is reached over http:// or https://, "
                             "e.g. http://localhost:8000/v1"),
    ("localhost:8000/v1", "has no scheme; write it with http:// or https://, e.g. http://localhost:8000/v1"),
    ("http://[::1", "is malformed (Invalid IPv6 URL); write it as http://HOST:PORT/PATH, e.g. http://localhost:8000/v1"),
    ("http://127.0.0.1:99999/v1", "is malformed (Port out of range 0-65535); write it as http://HOST:PORT/PATH, "
                                  "e.g. http://localhost:8000/v1"),
    ("http://127.0.0.1:eighty/v1", "is malformed (Port could not be cast to integer value as 'eighty'); write it as "
                                   "http://HOST:PORT/PATH, e.g. http://localhost:8000/v1"),
    ("http:///v1", "has no host; write it as http://HOST:PORT/PATH, e.g. http://localhost:8000/v1"),
])
def test_a_base_url_no_request_could_use_is_refused_at_once_in_one_line(url, why):
    with pytest.raises(VeriloopError) as info:
        OpenAICompatModel("default", base_url=url, api_key="k")
    assert str(info.value) == f"the base URL {url!r} {OPTION} {why}"


def test_the_cli_refuses_a_scheme_less_base_url_without_retrying(tmp_path):

    proc = veriloop("run", "--model", "openai/default", "--base-url", "localhost:8000/v1", "-n", "1", "-s", "standard",
                    "--out", str(tmp_path / "run"), home=tmp_path / "home")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        f"error: the base URL 'localhost:8000/v1' {OPTION} has no scheme; write it with http:// or https://, "
        "e.g. http://localhost:8000/v1"
    ]


# ---------------------------------------------------------------- secrets in a base URL (issue 25, item 3)


def test_credentials_in_a_base_url_are_refused_without_showing_them():
    with pytest.raises(VeriloopError) as info:
        OpenAICompatModel("default", base_url="http://alice:PASSWORD123@127.0.0.1:9/v1?api-key=SECRET123", api_key="k")
    assert str(info.value) == (
        f"the base URL 'http://127.0.0.1:9/v1' {OPTION} holds a user name or password (USER:PASSWORD@); remove them "
        "from the URL and give the key with --api-key, VERILOOP_API_KEY or an experiment's api_key_env (a key is "
        "never recorded)"
    )


def test_secret_query_parameters_are_kept_out_of_every_recorded_url():
    from veriloop.models.openai_compat import url_without_secrets

    url = "https://Api.Example.com/v1?api-version=2024-06-01&api-key=S1&key=S2&access_token=S3&sig=S4&X-Api-Key=S5#f"
    assert url_without_secrets(url) == "https://Api.Example.com/v1?api-version=2024-06-01"
    assert url_without_secrets("http://u:p@h:8/v1?token=t") == "http://h:8/v1"
    assert url_without_secrets("http://u:p@[::1/v1?token=t") == "http://[::1/v1"  # too broken to parse
    assert normalise_url(url) == "https://api.example.com/v1?api-version=2024-06-01"
    model = OpenAICompatModel("default", base_url="http://127.0.0.1:9/v1?api_key=SECRET&api-version=1", api_key="k")
    assert model.identity == "default@http://127.0.0.1:9/v1?api-version=1"


def test_a_key_echoed_by_the_server_is_masked_in_every_message():
    key = "sk-test-0123456789abcdef"
    with FaultServer(["echo_key"]) as server:
        with pytest.raises(ModelTransportError) as info:
            generate(OpenAICompatModel("default", base_url=server.url, api_key=key, retry_budget=0))
    assert str(info.value) == (
        f"the model server at {server.url} kept failing for 0 s (1 attempt, retry budget 0 s); last error: 503 Service "
        "Unavailable ('FAULT overloaded; your request had Authorization: ***'); check that it is running and "
        "reachable, then re-run (finished work is kept)"
    )
    # A secret in the URL's query is masked as the key is, and the URL is shown without it.
    with FaultServer(["unauthorized"]) as server:
        with pytest.raises(VeriloopError) as info:
            generate(OpenAICompatModel("default", base_url=server.url + "?key=QUERYSECRET99", api_key=key))
    assert str(info.value) == (
        f"the server at {server.url} refused the API key (401 Unauthorized: 'Incorrect API key provided: ***'); set "
        "VERILOOP_API_KEY (or OPENAI_API_KEY) or pass --api-key"
    )
    assert server.paths == ["/v1/chat/completions?key=QUERYSECRET99"]  # the server still gets it


def test_a_short_key_is_masked_only_where_it_stands_alone():
    model = OpenAICompatModel("default", base_url="http://127.0.0.1:9/v1", api_key="k1")
    assert model._masked("kept k1, k12 and ok1") == "kept ***, k12 and ok1"


def test_a_403_is_reported_with_the_servers_reason():
    with FaultServer(["forbidden_region"]) as server:
        with pytest.raises(VeriloopError) as info:
            generate(client(server.url))
    assert str(info.value) == (
        f"the server at {server.url} forbade the request (403 Forbidden): 'Country, region, or territory not "
        "supported'; change what it names (the key's access to 'default', the account, the region), then re-run"
    )
    assert server.requests == 1


def test_the_cli_records_a_base_url_without_its_secrets(tmp_path):

    with FaultServer([]) as server:
        proc = veriloop("run", "--model", "openai/default", "--base-url", f"{server.url}?api-key=SECRETVALUE123",
                        "-n", "1", "-s", "standard", "--out", str(tmp_path / "run"), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert server.paths == ["/v1/chat/completions?api-key=SECRETVALUE123"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (config["base_url"], config["spec"]["models"]["main"]["base_url"], config["model_identity"]) == (
        server.url, server.url, f"default@{server.url}")
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert written and [path for path in written if b"SECRETVALUE123" in path.read_bytes()] == []
    assert "SECRETVALUE123" not in proc.stdout + proc.stderr


def test_the_cli_refuses_a_password_in_the_base_url_and_writes_nothing_of_it(tmp_path):

    proc = veriloop("run", "--model", "openai/default", "--base-url", "http://alice:PASSWORD123@127.0.0.1:9/v1",
                    "-n", "1", "-s", "standard", "--out", str(tmp_path / "run"), home=tmp_path / "home")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        f"error: the base URL 'http://127.0.0.1:9/v1' {OPTION} holds a user name or password (USER:PASSWORD@); remove "
        "them from the URL and give the key with --api-key, VERILOOP_API_KEY or an experiment's api_key_env (a key is "
        "never recorded)"
    ]
    assert [path for path in tmp_path.rglob("*") if path.is_file() and b"PASSWORD123" in path.read_bytes()] == []


def test_an_experiments_records_hold_its_base_urls_without_secrets(tmp_path):
    from veriloop.experiment.engine import plan, write_spec
    from veriloop.experiment.schema import Experiment

    url = "http://127.0.0.1:9/v1?api-version=1&api_key=SECRETVALUE123"
    experiment = Experiment.model_validate({
        "name": "e", "domains": [{"name": "game24", "n": 1}], "strategies": ["standard"],
        "models": {"main": {"id": "openai/default", "base_url": url}},
    })
    (cell,) = plan(experiment, tmp_path / "out")
    (tmp_path / "out").mkdir()
    write_spec(tmp_path / "out", experiment)
    assert "SECRETVALUE123" not in json.dumps(cell.config, default=str)
    assert cell.config["base_url"] == "http://127.0.0.1:9/v1?api-version=1"
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file() and b"SECRETVALUE123" in p.read_bytes()] == []
    # Read back to run (eval_experiment's overrides), the URL is whole.
    assert experiment.model_dump(context={"with_secrets": True})["models"]["main"]["base_url"] == url


# ---------------------------------------------------------------- text that cannot be stored (issue 25, item 1)


def test_a_reply_with_a_lone_surrogate_is_stored_replaced_and_a_rerun_replays_it(tmp_path):

    def run(url: str, out: str) -> str:
        proc = veriloop("run", "--model", "openai/default", "--base-url", url, "--deployment", "d", "-n", "1",
                        "-s", "standard", "--out", str(tmp_path / out), home=tmp_path / "home")
        assert (proc.returncode, "Traceback" in proc.stdout + proc.stderr) == (0, False), proc.stderr
        return proc.stdout

    # The server's JSON is valid: "\ud800" travels as the escape \ud800, which Python decodes to a lone surrogate.
    with FaultServer([], text="Answer: 2\ud8004") as hostile:
        assert "1 backend calls" in run(hostile.url, "first")
    with FaultServer([]) as healthy:  # the same deployment: the cached reply is replayed
        assert "0 backend calls" in run(healthy.url, "again")
    assert (hostile.requests, healthy.requests) == (1, 0)
    for out in ("first", "again"):
        (trajectory,) = load_trajectories(tmp_path / out / "trajectories.jsonl")
        (call,) = trajectory.calls
        assert (call.response, call.surrogates_replaced) == ("Answer: 2\ufffd4", 1)


def hand_written_rows(path: Path, rows: list[tuple[int, str]]) -> str:
    """The cache at `path` with `rows` (sample index, stored text) under the key of QUESTION's call."""
    from veriloop.models.cache import call_key

    CallCache(path).close()
    key = call_key("openai", "default@deployment:d", QUESTION, GenParams(max_tokens=8, n=3))
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO samples VALUES (?, ?, ?)", [(key, idx, blob) for idx, blob in rows])
    return key


def test_a_cached_row_that_cannot_be_read_is_asked_again_and_replaced(tmp_path):
    older = json.dumps({"text": "older\ud800", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1,
                        "logprobs": None, "seconds": 0.0, "cached": False})
    hand_written_rows(tmp_path / "calls.sqlite", [
        (0, '{"text": "torn'),  # not JSON
        (1, '{"answer": "another format"}'),  # JSON, but not a completion
        (2, older),  # what an older version stored for a reply with a lone surrogate
    ])
    with FaultServer([]) as server:
        model = CachedModel(client(server.url, deployment="d"), CallCache(tmp_path / "calls.sqlite"))
        results = generate(model, GenParams(max_tokens=8, n=3))
    assert [(c.text, c.cached, c.surrogates_replaced) for c in results] == [
        (GOOD, False, 0), (GOOD, False, 0), ("older\ufffd", True, 1)]
    assert server.requests == 2  # one request for each unreadable row
    assert cached_texts(tmp_path / "calls.sqlite") == [GOOD, GOOD, "older\ud800"]
