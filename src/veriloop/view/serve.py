"""`veriloop view --serve`: the report on http://127.0.0.1:PORT/, rebuilt when the run's
files (or an audit's) change. The page asks /__veriloop/version every 1.5 s and reloads itself when the
answer changes, so a run that is still writing shows its new trajectories as they land.

Bound to 127.0.0.1 only: the report holds every prompt and reply of the runs. For the
same reason a request is answered only when its Host header names this machine
(`127.0.0.1` or `localhost`, with any port: a tunnel may forward another); any other Host
gets 403 with no content. A web page the user visits could otherwise point a name of its
own at 127.0.0.1 (DNS rebinding) and read the report as same-origin content.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .audits import RECORDS, REPORT
from .data import TRAJECTORIES

WATCHED = (TRAJECTORIES, REPORT, RECORDS)  # the files whose change changes the page

VERSION_PATH = "/__veriloop/version"
HOST = "127.0.0.1"
LOCAL_NAMES = frozenset({"127.0.0.1", "localhost"})


def is_local_host(header: str | None) -> bool:
    """Whether a request's Host header is `127.0.0.1` or `localhost`, with or without a port."""
    if header is None:
        return False
    name, colon, port = header.strip().rpartition(":")
    if not colon:
        name, port = port, ""
    elif not (port.isascii() and port.isdigit()):
        return False
    return name.lower() in LOCAL_NAMES


def files_version(paths: Sequence[Path]) -> str:
    """A token that changes when a trajectory file or an audit's report or records under
    the paths appear, grow or are rewritten (size and modification time of each)."""
    h = hashlib.sha256()
    for path in paths:
        # One walk of the tree per poll, not one per name watched.
        files = [path] if path.is_file() else sorted(
            f for f in path.rglob("*") if f.name in WATCHED) if path.is_dir() else []
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


class LivePage:
    """The page for `paths`, built again on the first request after the files change.
    `build(version)` returns the page's HTML (the version goes into the page, which
    compares it with the endpoint's); `on_build(html)` is told of each new page (the
    command writes it to --out)."""

    def __init__(self, paths: Sequence[Path], build: Callable[[str], str],
                 on_build: Callable[[str], None] | None = None) -> None:
        self.paths = list(paths)
        self._build = build
        self._on_build = on_build
        self._lock = threading.Lock()
        self._version = ""
        self._html = ""

    def version(self) -> str:
        return files_version(self.paths)

    def html(self) -> str:
        with self._lock:
            current = self.version()
            if current != self._version or not self._html:
                self._html = self._build(current)
                self._version = current
                if self._on_build:
                    self._on_build(self._html)
            return self._html


def _handler(page: LivePage) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "veriloop-view"

        def do_GET(self) -> None:  # the name http.server dispatches to
            if not is_local_host(self.headers.get("Host")):
                self._send(b"", "text/plain; charset=utf-8", HTTPStatus.FORBIDDEN)
                return
            path = self.path.split("?", 1)[0]
            try:
                if path == VERSION_PATH:
                    self._send(json.dumps({"version": page.version()}).encode(), "application/json")
                elif path in ("/", "/index.html", "/report.html"):
                    self._send(page.html().encode("utf-8"), "text/html; charset=utf-8")
                else:
                    self.send_error(HTTPStatus.NOT_FOUND)
            except Exception as exc:  # a file mid-rewrite or a bad record: say so, keep serving
                message = f"cannot build the report: {exc}".encode()
                self._send(message, "text/plain; charset=utf-8", HTTPStatus.INTERNAL_SERVER_ERROR)

        def _send(self, data: bytes, kind: str, status: HTTPStatus = HTTPStatus.OK) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per poll every 1.5 s would bury the command's own output

    return Handler


class ViewServer:
    """The HTTP server on 127.0.0.1:`port` (0: a free port). `serve_forever()` blocks (the
    command, until Ctrl-C); `start()` serves from a thread (tests) and `stop()` ends either."""

    def __init__(self, page: LivePage, port: int = 0) -> None:
        self.page = page
        self.httpd = ThreadingHTTPServer((HOST, port), _handler(page))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def serve_forever(self) -> None:
        try:
            self.httpd.serve_forever(poll_interval=0.25)
        finally:
            self.httpd.server_close()

    def start(self) -> ViewServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="veriloop-view", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
