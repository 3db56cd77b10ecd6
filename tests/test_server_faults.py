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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from veriloop.domains import get_domain
from veriloop.errors import ModelTransportError, VeriloopError
from veriloop.experiment.identity import check_same_run
from veriloop.experiment.runner import load_trajectories, run_experiment
from veriloop.models import CachedModel, CallCache, GenParams
from veriloop.models.openai_compat import OpenAICompatModel, _logprobs, _retry_after, normalise_url
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
}


class FaultServer:
    """A chat completion server answering request i with script[i] (then `then`), and
    the good completion for "ok". It records when each request arrived and the most
    requests it held at once; `latency` keeps each request in flight that long."""

    def __init__(self, script: list[str], then: str = "ok", latency: float = 0.0, text: str = GOOD) -> None:
        self.script, self.then, self.latency, self.text = script, then, latency, text
        self.arrivals: list[float] = []
        self.headers: list[dict[str, str]] = []
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
                    fault_server.in_flight += 1
                    fault_server.max_in_flight = max(fault_server.max_in_flight, fault_server.in_flight)
                try:
                    time.sleep(fault_server.latency)
                    script = fault_server.script
                    self.answer(script[index] if index < len(script) else fault_server.then)
                finally:
                    with fault_server.lock:
                        fault_server.in_flight -= 1

            def answer(self, kind: str) -> None:
                if kind == "reset":
                    # Linger 0: closing sends a TCP reset, not an orderly end.
                    self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.request.close()
                    self.close_connection = True
                    return
                status, headers, body = (
                    (200, {"Content-Type": "application/json"}, completion(fault_server.text))
                    if kind == "ok" else ANSWERS[kind]
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a reset connection is the point, not a server error to print

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
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
        f"the model server at {server.url} kept failing for 10 s ({server.requests} attempts, retry budget 10 s); "
        "last error: 503 Service Unavailable ('FAULT upstream overloaded'); check that it is running and "
        "reachable, then re-run (finished work is kept)"
    )
    # The last wait is cut to what the budget has left, so the budget is used to its end.
    assert sum(fake.waits) == pytest.approx(10)
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
    from test_cli import veriloop
    from test_user_errors import the_error

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
    from test_cli import veriloop

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
    from veriloop.experiment.spec import Experiment

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


# ---------------------------------------------------------------- text that cannot be stored (issue 25, item 1)


def test_a_reply_with_a_lone_surrogate_is_stored_replaced_and_a_rerun_replays_it(tmp_path):
    from test_cli import veriloop

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
