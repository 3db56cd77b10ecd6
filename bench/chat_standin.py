"""What the benchmarks' stand-in chat servers share: serving, and writing a JSON reply.

The scripts run as `python bench/NAME.py`, so this folder is on their import path."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, payload: Any) -> None:
    """Answer the handler's request with status 200 and `payload` as its JSON body."""
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _Server(ThreadingHTTPServer):
    # socketserver's backlog is 5: a burst of connections beyond it has SYNs dropped and
    # resent a second later, which a benchmark would count as the client's time.
    request_queue_size = 1024


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` serving on 127.0.0.1 (a thread a request), until the block ends; its /v1 URL."""
    server = _Server(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
