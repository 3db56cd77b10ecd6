"""Servers on 127.0.0.1 for the tests: a real `python -m llama_cpp.server` (SmolLM2-135M)
for the tests that need an OpenAI-compatible server, started once per session and stopped
by the fixture (through `veriloop.models.amx`, which keeps llama.cpp's crashing AMX kernels
out); and two stdlib servers that answer at once: one with canned answers of the wrong
shape (what a user's misconfigured base URL meets) and one whose every chat completion is
SERVER_REPLY (so long commands run in seconds). The fixtures are in conftest.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SECRET = "sk-test-DO-NOT-RECORD-4242"
ALIAS = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(model_path: Path, log_dir: Path, api_key: str = SECRET) -> Iterator[str]:
    """Yields the server's base URL (with /v1) once it answers; stops it on exit."""
    port = free_port()
    # A file, not a pipe: llama.cpp's load log would fill an unread pipe and block the server.
    log_path = log_dir / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "veriloop.models.amx", "--model", str(model_path), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--model_alias", ALIAS, "--api_key", api_key],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 120
        try:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"llama_cpp.server exited: {log_path.read_text(errors='replace')[-2000:]}")
                try:
                    req = urllib.request.Request(base_url + "/models", headers={"Authorization": f"Bearer {api_key}"})
                    urllib.request.urlopen(req, timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("llama_cpp.server did not come up within 120 s") from None
                    time.sleep(0.5)
            yield base_url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class StandinServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a listen backlog a client's burst of connections fits in.
    socketserver's is 5: a sixth connection at once has its SYN dropped, and the client
    sends it again only a second later (each such stall was a second of a test's wall)."""

    request_queue_size = 1024


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threaded stdlib HTTP server on 127.0.0.1 running `handler`; yields its port."""
    server = StandinServer(("127.0.0.1", 0), handler)
    # Polled every 10 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ---------------------------------------------------------------- a server that answers wrongly

COMPLETION = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "x",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer: 4 * 6 * (1 * 1)"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
UNKNOWN_MODEL = {"error": {"message": "The model `x` does not exist.", "type": "invalid_request_error",
                           "code": "model_not_found"}}
# POST path -> (status, content type, body); any other path is a plain-text 404, as Go and
# Ollama servers answer a base URL without /v1.
ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/ok/v1/chat/completions": (200, "application/json", json.dumps(COMPLETION).encode()),
    "/text/v1/chat/completions": (200, "text/plain", b"Hello from a plain web server\n"),
    "/other-api/v1/chat/completions": (200, "application/json", b'{"result": "4*6", "status": "done"}'),
    "/unknown-model/v1/chat/completions": (404, "application/json", json.dumps(UNKNOWN_MODEL).encode()),
}


class CannedHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, content_type, body = ROUTES.get(self.path, (404, "text/plain", b"404 page not found"))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's output is the CLI's, not the server's access log


# ---------------------------------------------------------------- a server that answers at once

# What the instant server answers to everything: a step, a program, an answer and a verdict.
SERVER_REPLY = "Step 1: 3 + 4 = 7.\nanswer = 7\nAnswer: 7\nVerdict: correct"


class ChatReplies(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint answering at once with `reply(body)`, the
    request's JSON (12 prompt and 7 completion tokens reported)."""

    def reply(self, body: dict) -> str:
        raise NotImplementedError

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({
            "id": "reply", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply(body)},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class InstantReplies(ChatReplies):
    """Answers SERVER_REPLY to everything."""

    def reply(self, body: dict) -> str:
        return SERVER_REPLY
