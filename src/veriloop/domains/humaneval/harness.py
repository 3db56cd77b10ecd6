"""The test harness veriloop sends into its sandbox with a candidate function.

This file is never run in veriloop's own process: `runner.py` hands its source to
`tools.sandbox.run_python` as the prelude (compiled once there, run first in the
program's namespace) of a one-line program that calls `main` with the payload (base64 of
marshal; the worker's part of this file among it, its source up to the line that opens
the harness's side, as bytecode compiled there), whose variable `answer` brings the
report back (JSON). veriloop's process imports it only for `check_plan`, which parses
and compiles HumanEval's own test module (never runs it) so that a "check" run here
needs no ast.

Two processes inside the sandbox. The harness (the program's own process, trusted) runs
the problem's prompt (its imports and helpers) and the tests; it never runs the
candidate's code. It makes itself non-dumpable, then starts the worker: a fresh
interpreter (fork, then exec, so none of the harness's memory, the tests among it,
comes along) holding only two pipes to the harness, in its own process group, killed
if the harness dies. The worker runs the prompt, forgets the prompt's stub of the entry
point, runs the candidate's code, then serves calls: each request is the arguments in
the strict encoding below (sent with marshal: the harness is trusted); each reply is the
function's value in that encoding, or the exception it raised (its type, last line and
the candidate's line it came from), with what it printed, as JSON that the harness only
parses. In the tests the entry point is a stand-in that forwards each call to
the worker and decodes the reply into fresh plain values, so every comparison is made
here on values the candidate's code never touched. The worker keeps its state between
calls of one run. A call that does not return within the test's time limit, or whose
worker ends or answers out of protocol, fails; the worker is killed and a fresh one is
started for the next call. Starting a worker interpreter (up to its first message,
"ready") is the harness's own work and is not timed: the alarm is held meanwhile, so a
loaded machine's slow start cannot turn the definition or a test into a timeout. The
tests' budget starts with the first test (defining the function has one test's limit of
its own) and is charged what each test took, less a worker's start; a test that timed
out is charged exactly its limit, so a function that loops in every test leaves the same
tests unrun however slow the machine.

The encoding (`_encode`, `_decode`): None, bool, int, float (nan and infinities too),
complex, str, bytes, and lists, tuples, dicts, sets and frozensets of them, at most
`_DEPTH` levels deep and `_MESSAGE_BYTES` long. An instance of a subclass of one of
these (Counter, IntEnum, a str subclass) is read with the base type's own methods, so
its overrides are never called and what arrives is the base type's value; numpy
scalars are read as their Python value; anything else fails the test that received it
("the function returned a value of type X").

The tests, one at a time, each with its own time limit and its printed output captured:

- "check": HumanEval's `check(candidate)`. The test module's other statements (METADATA,
  imports, helpers) run first, in the problem's namespace (the prompt's code, the entry
  point bound to the stand-in); then each top-level statement of `check`'s body is one
  step, run in a copy of that namespace with `candidate` bound to the stand-in. A step
  that mentions `candidate` is a test; the others are setup. A failing test does not
  stop the ones after it; a failing setup step does (what follows may need it).
- "asserts": assert statements (tests a model wrote), one test each. They run here, in
  the harness's process, as the verifier's own words; the function they call still
  runs in the worker.
- "examples": docstring examples, (source, wanted output): the source runs as the
  interactive prompt would run it, and passes when its printed output, or its value
  read back as a literal, matches what the docstring shows.

Every `assert` is rewritten (with `ast`) into a call that reports, on failure, both sides
of a one-operator comparison, and the values of the variables the test assigned that it
names; an exception is reported by its last line and the candidate's line it came from.

Invariants:
- Standard library only, imported at the top of each part: the worker's part imports
  only what starts fast (its start is paid on every run), the harness's side what starts
  fast too (the C modules under json, base64 and signal), and ast, signal and json.decoder
  only on the paths that need them (tests parsed here, a killed worker, a malformed reply).
- No triple backquote anywhere in this file: the sandbox would read one as a fenced block.
- The report is bounded (`max_reported` failing tests in full, each field cut to
  `field_chars`), so it fits the sandbox's `answer`.
- The candidate's code runs only in the worker, which holds no descriptor but its two
  pipes (and /dev/null), cannot read or trace the harness (non-dumpable), and sends
  only data that is decoded here into plain values: it cannot reach the tests, the
  comparisons or the report, and cannot write the sandbox's record. A worker that dies,
  hangs or answers out of protocol fails the call; killing or stopping the harness
  itself ends the whole run as a failure (the sandbox trusts the record only after a
  clean exit of this process, which only the end of `main` gives).
"""

import builtins
import marshal
import os
import sys
from _json import encode_basestring_ascii

_DEPTH = 100  # HumanEval's values nest 3 deep at most
_MESSAGE_BYTES = 32 * 1024 * 1024
_HEADER = 12  # decimal length before each message


class _Unsendable(BaseException):
    """A value outside the encoding (its text says which); a BaseException for the same reason."""


class _Closed(Exception):
    """The other end of a pipe closed before a whole message came."""


class _Output:
    """sys.stdout while a test (or a call, in the worker) runs: keeps the first `cap` characters."""

    def __init__(self, cap):
        self.cap, self.parts, self.size = cap, [], 0

    def write(self, text):
        text = str(text)
        if self.size < self.cap:
            self.parts.append(text[: self.cap - self.size])
        self.size += len(text)
        return len(text)

    def flush(self):
        pass

    def text(self):
        return "".join(self.parts) + (" ..." if self.size > self.cap else "")


# ---------------------------------------------------------------------- the wire (both processes)


def _encode(value, depth=0):
    """`value` as JSON-ready data: None, bools, small ints and str stand for themselves;
    everything else is a list whose first item says the type."""
    kind = type(value)
    if value is None or kind is bool:
        return value
    if depth > _DEPTH:
        raise _Unsendable("a value nested deeper than " + str(_DEPTH) + " levels")
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        value = value.item()
        kind = type(value)
        if value is None or kind is bool:
            return value
    if issubclass(kind, int):
        number = int.__int__(value)
        return number if -(1 << 62) < number < (1 << 62) else ["I", hex(number)]
    if issubclass(kind, float):
        return ["f", float.__repr__(value)]
    if issubclass(kind, complex):
        return ["c", float.__repr__(complex.real.__get__(value)), float.__repr__(complex.imag.__get__(value))]
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, bytes):
        return ["b", bytes.hex(value)]
    deeper = depth + 1
    if issubclass(kind, list):
        return ["l"] + [_encode(item, deeper) for item in list.copy(value)]
    if issubclass(kind, tuple):
        return ["t"] + [_encode(item, deeper) for item in tuple.__iter__(value)]
    if issubclass(kind, dict):
        return ["d"] + [[_encode(k, deeper), _encode(v, deeper)] for k, v in list(dict.items(value))]
    if issubclass(kind, frozenset):
        return ["F"] + [_encode(item, deeper) for item in list(frozenset.__iter__(value))]
    if issubclass(kind, set):
        return ["S"] + [_encode(item, deeper) for item in list(set.__iter__(value))]
    raise _Unsendable("a value of type " + str(getattr(kind, "__name__", "?"))[:80])


_BUILD = {"l": list, "t": tuple, "S": set, "F": frozenset}


def _decode(data, depth=0):
    """Fresh plain values from `_encode`'s data; ValueError (or TypeError, for an
    unhashable key or member) for anything else."""
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is str:
        return data
    if kind is not list or not data or depth > _DEPTH + 1:
        raise ValueError("not an encoded value")
    tag, rest = data[0], data[1:]
    if tag in _BUILD:
        return _BUILD[tag](_decode(item, depth + 1) for item in rest)
    if tag == "d":
        return {_decode(k, depth + 1): _decode(v, depth + 1) for k, v in rest}
    if tag == "I" and len(rest) == 1 and type(rest[0]) is str:
        return int(rest[0], 16)
    if tag == "f" and len(rest) == 1 and type(rest[0]) is str:
        return float(rest[0])
    if tag == "c" and len(rest) == 2 and type(rest[0]) is str and type(rest[1]) is str:
        return complex(float(rest[0]), float(rest[1]))
    if tag == "b" and len(rest) == 1 and type(rest[0]) is str:
        return bytes.fromhex(rest[0])
    raise ValueError("not an encoded value")


def _json_text(data):
    """JSON for the worker's replies and the harness's report, written without the json
    module (whose import each run would pay): only what `_encode`, the replies and the
    report hold."""
    kind = type(data)
    if data is None:
        return "null"
    if kind is bool:
        return "true" if data else "false"
    if kind is int:
        return str(data)
    if kind is str:
        return encode_basestring_ascii(data)
    if kind is list:
        return "[" + ",".join([_json_text(item) for item in data]) + "]"
    if kind is dict:
        return "{" + ",".join([encode_basestring_ascii(k) + ":" + _json_text(v) for k, v in data.items()]) + "}"
    raise _Unsendable("a value of type " + kind.__name__)


def _reply(fd, message):
    """The worker's message to the harness (JSON, which the harness parses as data only)."""
    data = _json_text(message).encode("ascii")
    if len(data) > _MESSAGE_BYTES:
        raise _Unsendable("a value longer than " + str(_MESSAGE_BYTES >> 20) + " MiB when encoded")
    _frame(fd, data)


def _frame(fd, data):
    data = str(len(data)).zfill(_HEADER).encode("ascii") + data
    while data:
        data = data[os.write(fd, data):]


def _take(fd, size):
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise _Closed()
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _message(fd):
    """The next message's bytes; ValueError when its header is not one."""
    header = _take(fd, _HEADER)
    if not header.isdigit() or int(header) > _MESSAGE_BYTES:
        raise ValueError("not a message")
    return _take(fd, int(header))


def _cut(text, field):
    text = " ".join(str(text).split()) if "\n" in str(text) else str(text)
    return text if len(text) <= field else text[: field - 3] + "..."


def _exception_text(exc, field):
    """Its last line as a traceback ends, without importing traceback (the worker's start
    is paid once per run)."""
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = str(kind.__module__) + "." + name
    try:
        text = str(exc.msg) if isinstance(exc, SyntaxError) else str(exc)
    except BaseException:
        text = "<exception str() failed>"
    return _cut(name + ": " + text if text else name, field)


# ---------------------------------------------------------------------- the worker (its own process)


class _Worker:
    """The candidate's side: its namespace, defined once, and one call at a time."""

    def __init__(self, config):
        self.entry = config["entry_point"]
        self.code = config["code"]
        self.field = int(config["field_chars"])
        self.ns = {"__name__": "__candidate__", "__builtins__": builtins}

    def candidate_line(self, tb):
        """' (at line N of the function: TEXT)' for the deepest frame of the candidate's code in `tb`."""
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<candidate>":
                found = tb.tb_lineno
            tb = tb.tb_next
        if found is None:
            return ""
        lines = self.code.splitlines()
        text = lines[found - 1].strip() if 0 < found <= len(lines) else ""
        return " (at line " + str(found) + " of the function: " + _cut(text, self.field) + ")"

    def define(self, context):
        try:
            exec(compile(context, "<prompt>", "exec"), self.ns)
        except BaseException as exc:
            return {"error": {"kind": "harness", "message": "the problem's own code failed: "
                              + _exception_text(exc, self.field)}}
        self.ns.pop(self.entry, None)  # the prompt's stub must not pass for the candidate's function
        try:
            code = compile(self.code, "<candidate>", "exec")
        except SyntaxError as exc:
            where = "line " + str(exc.lineno)
            if exc.text and exc.text.strip():
                where += ": " + exc.text.strip()
            return {"error": {"kind": "syntax_error", "message": type(exc).__name__ + ": " + str(exc.msg)
                              + " (" + _cut(where, self.field) + ")"}}
        out = _Output(self.field)
        saved = sys.stdout
        sys.stdout = out
        try:
            exec(code, self.ns)
        except BaseException as exc:
            return {"error": {"kind": "definition_error", "message": "running the code that defines the function "
                              "raised " + _exception_text(exc, self.field) + self.candidate_line(exc.__traceback__),
                              "output": out.text()}}
        finally:
            sys.stdout = saved
        if not callable(self.ns.get(self.entry)):
            return {"error": {"kind": "malformed", "message": "the code does not define a function named " + self.entry}}
        return {"defined": True, "output": out.text()}

    def call(self, request):
        args, kwargs = _decode(request["args"]), _decode(request["kwargs"])
        out = _Output(self.field + 1)  # one more than the harness keeps: it then marks the cut
        saved = sys.stdout
        sys.stdout = out
        try:
            value = self.ns[self.entry](*args, **kwargs)
            reply = {"value": _encode(value)}
        except _Unsendable as exc:
            reply = {"unsendable": str(exc)}
        except BaseException as exc:
            kind = type(exc)
            try:
                sent = _encode(exc.args)
            except BaseException:  # arguments that do not cross: the text below still does
                sent = ["t"]
            reply = {"raised": {"type": kind.__name__, "builtin": getattr(builtins, kind.__name__, None) is kind,
                                "args": sent, "text": _exception_text(exc, self.field),
                                "where": self.candidate_line(exc.__traceback__)}}
        finally:
            sys.stdout = saved
        reply["output"] = "".join(out.parts)
        reply["id"] = request["id"]
        return reply


def serve():
    """The worker's loop: its configuration, the definition, then one reply per call
    until the harness closes the pipe."""
    requests, replies = os.dup(0), os.dup(1)  # duplicates are not inherited by what the candidate starts
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    try:
        # Started: what follows is the candidate's (the harness times it, not this start).
        _reply(replies, {"ready": True})
        # The harness's messages are marshal (it is trusted; marshal needs no import);
        # the worker's are JSON, which the harness reads as data.
        config = marshal.loads(_message(requests))
        sys.path[:] = [str(p) for p in config["path"]]
        worker = _Worker(config)
        _reply(replies, worker.define(config["context"]))
        while True:
            request = marshal.loads(_message(requests))
            reply = worker.call(request)
            try:
                _reply(replies, reply)
            except _Unsendable as exc:
                _reply(replies, {"unsendable": str(exc), "output": reply["output"], "id": request["id"]})
    finally:
        os._exit(0)


# ---------------------------------------------------------------------- the harness's side
# The worker is sent this file up to the line above; what only the harness needs is imported here.
# Not json, base64, traceback or signal: with re, enum and collections they cost a verdict
# about 5 ms of CPU; the C parts they wrap (_json, binascii, _signal) are enough here. ast
# (6 ms) only where the tests are parsed here: a "check" run gets them parsed and compiled
# (`check_plan`, in veriloop's process).
import _signal  # noqa: E402
import binascii  # noqa: E402
import ctypes  # noqa: E402
import operator  # noqa: E402
import time  # noqa: E402
from _json import make_scanner  # noqa: E402

_OPS = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
    "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}
_COMPARE = "__veriloop_compare__"
_TRUTH = "__veriloop_truth__"
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4
_PLAIN = ("only plain values are compared: None, bool, int, float, complex, str, bytes, and lists, tuples, "
          "dicts and sets of them")

# The worker's first code: reads the worker's part of this file, compiled by veriloop
# (marshalled bytecode: the worker does not compile it on every run), from its request
# pipe (fd 0) and serves. A string, because the worker is a fresh interpreter given only `-c`.
_BOOT = (
    "import marshal, os\n"
    "def take(n):\n"
    "    data = b''\n"
    "    while len(data) < n:\n"
    "        chunk = os.read(0, n - len(data))\n"
    "        if not chunk:\n"
    "            os._exit(0)\n"
    "        data += chunk\n"
    "    return data\n"
    "scope = {'__name__': '__veriloop_worker__'}\n"
    "exec(marshal.loads(take(int(take(12)))), scope)\n"
    "scope['serve']()\n"
)


class _Timeout(BaseException):
    """Raised by the alarm: BaseException, so an `except Exception` in a test does not swallow it."""


class _BudgetSpent(Exception):
    """The harness's whole budget was spent before a test could start (never the candidate's)."""


class _Gone(BaseException):
    """The worker ended, could not start, or answered out of protocol during a call; a
    BaseException, so a test's `except Exception` cannot count it as a pass."""


class _Raised(Exception):
    """Stands for an exception of the candidate's whose type is not a builtin one."""


class _Failed(AssertionError):
    def __init__(self, index, left=None, right=None, compared=False):
        super().__init__(index)
        self.index, self.left, self.right, self.compared = index, left, right, compared


def _alarm(signum, frame):
    raise _Timeout()


# Seconds the current test's alarm was held (`_untimed`): the test is not charged for them.
_held = [0.0]


def _untimed(start):
    """`start()` with the test's alarm held: starting a worker interpreter is the
    harness's own work, which a loaded machine slows, not the candidate's."""
    left, interval = _signal.setitimer(_signal.ITIMER_REAL, 0)
    began = time.monotonic()
    try:
        return start()
    finally:
        _held[0] += time.monotonic() - began
        if left > 0:
            _signal.setitimer(_signal.ITIMER_REAL, left, interval)


def _send(fd, message):
    _frame(fd, marshal.dumps(message))


class _Strict:
    """json.loads' settings, for the C scanner alone."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = make_scanner(_Strict())  # type: ignore[arg-type]  # typeshed types the context as a scanner


def _receive(fd):
    """The worker's next message: a JSON object (parsed as data only, with nothing around
    it: `_reply` writes none), or ValueError."""
    text = _message(fd).decode("ascii")
    try:
        message, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not a message") from None
    if end != len(text) or type(message) is not dict:
        raise ValueError("not a message")
    return message


def _guard():
    """Before any worker exists: this process cannot be traced or have its descriptors
    opened through /proc by a process of its uid, and an interrupt ends it (a signal a
    worker sends makes the run fail, it cannot turn into a test's exception)."""
    _prctl(_PR_SET_DUMPABLE, 0)
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)


def _prctl(option, value):
    """prctl(2); nothing where there is none (not Linux: the sandbox runs only unisolated
    there, where nothing is promised)."""
    libc = ctypes.CDLL(None, use_errno=True)
    call = getattr(libc, "prctl", None)
    if call is not None and call(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(" + str(option) + ") failed")


def _ended(status):
    if os.WIFSIGNALED(status):
        import signal  # only for a worker that was killed: its import costs a verdict 4 ms

        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return "the function's process was killed by signal " + name
    return "the function's process ended (exit status " + str(os.WEXITSTATUS(status)) + ")"


class _Remote:
    """The worker as the harness sees it: started on first need, killed on any trouble."""

    def __init__(self, config, field):
        self.config, self.field = config, field
        self.pid = self.requests = self.replies = None
        self.serial = 0

    def start(self):
        """Start a worker (untimed: `_untimed`) and define the candidate in it (timed);
        the definition's reply."""
        _untimed(self.spawn)  # OSError: no process to be had
        try:
            ready = _untimed(self.boot)
            if ready.get("ready") is not True:
                raise ValueError("not ready")
            _send(self.requests, {"context": self.config.get("context", ""), "code": self.config["code"],
                                  "entry_point": self.config["entry_point"], "field_chars": self.field,
                                  "path": list(sys.path)})
            reply = _receive(self.replies)
        except (_Closed, OSError, ValueError):
            return {"error": {"kind": "definition_error", "message": "running the code that defines the function "
                              "failed: " + _ended(self.stop())}}
        except BaseException:
            self.stop()
            raise
        if reply.get("defined") is not True:
            self.stop()
        return reply

    def spawn(self):
        """A fresh worker interpreter, not yet given the worker's code."""
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            raise
        if pid == 0:
            try:
                _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)
                os.setpgid(0, 0)
                os.dup2(request_r, 0)
                os.dup2(reply_w, 1)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 2)
                # Every other descriptor goes, the sandbox's record pipe first among them.
                os.closerange(3, max(65536, os.sysconf("SC_OPEN_MAX")))
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", _BOOT])
            finally:
                os._exit(127)
        os.close(request_r)
        os.close(reply_w)
        self.pid, self.requests, self.replies = pid, request_w, reply_r

    def boot(self):
        """The worker's code sent to the interpreter `spawn` started; its first message."""
        _frame(self.requests, self.config["worker"])
        return _receive(self.replies)

    def stop(self):
        """Kill the worker (its whole group) and reap it; its wait status (0 if none)."""
        status = 0
        if self.pid is not None:
            for fd in (self.requests, self.replies):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                os.killpg(self.pid, _signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(self.pid, _signal.SIGKILL)
            except OSError:
                pass
            try:
                status = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                pass
            self.pid = self.requests = self.replies = None
        return status

    def call(self, args, kwargs):
        """The function's value for these arguments, decoded here; its exception raised
        again here; _Gone or _Unsendable when there is no value to give."""
        try:
            message = {"args": _encode(args), "kwargs": _encode(kwargs)}
        except _Unsendable as exc:
            raise TypeError("the test passes " + str(exc) + " to the function, which runs in its own process; "
                            + _PLAIN) from None
        if self.pid is None:
            try:
                reply = self.start()
            except OSError as exc:
                raise _Gone("the function's process could not start: " + _cut(exc, self.field)) from None
            if reply.get("defined") is not True:
                error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
                raise _Gone("defining the function again failed: " + _cut(error.get("message"), self.field))
        self.serial += 1
        message["id"] = self.serial
        try:
            _send(self.requests, message)
            reply = _receive(self.replies)
            if reply.get("id") != self.serial:
                raise ValueError("out of turn")
            printed = reply.get("output")
            if isinstance(printed, str):
                sys.stdout.write(printed[: self.field + 1])
            if "value" in reply:
                return _decode(reply["value"])
            if "raised" in reply and isinstance(reply["raised"], dict):
                failure = _relayed(reply["raised"], self.field)
            elif isinstance(reply.get("unsendable"), str):
                failure = _Unsendable("the function returned " + _cut(reply["unsendable"], self.field) + "; " + _PLAIN)
            else:
                raise ValueError("no value")
        except (_Closed, BrokenPipeError):
            raise _Gone(_ended(self.stop()) + " during the call") from None
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError):
            self.stop()
            raise _Gone("the function's process sent a reply that is not one") from None
        except BaseException:
            self.stop()
            raise
        raise failure


def _relayed(raised, field):
    """An exception standing for the candidate's: of the same builtin type when it was
    one (so a test's `except ValueError` still catches it), with its text and line."""
    kind = getattr(builtins, str(raised.get("type")), None) if raised.get("builtin") is True else None
    exc = None
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            exc = kind.__new__(kind)
        except BaseException:
            exc = None
    if exc is None:
        exc = _Raised()
    try:
        args = _decode(raised.get("args"))
    except (ValueError, TypeError, RecursionError):
        args = ()
    exc.args = args if type(args) is tuple else (args,)
    exc.veriloop_text = _cut(raised.get("text"), field)
    exc.veriloop_where = str(raised.get("where") or "")[: field + 60]
    return exc


def _asserts(rename, table):
    """A transformer that makes every assert a call that says what failed; `table` keeps what to show."""
    import ast

    class Asserts(ast.NodeTransformer):
        def visit_Assert(self, node):
            index = len(table)
            shown = ast.Assert(test=node.test, msg=None)
            test = node.test
            names = sorted({n.id for n in ast.walk(test) if isinstance(n, ast.Name)})
            if isinstance(test, ast.Compare) and len(test.ops) == 1:
                op = type(test.ops[0]).__name__
                call = ast.Call(ast.Name(_COMPARE, ast.Load()),
                                [ast.Constant(index), ast.Constant(op), test.left, test.comparators[0]], [])
            else:
                op = None
                call = ast.Call(ast.Name(_TRUTH, ast.Load()), [ast.Constant(index), test], [])
            table.append({
                "shown": _display(shown, rename), "op": op, "names": names,
                "lines": (node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno),
            })
            return ast.copy_location(ast.Expr(call), node)

    return Asserts()


def _steps(statements, rename, is_test, compiled):
    """Each statement as a step (testing, shown, table, code): its asserts rewritten, its
    code compiled when `compiled`, else its module, compiled when the step runs (a step
    that does not compile fails only when reached, as it always did)."""
    import ast

    steps = []
    for statement in statements:
        testing = is_test(statement)
        shown = _first_line(_display(statement, rename))  # before the rewrite, which changes compound statements
        table = []
        module = ast.fix_missing_locations(_asserts(rename, table).visit(ast.Module([statement], [])))
        if isinstance(statement, ast.Assert):
            shown = table[0]["shown"]
        steps.append((testing, shown, table, _compile(module) if compiled else module))
    return steps


def _compile(module):
    # optimize=0, the sandbox's own level, also where veriloop's process compiles (check_plan).
    return compile(module, "<tests>", "exec", optimize=0)


def check_plan(source, entry_point, compiled=False):
    """What a "check" run needs that no candidate changes: HumanEval's test module
    `source` parsed, its setup and `check`'s steps (`_steps`) with their asserts
    rewritten. veriloop's process makes it once per test module (`compiled`: parses and
    compiles, never runs; the sandbox then needs no ast); the harness makes it itself
    when it got none. Raises what parsing raises, _HarnessError without check(candidate)."""
    import ast

    tree = ast.parse(source)
    checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if not checks or not checks[-1].args.args:
        raise _HarnessError("the test module has no check(candidate) function")
    check = checks[-1]
    param = check.args.args[0].arg
    setup = _compile(ast.Module([s for s in tree.body if s is not check], []))
    assigned = {n.id for n in ast.walk(check) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assigned.discard(param)
    steps = _steps(check.body, (param, entry_point),
                   lambda s: any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(s)), compiled)
    return {"lines": source.splitlines(), "param": param, "setup": setup, "assigned": assigned, "steps": steps}


def _display(node, rename):
    import ast

    text = ast.unparse(node)
    if rename:
        old, new = rename
        tree = ast.parse(text)
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and n.id == old:
                n.id = new
        text = ast.unparse(tree)
    return text


_CODE = type(_display.__code__)


def _compare(index, op, left, right):
    if not _OPS[op](left, right):
        raise _Failed(index, left, right, compared=True)


def _truth(index, value):
    if not value:
        raise _Failed(index)


class Harness:
    def __init__(self, config):
        self.config = config
        self.field = int(config.get("field_chars", 300))
        self.budget = float(config.get("budget_seconds", 6.0))
        self.left = self.budget
        self.test_seconds = float(config.get("test_seconds", 3.0))
        self.entry = config["entry_point"]
        self.remote = _Remote(config, self.field)
        self.tests = []
        self.assigned = set()
        self.source_lines = []
        _signal.signal(_signal.SIGALRM, _alarm)

    # ------------------------------------------------------------------ helpers

    def cut(self, text):
        return _cut(text, self.field)

    def show(self, value):
        try:
            text = repr(value)
        except BaseException as exc:  # a test's own object may refuse even that
            text = "<unprintable " + type(exc).__name__ + ">"
        return self.cut(text)

    def timed(self, run, out):
        """Run `run()` under the alarm with its printed output going to `out`; raises
        _Timeout when it takes too long, _BudgetSpent when the harness's whole budget is
        spent before it starts. The budget is charged what each test took (less a
        worker's start), a test that timed out exactly its limit: a loop that times out
        test after test leaves the same tests unrun however slow the machine."""
        if self.left <= 0:
            raise _BudgetSpent()
        limit = min(self.test_seconds, self.left)
        saved = sys.stdout
        sys.stdout = out
        _held[0] = 0.0
        began = time.monotonic()
        charged = limit
        # Re-armed every 50 ms: a test that swallows one alarm meets the next.
        _signal.setitimer(_signal.ITIMER_REAL, limit, 0.05)
        try:
            result = run()
            charged = min(limit, time.monotonic() - began - _held[0])
            return result
        except _Timeout:
            raise
        except BaseException:
            charged = min(limit, time.monotonic() - began - _held[0])
            raise
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            sys.stdout = saved
            self.left -= charged

    def test_line(self, tb, table):
        """What to show for the test an exception came from: its assert, else its line."""
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<tests>":
                found = tb.tb_lineno
            tb = tb.tb_next
        if found is None:
            return None
        for entry in table:
            if entry["lines"][0] <= found <= entry["lines"][1]:
                return entry["shown"]
        if 0 < found <= len(self.source_lines):
            return self.source_lines[found - 1].strip()
        return None

    def exception_text(self, exc):
        """Its last line, and the candidate's line it came from when it is the candidate's."""
        text = getattr(exc, "veriloop_text", None)
        if text is None:
            return _exception_text(exc, self.field)
        return text + getattr(exc, "veriloop_where", "")

    # ------------------------------------------------------------------ the candidate

    def define(self):
        """(the problem's namespace with the entry point bound to the worker, what
        defining it printed), or (None, why not)."""
        ns = {"__name__": "__candidate__", "__builtins__": builtins}
        exec(compile(self.config.get("context", ""), "<prompt>", "exec"), ns)
        try:
            reply = self.timed(self.remote.start, _Output(self.field))
        except OSError as exc:  # no process to be had: the machine's doing, not the candidate's
            return None, {"kind": "harness", "message": "the function's process could not start: " + self.cut(exc)}
        except _Timeout:
            self.remote.stop()
            return None, {"kind": "timeout", "message": "running the code that defines the function did not finish "
                          "within " + format(self.test_seconds, "g") + " s"}
        if reply.get("defined") is not True:
            error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
            why = {"kind": str(error.get("kind", "definition_error")), "message": self.cut(error.get("message"))}
            if error.get("output"):
                why["output"] = self.cut(error["output"])
            return None, why
        remote = self.remote

        def candidate(*args, **kwargs):
            return remote.call(args, kwargs)

        candidate.__name__ = candidate.__qualname__ = self.entry
        ns[self.entry] = candidate  # in place of the prompt's stub
        return ns, self.cut(reply.get("output") or "")

    # ------------------------------------------------------------------ one test

    def outcome(self, run, shown, table, scope, out=None):
        """Run one test; its record: {"ok": True} or what failed, with its output."""
        out = _Output(self.field) if out is None else out
        record = {"ok": False, "test": self.cut(shown)}
        try:
            self.timed(run, out)
        except _BudgetSpent:
            return {"ok": False, "kind": "not_run", "test": self.cut(shown)}
        except _Timeout:
            record.update(kind="timeout", message=self.cut(shown) + " did not finish within "
                          + format(self.test_seconds, "g") + " s")
        except _Failed as failed:
            entry = table[failed.index]
            record.update(test=self.cut(entry["shown"]), kind="wrong_output",
                          message=self.failure_text(entry, failed, scope))
        except (_Gone, _Unsendable) as exc:
            where = self.test_line(exc.__traceback__, table) or shown
            record.update(test=self.cut(where), kind="exception" if isinstance(exc, _Gone) else "wrong_output",
                          message=self.cut(where) + " failed: " + str(exc))
        except BaseException as exc:
            where = self.test_line(exc.__traceback__, table) or shown
            record.update(test=self.cut(where), kind="exception", message=self.cut(where) + " raised "
                          + self.exception_text(exc))
        else:
            return {"ok": True}
        printed = out.text()
        if printed:
            record["output"] = printed
        return record

    def failure_text(self, entry, failed, scope):
        text = self.cut(entry["shown"]) + " failed"
        if failed.compared:
            left, right = self.show(failed.left), self.show(failed.right)
            if entry["op"] == "Eq":
                text += ": got " + left + ", expected " + right
            elif entry["op"] == "NotEq":
                text += ": got " + left + ", which it must not be"
            else:
                text += ": the left side is " + left + ", the right side " + right
        values = [name + " = " + self.show(scope[name]) for name in entry["names"]
                  if name in self.assigned and name in scope]
        if values:
            text += " (with " + ", ".join(values) + ")"
        return text

    # ------------------------------------------------------------------ the modes

    def run(self):
        report = {"defined": False, "error": None, "tests": [], "output": ""}
        try:
            ns, defined = self.define()
        except BaseException as exc:  # the prompt itself failed: not the candidate's doing
            report["error"] = {"kind": "harness", "message": "the problem's own code failed: " + self.exception_text(exc)}
            return report
        if ns is None:
            report["error"] = defined
            return report
        report["defined"] = True
        report["output"] = defined
        # The budget is the tests': starting the worker and defining the function have
        # the one test's limit of their own.
        self.left = self.budget
        mode = self.config["mode"]
        try:
            if mode == "check":
                self.run_check(ns)
            elif mode == "asserts":
                self.run_asserts(ns)
            else:
                self.run_examples(ns)
        except _HarnessError as exc:
            report["error"] = {"kind": "harness", "message": str(exc)}
        report["tests"] = self.tests
        return report

    def run_check(self, ns):
        plan = self.config.get("plan") or check_plan(self.config["tests"], self.entry)
        self.source_lines = plan["lines"]
        setup = plan["setup"]
        try:
            self.timed(lambda: exec(setup, ns), _Output(self.field))
        except BaseException as exc:
            raise _HarnessError("the test module's own code failed: " + self.exception_text(exc)) from None
        self.assigned = plan["assigned"]
        scope = dict(ns)
        scope[plan["param"]] = ns[self.entry]
        self.run_steps(plan["steps"], scope)

    def run_asserts(self, ns):
        import ast

        source = "\n".join(self.config["tests"])
        self.source_lines = source.splitlines()
        body = ast.parse(source).body
        self.assigned = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.run_steps(_steps(body, None, lambda s: True, compiled=False), dict(ns))

    def run_steps(self, steps, scope):
        """Each step in turn; a failing test does not stop the rest, a failing setup step
        (or the spent budget) does."""
        scope[_COMPARE], scope[_TRUTH] = _compare, _truth
        stopped = False
        for testing, shown, table, code in steps:
            if stopped:
                if testing:
                    self.tests.append({"ok": False, "kind": "not_run", "test": self.cut(shown)})
                continue
            if type(code) is not _CODE:
                code = _compile(code)
            record = self.outcome(lambda: exec(code, scope), shown, table, scope)  # noqa: B023
            if record.get("kind") == "not_run" or (not testing and not record["ok"]):
                stopped = True
            if testing or not record["ok"]:
                self.tests.append(record)

    def run_examples(self, ns):
        scope = dict(ns)
        examples = self.config["tests"]
        for i, (source, want) in enumerate(examples):
            shown = " ".join(source.split())
            record = self.example(scope, source, want, shown)
            self.tests.append(record)
            if record.get("kind") == "not_run":
                self.tests += [{"ok": False, "kind": "not_run", "test": self.cut(" ".join(s.split()))}
                               for s, _ in examples[i + 1:]]
                break

    def example(self, scope, source, want, shown):
        seen = []

        def hook(value):
            seen.append(value)
            if value is not None:
                sys.stdout.write(repr(value) + "\n")

        try:
            code = compile(source, "<example>", "single")
        except SyntaxError as exc:
            return {"ok": False, "kind": "harness", "test": self.cut(shown),
                    "message": "the example does not parse: " + str(exc.msg)}

        def run():
            saved = sys.displayhook
            sys.displayhook = hook
            try:
                exec(code, scope)
            finally:
                sys.displayhook = saved

        out = _Output(self.field)
        record = self.outcome(run, shown, [], scope, out)
        if not record["ok"]:
            return record
        printed = out.text()
        if _same_output(printed, want) or (seen and _same_value(seen[-1], want)):
            return {"ok": True}
        got = printed.strip() or "nothing"
        return {"ok": False, "test": self.cut(shown), "kind": "wrong_output",
                "message": self.cut(shown) + " should give " + self.cut(want.strip()) + ", got " + self.cut(got)}


class _HarnessError(Exception):
    pass


def _first_line(text):
    lines = (text or "").strip().splitlines()
    if not lines:
        return ""
    return lines[0] + (" ..." if len(lines) > 1 else "")


def _same_output(got, want):
    return " ".join(got.split()) == " ".join(want.split())


def _same_value(value, want):
    """The value equals the wanted output read as a literal (quotes, spacing and number
    formatting aside); True and 1 are not the same here, as they are not on the page."""
    import ast

    try:
        expected = ast.literal_eval(want.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    try:
        return isinstance(value, bool) == isinstance(expected, bool) and bool(value == expected)
    except BaseException:
        return False


def main(payload):
    config = marshal.loads(binascii.a2b_base64(payload))
    _guard()
    harness = Harness(config)
    try:
        report = harness.run()
    finally:
        harness.remote.stop()
    reported, shown = [], 0
    for test in report["tests"]:
        if test.get("ok"):
            reported.append({"ok": True})
        elif shown < int(config.get("max_reported", 20)) or test.get("kind") == "not_run":
            reported.append(test)
            shown += test.get("kind") != "not_run"
        else:
            reported.append({"ok": False, "kind": test.get("kind"), "test": test.get("test")})
    report["tests"] = reported
    return _json_text(report)
