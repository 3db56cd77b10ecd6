"""Helpers of the sandbox tests: an ordinary user's machine, made from this root one.

The suite runs as root, and the sandbox's promises must hold for an ordinary user too.
`guest` gives a throwaway uid a home (mode 700) with a secret file (mode 600) and a
listening Unix socket of its own (mode 600, as /run/user/UID/bus is), and puts a
world-connectable socket under /run (root's listener). `Guest.run` runs a program in the
sandbox as that uid: a forked child of this process takes a mount namespace of its own,
covers each directory on the way to the interpreter that others may not enter (pyenv
under a mode-700 /root) with a tmpfs and binds the interpreter's directories back, drops
to the uid, calls `run_python` and sends the result back through a pipe.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import site
import socket
import sys
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from veriloop.tools.sandbox import ExecResult, SandboxLimits, run_python

GUEST_UID = 42424
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18


def closed_ancestors() -> dict[str, list[str]]:
    """{first directory others may not enter: the interpreter directories below it}."""
    groups: dict[str, list[str]] = {}
    wanted = {sys.base_prefix, sys.prefix, *site.getsitepackages()}
    for path in sorted({os.path.realpath(p) for p in wanted if os.path.isdir(p)}):
        parts = path.split("/")
        for i in range(2, len(parts)):
            ancestor = "/".join(parts[:i])
            if not os.stat(ancestor).st_mode & 0o001:
                groups.setdefault(ancestor, []).append(path)
                break
    # A directory binds its sub-directories along with it.
    return {closed: [p for p in paths if not any(p.startswith(q + "/") for q in paths)] for closed, paths in groups.items()}


def become(uid: int) -> None:
    """In a forked child (as root): the machine as an ordinary user with this
    interpreter sees it, then that user."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(ret: int, what: str) -> None:
        if ret != 0:
            raise OSError(ctypes.get_errno(), what)

    check(libc.unshare(CLONE_NEWNS), "unshare")
    check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount private")
    for closed, inside in closed_ancestors().items():
        held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in inside]
        check(libc.mount(b"tmpfs", closed.encode(), b"tmpfs", 0, b"mode=0755"), f"tmpfs over {closed}")
        for path, fd in held:
            os.makedirs(path, exist_ok=True)
            check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def listener(path: Path, kind: int, *, owner: int, mode: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, kind)
    sock.bind(str(path))
    if kind == socket.SOCK_STREAM:
        sock.listen(200)
    sock.setblocking(False)
    os.chown(path, owner, owner)
    os.chmod(path, mode)
    return sock


@dataclass
class Guest:
    uid: int
    home: Path
    secret: str
    secret_file: Path
    sockets: dict[str, Path]  # name: path
    listeners: dict[str, socket.socket] = field(default_factory=dict)

    def run(self, code: str, limits: SandboxLimits | None = None) -> ExecResult:
        """`run_python(code, limits)` as this user."""
        return as_user(self.uid, code, limits)

    def received(self) -> dict[str, str]:
        """What reached each listener: 'nothing', or what came."""
        seen = {}
        for name, sock in self.listeners.items():
            try:
                if sock.type == socket.SOCK_STREAM:
                    conn, _ = sock.accept()
                    seen[name] = f"a connection ({conn.recv(100)!r})"
                    conn.close()
                else:
                    seen[name] = f"a message ({sock.recv(100)!r})"
            except BlockingIOError:
                seen[name] = "nothing"
        return seen


def as_user(uid: int, code: str, limits: SandboxLimits | None = None) -> ExecResult:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.close(read_end)
            become(uid)
            payload = json.dumps({"result": asdict(run_python(code, limits))}).encode()
        except BaseException as exc:
            payload = json.dumps({"helper_error": f"{type(exc).__name__}: {exc}"}).encode()
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as fh:
        chunks.append(fh.read())
    os.waitpid(pid, 0)
    reply = json.loads(b"".join(chunks) or b'{"helper_error": "the child said nothing"}')
    if "helper_error" in reply:
        raise RuntimeError(f"could not run as uid {uid}: {reply['helper_error']}")
    return ExecResult(**reply["result"])


@pytest.fixture
def guest() -> Iterator[Guest]:
    if os.geteuid() != 0:
        pytest.skip("making a throwaway user needs root")
    tag = uuid.uuid4().hex[:8]
    home = Path(f"/home/vl-user-{tag}")
    home.mkdir(mode=0o700, parents=True)
    os.chown(home, GUEST_UID, GUEST_UID)
    secret = f"secret-{uuid.uuid4().hex}"
    secret_file = home / "secret.txt"
    secret_file.write_text(secret)
    os.chown(secret_file, GUEST_UID, GUEST_UID)
    secret_file.chmod(0o600)
    sockets = {
        "home": home / "bus",  # the user's own, as /run/user/UID/bus
        "run": Path(f"/run/vl-test-{tag}.sock"),  # anyone's: root listens, mode 777
        "run_dgram": Path(f"/run/vl-test-{tag}.dgram"),
    }
    found = Guest(GUEST_UID, home, secret, secret_file, sockets)
    try:
        found.listeners["home"] = listener(sockets["home"], socket.SOCK_STREAM, owner=GUEST_UID, mode=0o600)
        found.listeners["run"] = listener(sockets["run"], socket.SOCK_STREAM, owner=0, mode=0o777)
        found.listeners["run_dgram"] = listener(sockets["run_dgram"], socket.SOCK_DGRAM, owner=0, mode=0o777)
        yield found
    finally:
        for sock in found.listeners.values():
            sock.close()
        for path in sockets.values():
            path.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)


@dataclass
class Signals:
    """Two FIFOs a sandboxed program can open, in a folder beside the interpreter (its
    root shows the interpreter's directories): it writes to `held` and reads `release`,
    so a test can wait for what it is doing and tell it when to go on."""

    held: Path
    release: Path
    fds: dict[str, int] = field(default_factory=dict)

    def wait_held(self, seconds: float = 120) -> str:
        """What the program wrote to `held`, once it has; `seconds` is a hang guard."""
        import select

        ready, _, _ = select.select([self.fds["held"]], [], [], seconds)
        if not ready:
            raise TimeoutError(f"the program wrote nothing to {self.held} within {seconds:g} s")
        return os.read(self.fds["held"], 4096).decode()

    def release_it(self) -> None:
        os.write(self.fds["release"], b"go")


@pytest.fixture
def signals() -> Iterator[Signals]:
    folder = Path(sys.prefix) / f"veriloop-signals-{uuid.uuid4().hex}"
    folder.mkdir()
    folder.chmod(0o755)
    found = Signals(folder / "held", folder / "release")
    try:
        for name in ("held", "release"):
            path = folder / name
            os.mkfifo(path)
            path.chmod(0o666)  # the program runs as another uid
            # Read and write at once: opening never waits for the other end, and the
            # program's own opens find one.
            found.fds[name] = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        yield found
    finally:
        for fd in found.fds.values():
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
