"""A real `python -m llama_cpp.server` (SmolLM2-135M) on 127.0.0.1 for the tests that
need an OpenAI-compatible server; started once per session, stopped by the fixture. It is
started through `veriloop.models.amx`, which keeps llama.cpp's crashing AMX kernels out."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
