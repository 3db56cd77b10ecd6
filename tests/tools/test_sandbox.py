"""The Python sandbox: every hostile program ends with the host alive and an observation
that says what happened."""

from __future__ import annotations

import ast
import builtins
import errno
import json
import os
import tempfile
import tracemalloc
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, leftovers

from veriloop.tools import get_tool, sandbox
from veriloop.tools.sandbox import PythonTool, SandboxLimits, program_from_text, run_python

QUICK = SandboxLimits(wall_seconds=3, cpu_seconds=2)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox needs Linux")


def test_answer_is_reported_with_printed_output() -> None:
    observation = PythonTool().run("x = 6\nprint('thinking', x)\nanswer = x * 7")
    assert observation.ok
    assert observation.data["answer"] == "42"
    assert observation.data["stdout"] == "thinking 6\n"
    assert observation.data["error"] is None and observation.data["timed_out"] is False
    assert observation.data["isolated"] is True
    assert observation.text.startswith("Execution: answer = 42")
    assert "thinking 6" in observation.text


def test_fenced_program_is_unwrapped() -> None:
    reply = "Here is my program:\n```python\ntotal = 16 - 3 - 4\nanswer = total * 2\n```\nThe answer is 18."
    assert run_python(reply).answer == "18"


def test_syntax_error_names_the_line() -> None:
    result = run_python("a = 1\nb = = 2\nanswer = a")
    assert not result.ok
    assert result.error == "SyntaxError: invalid syntax (line 2: b = = 2)"
    observation = PythonTool().run("a = 1\nb = = 2\nanswer = a")
    assert observation.text == "Execution: SyntaxError: invalid syntax (line 2: b = = 2)"
    assert not observation.ok


def test_runtime_error_is_the_last_traceback_line() -> None:
    result = run_python("def f(n):\n    return 10 / n\nanswer = f(0)")
    assert result.error == "ZeroDivisionError: division by zero"
    assert result.answer is None


def test_stdin_is_closed() -> None:
    result = run_python("answer = input()")
    assert result.error == "EOFError: EOF when reading a line"


def test_missing_answer_is_reported() -> None:
    result = run_python("print(41 + 1)")
    assert result.stdout == "42\n"
    assert result.answer is None
    assert "did not set a variable named `answer`" in (result.error or "")


def test_infinite_loop_hits_the_cpu_limit() -> None:
    # The wall limit is far above the CPU limit: on a busy machine a loop gets only part of a
    # core, and with QUICK's 3 s against 2 s the wall clock could end it first.
    result = run_python("while True:\n    pass", SandboxLimits(wall_seconds=120, cpu_seconds=1))
    assert result.timed_out
    assert "CPU time" in (result.error or "")


def test_sleep_hits_the_wall_clock_limit() -> None:
    observation = PythonTool(limits=SandboxLimits(wall_seconds=1.5)).run("import time\ntime.sleep(1000)\nanswer = 1")
    assert not observation.ok
    assert observation.data["timed_out"] is True
    assert observation.text == "Execution: TimeoutError: the program did not finish within 1.5 s"


def test_huge_allocation_is_a_memory_error() -> None:
    result = run_python("block = bytearray(4 * 1024 ** 3)\nanswer = len(block)", QUICK)
    assert result.answer is None
    assert result.error == "MemoryError: the program needed more than the 1 GiB memory limit"


def test_fork_bomb_is_stopped_and_leaves_no_process(marked: str) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = run_python(bomb, SandboxLimits(wall_seconds=2, cpu_seconds=2))
    assert result.timed_out and result.answer is None
    assert leftovers(marked) == []


def test_detached_child_does_not_survive(marked: str) -> None:
    program = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\nanswer = 'parent done'"
    result = run_python(program, QUICK)
    assert result.answer == "parent done"
    assert leftovers(marked) == []


def test_files_written_outside_the_workdir_do_not_persist() -> None:
    name = f"escape-{uuid.uuid4().hex}"
    targets = [Path("/tmp") / name, ROOT / name, Path("/var/tmp") / name, Path.home() / name]
    program = "\n".join(
        ["results = []"]
        + [
            f"try:\n    open({str(t)!r}, 'w').write('x')\n    results.append('written')\n"
            f"except OSError as exc:\n    results.append(type(exc).__name__)"
            for t in targets
        ]
        + ["answer = results"]
    )
    result = run_python(program)
    assert result.error is None, result.error
    for target in targets:
        assert not target.exists(), f"{target} escaped the sandbox"
    # The repository and the home directory are read-only inside; /tmp is a private tmpfs.
    assert "'OSError'" in (result.answer or "")


def test_workdir_is_private_and_removed() -> None:
    program = "import os\nopen('notes.txt', 'w').write('hi')\nanswer = os.getcwd()"
    result = run_python(program)
    assert result.answer == "/tmp"
    unisolated = run_python(program, allow_unisolated=True)
    # Isolation works here, so the opt-out changes nothing.
    assert unisolated.isolated and unisolated.answer == "/tmp"


def test_no_route_to_the_outside() -> None:
    # 192.0.2.1 is TEST-NET-1 (documentation only): nothing answers there even if the
    # namespace were missing, and inside the empty namespace connect fails at once.
    program = (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.settimeout(2)\n"
        "s.connect(('192.0.2.1', 80))\nanswer = 'connected'"
    )
    result = run_python(program, QUICK)
    assert result.answer is None
    assert result.error == "OSError: [Errno 101] Network is unreachable"


def test_environment_secrets_are_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    program = (
        "import os\nseen = dict(os.environ)\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            seen[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')\n"
        "        except OSError:\n"
        "            pass\n"
        "answer = repr(seen)"
    )
    result = run_python(program)
    assert result.error is None
    assert "OPENAI_API_KEY" not in (result.answer or "")
    assert secret not in (result.answer or "")


def uid_of_its_own(uid: int) -> bool:
    return sandbox.SANDBOX_UID_BASE < uid < sandbox.SANDBOX_UID_BASE + sandbox.SANDBOX_UID_COUNT


@pytest.mark.skipif(os.name == "posix" and os.geteuid() != 0, reason="the uid drop happens only when run as root")
def test_runs_as_an_unprivileged_uid_of_its_own_when_root() -> None:
    program = "import os\nanswer = (os.getuid(), os.getgid(), os.getpid(), os.stat('/tmp').st_uid)"
    uid, gid, pid, owner = ast.literal_eval(run_python(program).answer or "None")
    assert uid_of_its_own(uid)
    assert (gid, pid, owner) == (uid, 2, uid)  # PID 1 is the sandbox's own reaper; /tmp is the program's


@pytest.mark.skipif(os.name == "posix" and os.geteuid() != 0, reason="the uid drop happens only when run as root")
def test_root_unisolated_drops_to_a_uid_of_its_own_that_owns_its_workdir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "UNSHARE_FLAGS", 0x1)  # not a namespace flag: isolation fails
    monkeypatch.setattr(sandbox, "_DROP_UNISOLATED", True)  # as where nobody may enter the interpreter's directories
    program = "import os\nopen('notes.txt', 'w').write('hi')\nanswer = (os.getuid(), os.getgid(), os.stat('.').st_uid)"
    result = run_python(program, allow_unisolated=True)
    assert result.isolated is False
    uid, gid, owner = ast.literal_eval(result.answer or "None")
    assert uid_of_its_own(uid) and gid == owner == uid


def test_printing_100_mb_is_truncated_without_host_memory_growth() -> None:
    program = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\nanswer = 'done'"
    tracemalloc.start()
    try:
        result = run_python(program, SandboxLimits(wall_seconds=20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.answer == "done"
    assert result.stdout_truncated
    assert len(result.stdout) == SandboxLimits().output_bytes
    assert peak < 8 * (1 << 20)
    assert describe_ends_with_truncation(result)


def describe_ends_with_truncation(result: sandbox.ExecResult) -> bool:
    return sandbox.describe(result).endswith("[output truncated]")


def test_imports_from_site_packages_work() -> None:
    result = run_python("import sympy\nanswer = sympy.Rational(14, 3) + 1")
    assert result.answer == "17/3"


def test_refuses_without_isolation_unless_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "UNSHARE_FLAGS", 0x1)  # not a namespace flag: unshare fails with EINVAL
    observation = PythonTool().run("answer = 1")
    assert not observation.ok
    assert observation.data["refused"] is True
    assert "refused to run the program" in observation.text
    assert "allow_unisolated=True" in observation.text
    opted_out = PythonTool(allow_unisolated=True).run("import os\nanswer = os.getcwd()")
    assert opted_out.data["isolated"] is False
    workdir = opted_out.data["answer"]
    assert workdir and workdir.startswith(tempfile.gettempdir())
    assert not os.path.exists(workdir)  # the temporary working directory is gone


def test_identity_carries_the_limits() -> None:
    plain, tight = PythonTool(), PythonTool(wall_seconds=2)
    assert plain.identity() != tight.identity()
    assert "wall_seconds=10.0" in plain.identity() and "memory_bytes=1073741824" in plain.identity()
    assert PythonTool(allow_unisolated=True).identity() != plain.identity()
    assert isinstance(get_tool("python", cpu_seconds=3), PythonTool)


def test_back_to_back_calls_each_run_isolated() -> None:
    # What a call costs is measured against a bare subprocess in bench/sandbox_overhead.py.
    results = [run_python(f"answer = {i} * 2") for i in range(5)]
    assert [(r.answer, r.error, r.isolated) for r in results] == [(str(i * 2), None, True) for i in range(5)]


def test_program_from_text_handles_prose_and_fences() -> None:
    unfenced = "Sure! Here is the program:\n\nprice = 3\ncount = 4\nanswer = price * count\n\nThis multiplies them."
    assert program_from_text(unfenced) == "price = 3\ncount = 4\nanswer = price * count"
    two_blocks = "```python\nx = 1\n```\nFixed:\n```python\nx = 2\nanswer = x\n```\n```\nprint(answer)\n```"
    assert program_from_text(two_blocks) == "x = 2\nanswer = x"
    assert program_from_text("answer = 5") == "answer = 5"
    unterminated = "```python\nanswer = 7\n"
    assert program_from_text(unterminated) == "answer = 7"


def _forging(records: Sequence[Mapping[str, object]], then: str) -> str:
    """A program that writes `records` as JSON lines to every descriptor it holds and
    every one it can open under /proc/*/fd (PID 1's included), then runs `then`."""
    payload = "".join("\n" + json.dumps(r) + "\n" for r in records).encode()
    return (
        f"import os, signal\npayload = {payload!r}\n"
        "targets = [str(fd) for fd in range(3, 256)]\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            targets += [f'/proc/{pid}/fd/{fd}' for fd in os.listdir(f'/proc/{pid}/fd')]\n"
        "        except OSError:\n"
        "            pass\n"
        "for target in targets:\n"
        "    try:\n"
        "        fd = int(target) if target.isdigit() else os.open(target, os.O_WRONLY | os.O_NONBLOCK)\n"
        "        if fd > 2:\n"
        "            os.write(fd, payload)\n"
        "    except OSError:\n"
        "        pass\n" + then
    )


def test_a_forged_result_then_a_crash_is_reported_as_the_crash() -> None:
    forged = {"result": {"answer": "24 (FORGED)", "has_answer": True, "error": None}}
    result = run_python(_forging([forged, {"exit": 0}], "os.kill(os.getpid(), signal.SIGSEGV)"), QUICK)
    assert (result.answer, result.error) == (None, "the program was killed by signal SIGSEGV")
    assert result.isolated


def test_a_forged_refusal_or_status_is_not_believed() -> None:
    forged: list[dict[str, object]] = [{"refused": "forged"}, {"isolated": False}, {"signal": 9}, {"exit": 3}]
    observation = PythonTool(limits=QUICK).run(_forging(forged, "answer = 'honest'"))
    assert observation.ok, observation.text
    assert observation.data["answer"] == "honest"
    assert (observation.data["refused"], observation.data["isolated"]) == (False, True)


def test_the_result_survives_a_flood_on_its_pipe() -> None:
    program = (
        "import os\nfor fd in range(3, 256):\n    try:\n        os.write(fd, b'x' * 200_000)\n"
        "    except OSError:\n        pass\nanswer = 'kept'"
    )
    result = run_python(program, QUICK)
    assert (result.answer, result.error) == ("kept", None)


def test_new_namespaces_cannot_be_made_inside() -> None:
    program = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nseen = []\n"
        f"for flags in ({sandbox.CLONE_NEWUSER | sandbox.CLONE_NEWNET}, {sandbox.CLONE_NEWUSER}, "
        f"{sandbox.CLONE_NEWNET}, {sandbox.CLONE_NEWNS}):\n"
        "    seen.append((libc.unshare(flags), ctypes.get_errno()))\n"
        "seen.append((libc.setns(0, 0), ctypes.get_errno()))\n"
        "answer = seen"
    )
    result = run_python(program, QUICK)
    assert result.answer == repr([(-1, errno.EPERM)] * 5), result.error


def test_host_network_interfaces_are_not_listed() -> None:
    program = "import os\ntry:\n    answer = sorted(os.listdir('/sys/class/net'))\nexcept FileNotFoundError:\n    answer = []"
    result = run_python(program, QUICK)
    assert result.error is None
    assert set(ast.literal_eval(result.answer or "None")) <= {"lo"}


def test_refuses_without_seccomp_unless_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "_NAMESPACE_FILTER", [])  # as on an architecture without a table
    refused = run_python("answer = 1", QUICK)
    assert refused.refused and refused.answer is None
    assert "seccomp: no filter for this machine's architecture" in (refused.error or "")
    opted_out = run_python("answer = 1", QUICK, allow_unisolated=True)
    assert (opted_out.answer, opted_out.isolated) == ("1", False)


def test_namespace_filter_rows_jump_forward_and_end_in_returns() -> None:
    for machine in ("x86_64", "aarch64"):
        rows = sandbox.namespace_filter(machine)
        jumps = [(i, jt, jf) for i, (code, jt, jf, _) in enumerate(rows) if code & 0x07 == 0x05]  # BPF_JMP
        assert len(jumps) > 10
        assert all(0 <= jt < 256 and 0 <= jf < 256 and i + 1 + max(jt, jf) < len(rows) for i, jt, jf in jumps)
        assert rows[-1][0] == rows[-2][0] == 0x06  # BPF_RET
    assert sandbox.namespace_filter("riscv64") == []


def test_a_prelude_runs_first_in_the_programs_namespace_and_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    prelude = "import os\ndef double(x):\n    assert x >= 0, 'negative'\n    return 2 * x\nuid = os.getuid()\n"
    compiled = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiled.append(args[1])
        return builtins.compile(*args, **kwargs)

    sandbox._bytecode.cache_clear()
    monkeypatch.setattr(sandbox, "compile", counting, raising=False)
    runs = [run_python("answer = (double(21), uid == os.getuid())", prelude=prelude),
            run_python("answer = double(-1)", prelude=prelude),  # its assert holds (no -O inside)
            run_python("a = 1\nb = = 2", prelude=prelude)]  # the program's own line numbers
    assert [(r.answer, r.error) for r in runs] == [
        ("(42, True)", None), (None, "AssertionError: negative"), (None, "SyntaxError: invalid syntax (line 2: b = = 2)")]
    assert compiled == ["<program>"]  # the prelude, once; the programs compile inside
    with pytest.raises(SyntaxError):
        run_python("answer = 1", prelude="def broken(:\n")


def test_the_launchers_records_are_json_as_json_dumps_writes_it() -> None:
    """The launcher writes its records without importing json (a start-up cost): its
    encoder must give what json.dumps gives, for whatever text a program's answer holds."""
    from veriloop.tools.sandbox_launcher import decode_config, encode_config, to_json

    record = {"result": {"answer": 'a"\\b\n\x01\udc80é𝄞', "has_answer": True, "error": None}, "exit": 0,
              "signal": -9, "memory": 1 << 40, "isolated": False}
    assert to_json(record) == json.dumps(record)
    config = {"paths": ["/x"], "seccomp_filter": [(32, 0, 0, 4)], "allow_unisolated": False, "uid": 65534}
    assert decode_config(encode_config(config)) == config  # type: ignore[arg-type]
