"""What the sandbox keeps from a program, as root and as an ordinary user alike: the
host's files and sockets (it sees only its own root: system directories, the
interpreter, a few devices, /proc of its own and a scratch /tmp), other processes, and
more memory than the cap across all its processes."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, leftovers

from veriloop.tools import sandbox
from veriloop.tools.sandbox import ExecResult, SandboxLimits, run_python

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox needs Linux")

Runner = Callable[..., ExecResult]
# `guest` (tests/tools/conftest.py) is a conftest.Guest: typed Any, as a conftest is not imported.


@pytest.fixture(params=["root", "user"])
def runner(request: pytest.FixtureRequest, guest: Any) -> Runner:
    """`run_python` as root, and as the throwaway user `guest`."""
    return run_python if request.param == "root" else guest.run


def expected_listing(place: str) -> list[str] | str:
    """What the program's root shows at `place`: the next step towards each host path
    bound in (the interpreter may live under a home), or nothing at all."""
    below = {b[len(place) + 1:].split("/")[0] for b in sandbox._BINDS if b.startswith(place + "/")}
    if place == "/tmp":
        return sorted(below)  # the scratch directory, empty at the start
    return sorted(below) if below else "FileNotFoundError"


def test_only_the_program_root_is_visible(runner: Runner, guest: Any) -> None:
    places = ["/root", "/run", "/var", "/home", str(guest.home), "/etc", "/sys", "/tmp", "/mnt", "/opt",
              "/srv", "/boot", "/media", str(ROOT), "/run/user"]
    program = (
        "import json, os\n"
        "def look(path):\n"
        "    try:\n        names = sorted(os.listdir(path))\n"
        "        return names if len(names) <= 8 else f'{len(names)} entries'\n"
        "    except OSError as exc:\n        return type(exc).__name__\n"
        f"seen = {{place: look(place) for place in {places!r}}}\n"
        "try:\n"
        f"    seen['secret'] = open({str(guest.secret_file)!r}).read()\n"
        "except OSError as exc:\n    seen['secret'] = type(exc).__name__\n"
        "answer = json.dumps(seen)"
    )
    result = runner(program)
    assert result.error is None, result.error
    everything = f"{result.answer}{result.stdout}{result.stderr}"
    assert guest.secret not in everything
    seen = json.loads(result.answer or "{}")
    assert seen.pop("secret") == "FileNotFoundError"
    assert seen == {place: expected_listing(place) for place in places}
    assert set(seen["/etc"]) <= {"ld.so.cache", "localtime"}  # the loader's cache and the clock, where present
    assert seen["/run"] == seen["/var"] == seen["/home"] == "FileNotFoundError"


def test_no_unix_socket_can_be_reached(runner: Runner, guest: Any) -> None:
    """The user's own bus socket (mode 600) and a socket anyone may connect to under /run:
    no connection, no message; a socket pair (a pipe both ways) still works."""
    program = (
        "import socket\nout = {}\n"
        f"for name, path, kind in [('home', {str(guest.sockets['home'])!r}, socket.SOCK_STREAM), "
        f"('run', {str(guest.sockets['run'])!r}, socket.SOCK_STREAM), "
        f"('run_dgram', {str(guest.sockets['run_dgram'])!r}, socket.SOCK_DGRAM)]:\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX, kind)\n"
        "        s.setblocking(False)\n"
        "        if kind == socket.SOCK_STREAM:\n"
        "            s.connect(path)\n            out[name] = 'connected'\n"
        "        else:\n"
        "            sent = 0\n"
        "            for _ in range(105):\n"
        "                try:\n                    sent += s.sendto(b'hello', path) > 0\n"
        "                except BlockingIOError:\n                    pass\n"
        "            out[name] = f'sent {sent}'\n"
        "    except OSError as exc:\n"
        "        out[name] = f'{type(exc).__name__} {exc.errno}'\n"
        "a, b = socket.socketpair()\na.send(b'pair')\nout['pair'] = b.recv(4).decode()\n"
        "answer = sorted(out.items())"
    )
    result = runner(program)
    assert result.error is None, result.error
    denied = "PermissionError 1"  # socket(AF_UNIX) itself is refused
    assert result.answer == repr([("home", denied), ("pair", "pair"), ("run", denied), ("run_dgram", denied)])
    assert guest.received() == {"home": "nothing", "run": "nothing", "run_dgram": "nothing"}


def test_a_world_connectable_socket_is_not_reachable_even_by_path(guest: Any) -> None:
    """Root's sandbox, a socket anyone may connect to: the path is not in the program's
    root at all (the seccomp filter aside)."""
    program = f"import os\nanswer = os.path.exists({str(guest.sockets['run'])!r})"
    assert run_python(program).answer == "False"
    assert guest.received()["run"] == "nothing"


def forking_program(children: int, mib: int, hold: float | None) -> str:
    """`children` forked processes, each touching `mib` MiB; once every one holds its
    memory they keep it `hold` seconds more (PID 1 sums it every 10 ms), or, with None,
    until they are killed (the wall limit is the hang guard)."""
    release = "time.sleep(hold)\n    os.close(go_w)" if hold is not None else "pass"
    return (
        f"import os, time\nhold = {hold!r}\nready_r, ready_w = os.pipe()\ngo_r, go_w = os.pipe()\nkids = []\n"
        f"for _ in range({children}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.close(go_w)\n"
        f"        block = bytearray({mib} << 20)\n"
        "        block[::4096] = b'\\x01' * len(range(0, len(block), 4096))\n"
        "        os.write(ready_w, b'.')\n"
        "        os.read(go_r, 1)\n"
        "        os._exit(0)\n"
        "    kids.append(pid)\n"
        "ready = b''\n"
        f"while len(ready) < {children}:\n"
        "    ready += os.read(ready_r, 16)\n"
        "if hold is not None:\n"
        f"    {release}\n"
        "statuses = [os.waitpid(pid, 0)[1] for pid in kids]\n"
        "answer = f'{len(kids)} children, statuses {statuses}'"
    )


MEMORY = SandboxLimits(wall_seconds=20, cpu_seconds=10, memory_bytes=384 << 20)


def test_memory_is_capped_over_all_processes(runner: Runner) -> None:
    """Three children of 200 MiB each: each fits the 384 MiB per-process cap, together they
    do not; the whole program is stopped and the error says why."""
    result = runner(forking_program(3, 200, None), MEMORY)
    assert (result.answer, result.timed_out) == (None, False)
    assert result.error == "MemoryError: the program's processes together needed more than the 384 MiB memory limit"


def test_processes_within_the_memory_cap_run(runner: Runner) -> None:
    result = runner(forking_program(3, 40, 0.5), MEMORY)
    assert (result.answer, result.error) == ("3 children, statuses [0, 0, 0]", None)


def test_fork_bomb_is_stopped_as_a_user(guest: Any, marked: str) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = guest.run(bomb, SandboxLimits(wall_seconds=2, cpu_seconds=2))
    assert result.timed_out and result.answer is None
    assert leftovers(marked) == []


def holding_bomb(signals: Any) -> str:
    """A fork bomb that keeps every process it could make (each child waits on a pipe)
    and says how many on `signals.held`, then lets them go when told on `signals.release`."""
    return (
        "import os\nhold_r, hold_w = os.pipe()\nkids = 0\n"
        "while True:\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        os.close(hold_w)\n        os.read(hold_r, 1)\n        os._exit(0)\n"
        "    kids += 1\n"
        f"with open({str(signals.held)!r}, 'w') as fh:\n    fh.write(str(kids))\n"
        f"with open({str(signals.release)!r}, 'rb') as fh:\n    fh.read(2)\n"
        "os.close(hold_w)\n"
        "for _ in range(kids):\n    os.wait()\n"
        "answer = kids"
    )


# Made while the bomb holds every process it could: the kernel counts RLIMIT_NPROC per uid,
# so this fork failed when every program of root's ran as one uid.
FORKING = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\nanswer = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])"


def test_a_fork_bomb_takes_no_process_from_a_program_running_beside_it(
        runner: Runner, request: pytest.FixtureRequest, signals: Any, marked: str) -> None:
    """Two programs at once (parallel verification runs them so): one holds all the
    processes its limit allows, the other still forks, and each is told its own result."""
    limits = SandboxLimits(wall_seconds=120, cpu_seconds=10)
    bomb: dict[str, ExecResult] = {}
    thread = threading.Thread(target=lambda: bomb.update(result=runner(holding_bomb(signals), limits)))
    thread.start()
    try:
        held = signals.wait_held()
        beside = runner(FORKING)
    finally:
        signals.release_it()
        thread.join()
    # As root the program's process and its children count; as a user, in the user
    # namespace of its own, the launcher and PID 1 as well.
    kids = limits.processes - {"root": 1, "user": 3}[request.node.callspec.params["runner"]]
    assert held == str(kids)
    assert (beside.answer, beside.error) == ("7", None)
    assert (bomb["result"].answer, bomb["result"].error) == (str(kids), None)
    assert leftovers(marked) == []


def test_answer_and_site_packages_as_a_user(guest: Any) -> None:
    program = ("import os, numpy, sympy\n"
               "answer = (os.getuid(), int(numpy.arange(5).sum()), str(sympy.Rational(14, 3) + 1), os.getcwd())")
    result = guest.run(program)
    assert result.error is None, result.error
    # uid 0 of the sandbox's own user namespace, the guest's uid outside; no capability.
    assert (result.answer, result.isolated) == ("(0, 10, '17/3', '/tmp')", True)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="syscall numbers known for these only")
def test_no_tracing_or_reading_another_process(runner: Runner) -> None:
    """ptrace and process_vm_readv are refused (a harness may run a candidate as its own
    child and rely on the candidate not reaching into it)."""
    numbers = {"x86_64": (101, 310), "aarch64": (117, 270)}[platform.machine()]
    program = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nseen = []\n"
        f"seen.append((libc.syscall({numbers[0]}, 0, 0, 0, 0), ctypes.get_errno()))\n"  # PTRACE_TRACEME
        f"seen.append((libc.syscall({numbers[1]}, os.getppid(), 0, 0, 0, 0, 0), ctypes.get_errno()))\n"
        "answer = seen"
    )
    result = runner(program)
    assert result.answer == repr([(-1, 1), (-1, 1)]), result.error


def test_a_venv_under_tmp_is_bound_back() -> None:
    """A checkout under /tmp (as CI may make) has its interpreter under the place the
    program gets a scratch /tmp: its directories are bound back over the scratch, and
    nothing beside them shows."""
    base = Path("/tmp") / f"vl-venv-{uuid.uuid4().hex[:8]}"
    try:
        venv = base / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        (base / "beside.txt").write_text("not for the program")
        site = Path(subprocess.check_output(
            [str(venv / "bin/python"), "-c", "import site; print(site.getsitepackages()[0])"], text=True).strip())
        (site / "vlprobe.py").write_text("VALUE = 17\n")
        # veriloop's own imports (pydantic) come from this interpreter's site-packages; the
        # launcher runs without site (-S), so the program sees only the venv's.
        (site / "veriloop-deps.pth").write_text("\n".join(sandbox._SITE_PATHS) + "\n")
        program = f"import os, vlprobe\nanswer = (vlprobe.VALUE, sorted(os.listdir({str(base)!r})))"
        script = f"from veriloop.tools.sandbox import run_python\nr = run_python({program!r})\nprint(r.answer, r.error)"
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(sandbox.__file__).parents[2])}
        out = subprocess.run([str(venv / "bin/python"), "-c", script], capture_output=True, text=True, env=env, timeout=60)
        assert out.stdout.strip() == "(17, ['venv']) None", out.stderr
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_network_sockets_are_still_made() -> None:
    """The filter refuses only AF_UNIX: an AF_INET socket is made (and reaches nothing:
    the network namespace is empty, see test_sandbox.py::test_no_route_to_the_outside)."""
    result = run_python("import socket\ns = socket.socket(socket.AF_INET)\nanswer = s.family.name")
    assert result.answer == "AF_INET"


def test_multiprocessing_still_works(runner: Runner) -> None:
    """A pool (forked workers, pipes, a semaphore in /dev/shm) and a queue: what the
    filter allows (socketpair, pipes) and the scratch /dev/shm are enough."""
    program = ("import multiprocessing as mp\nwith mp.Pool(2) as pool:\n    total = sum(pool.map(abs, range(-5, 5)))\n"
               "queue = mp.Queue()\nqueue.put(3)\nanswer = (total, queue.get())")
    result = runner(program, SandboxLimits(wall_seconds=20))
    assert (result.answer, result.error) == ("(25, 3)", None)


def test_a_hidden_directory_is_shown_empty_and_veriloops_own_package_always(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sandbox._ALWAYS_HIDDEN == (str(Path(sandbox.__file__).resolve().parents[1]),)
    # A folder beside the interpreter (where an installed benchmark keeps its hidden tests).
    data = Path(sys.prefix) / f"veriloop-hidden-{uuid.uuid4().hex}"
    data.mkdir()
    try:
        (data / "tests.jsonl").write_text("the answers\n")
        program = f"import os\nanswer = os.listdir({str(data)!r})"
        assert run_python(program).answer == "['tests.jsonl']"
        assert run_python(program, hide=[str(data)]).answer == "[]"
        reader = f"answer = open({str(data / 'tests.jsonl')!r}).read()"
        assert run_python(reader, hide=[str(data)]).error == (
            f"FileNotFoundError: [Errno 2] No such file or directory: {str(data / 'tests.jsonl')!r}")
        # What is always hidden needs no asking (veriloop's package: in a checkout it lies
        # outside the program's root anyway, so the mechanism is shown on this folder).
        monkeypatch.setattr(sandbox, "_ALWAYS_HIDDEN", (str(data),))
        assert run_python(program).answer == "[]"
    finally:
        (data / "tests.jsonl").unlink()
        data.rmdir()
