"""Hostile completions: each is contained by the sandbox and recorded as a failing answer
with the reason, and the host is untouched (no file written, no secret read, no process
left, no connection made)."""

from __future__ import annotations

import re
import socket
import uuid
from pathlib import Path

import pytest
from helpers import ROOT, leftovers

from veriloop.domains.humaneval import HumanEval, read_problems

ADD = next(p for p in read_problems() if p.data["task_id"] == "HumanEval/53")
# Short limits: each hostile program ends within a few seconds.
QUICK = HumanEval(test_seconds=0.5, budget_seconds=1.0)
# For programs that end on their own, whose error is pinned exactly: the default limits, so a
# loaded machine cannot turn the pinned error into a timeout.
AMPLE = HumanEval()


def function(body: str) -> str:
    indented = "\n".join("    " + line for line in body.splitlines())
    return f"```python\ndef add(x, y):\n{indented}\n    return x + y\n```"


def first_error(reply: str, domain: HumanEval = AMPLE) -> tuple[str, str]:
    verdict = domain.verify(ADD, reply)
    assert verdict.ok is False
    return verdict.errors[0].kind, verdict.errors[0].message


def test_an_infinite_loop_times_out_test_by_test():
    kind, message = first_error(function("while True:\n    pass"), QUICK)
    assert (kind, message) == ("timeout", "assert add(0, 1) == 1 did not finish within 0.5 s")


def test_a_loop_that_swallows_every_alarm_times_out_test_by_test():
    # The function runs in its own process: the harness's alarm is not its to swallow.
    verdict = QUICK.verify(ADD, function("while True:\n    try:\n        while True:\n            pass\n"
                                         "    except BaseException:\n        pass"))
    assert [(e.kind, e.message) for e in verdict.errors] == [
        ("timeout", "assert add(0, 1) == 1 did not finish within 0.5 s"),
        ("timeout", "assert add(1, 0) == 1 did not finish within 0.5 s"),
        ("not_run", "4 more tests did not run: the time for all of them was spent")]


def test_a_fork_bomb_fails_and_leaves_no_process(marked):
    kind, message = first_error(function("import os\nwhile True:\n    try:\n        os.fork()\n"
                                         "    except OSError:\n        pass"), QUICK)
    assert (kind, message) == ("timeout", "assert add(0, 1) == 1 did not finish within 0.5 s")
    assert leftovers(marked) == []


def test_a_memory_bomb_is_a_memory_error():
    kind, message = first_error(function("hog = bytearray(8 * 1024 ** 3)"))
    assert (kind, message) == ("exception", "assert add(0, 1) == 1 raised MemoryError (at line 2 of the function: "
                                            "hog = bytearray(8 * 1024 ** 3))")
    assert QUICK.score(ADD, function("hog = bytearray(8 * 1024 ** 3)")) is False


def test_writing_files_outside_its_directory_fails_and_writes_nothing():
    name = f"escape-{uuid.uuid4().hex}"
    targets = [ROOT / name, Path.home() / name]
    body = "".join(f"open({str(t)!r}, 'w').write('x')\n" for t in targets)
    kind, message = first_error(function(body))
    # Which refusal depends on where the project lies: on a read-only mount (EROFS), or under
    # /tmp, which the sandbox covers with its own empty tmpfs (the path is not there: EACCES
    # for the unprivileged uid, ENOENT otherwise). A clean clone in /tmp gets the second.
    refused = re.search(r"raised (OSError: \[Errno 30\] Read-only file system|PermissionError: \[Errno 13\] "
                        r"Permission denied|FileNotFoundError: \[Errno 2\] No such file or directory): ", message)
    assert kind == "exception" and refused is not None, message
    assert [t for t in targets if t.exists()] == []


def test_the_environment_of_the_parent_is_not_visible(monkeypatch):
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("VERILOOP_TEST_SECRET", secret)
    reply = function("import os\nleak = os.environ['VERILOOP_TEST_SECRET']")
    kind, message = first_error(reply)
    assert (kind, message) == ("exception", "assert add(0, 1) == 1 raised KeyError: 'VERILOOP_TEST_SECRET' (at line 3 "
                                            "of the function: leak = os.environ['VERILOOP_TEST_SECRET'])")
    # Nor through /proc: the sandbox has its own, where no process carries our environment.
    snoop = function("import os\nfor pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
                     "        try:\n            print(open(f'/proc/{pid}/environ').read())\n"
                     "        except OSError:\n            pass\nraise RuntimeError('snooped')")
    verdict = AMPLE.verify(ADD, snoop)
    assert verdict.ok is False and all(secret not in e.message for e in verdict.errors)
    assert verdict.errors[0].message.startswith("assert add(0, 1) == 1 raised RuntimeError: snooped")


def test_the_network_is_unreachable():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        kind, message = first_error(function(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 1)"))
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing reached the host
    assert kind == "exception"
    assert message.startswith("assert add(0, 1) == 1 raised OSError: [Errno 101] Network is unreachable"), message
