"""The test harness veriloop sends into its sandbox with a candidate function.

This file is never run in veriloop's own process: `runner.py` reads its source, appends
one line that calls `main` with the payload (base64 of JSON), and hands the whole program
to `tools.sandbox.run_python`, whose variable `answer` brings the report back (JSON).

What it does inside the sandbox: runs the problem's prompt (its imports and helpers),
forgets the prompt's stub of the entry point, runs the candidate's code, then the tests,
one at a time, each with its own time limit and its printed output captured:

- "check": HumanEval's `check(candidate)`. The test module's other statements (METADATA,
  imports, helpers) run first, in the candidate's namespace as in HumanEval's own
  one-module program; then each top-level statement of `check`'s body is one step, run
  in a copy of that namespace with `candidate` bound to the entry point. A step that
  mentions `candidate` is a test; the others are setup. A failing test does not stop
  the ones after it; a failing setup step does (what follows may need it).
- "asserts": assert statements (tests a model wrote), one test each.
- "examples": docstring examples, (source, wanted output): the source runs as the
  interactive prompt would run it, and passes when its printed output, or its value
  read back as a literal, matches what the docstring shows.

Every `assert` is rewritten (with `ast`) into a call that reports, on failure, both sides
of a one-operator comparison, and the values of the variables the test assigned that it
names; an exception is reported by its last line and the candidate's line it came from.

Invariants:
- Standard library only, imported at the top before the candidate runs.
- No triple backquote anywhere in this file: the sandbox would read one as a fenced block.
- The report is bounded (`max_reported` failing tests in full, each field cut to
  `field_chars`), so it fits the sandbox's `answer`.
- The candidate runs in this same process, so a candidate written to fool the tests
  (forging the report) can; the sandbox contains what it does, it does not make it
  honest.
"""

import ast
import base64
import builtins
import json
import operator
import signal
import sys
import time
import traceback

_OPS = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
    "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}
_COMPARE = "__veriloop_compare__"
_TRUTH = "__veriloop_truth__"


class _Timeout(BaseException):
    """Raised by the alarm: BaseException, so an `except Exception` in the candidate does not swallow it."""


class _BudgetSpent(Exception):
    """The harness's whole budget was spent before a test could start (never the candidate's)."""


class _Failed(AssertionError):
    def __init__(self, index, left=None, right=None, compared=False):
        super().__init__(index)
        self.index, self.left, self.right, self.compared = index, left, right, compared


class _Output:
    """sys.stdout while a test runs: keeps the first `cap` characters."""

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


def _alarm(signum, frame):
    raise _Timeout()


class _Asserts(ast.NodeTransformer):
    """Every assert becomes a call that says what failed; `table` keeps what to show."""

    def __init__(self, rename, table):
        self.rename, self.table = rename, table

    def visit_Assert(self, node):
        index = len(self.table)
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
        self.table.append({
            "shown": _display(shown, self.rename), "op": op, "names": names,
            "lines": (node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno),
        })
        return ast.copy_location(ast.Expr(call), node)


def _display(node, rename):
    text = ast.unparse(node)
    if rename:
        old, new = rename
        tree = ast.parse(text)
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and n.id == old:
                n.id = new
        text = ast.unparse(tree)
    return text


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
        self.deadline = time.monotonic() + float(config.get("budget_seconds", 6.0))
        self.test_seconds = float(config.get("test_seconds", 3.0))
        self.entry = config["entry_point"]
        self.tests = []
        self.assigned = set()
        self.source_lines = []
        signal.signal(signal.SIGALRM, _alarm)

    # ------------------------------------------------------------------ helpers

    def cut(self, text):
        text = " ".join(str(text).split()) if "\n" in str(text) else str(text)
        return text if len(text) <= self.field else text[: self.field - 3] + "..."

    def show(self, value):
        try:
            text = repr(value)
        except BaseException as exc:  # a candidate's object may refuse even that
            text = "<unprintable " + type(exc).__name__ + ">"
        return self.cut(text)

    def timed(self, run, out):
        """Run `run()` under the alarm with its printed output going to `out`; raises
        _Timeout when it takes too long, _BudgetSpent when the harness's whole budget is
        spent before it starts."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _BudgetSpent()
        saved = sys.stdout
        sys.stdout = out
        # Re-armed every 50 ms: a candidate that swallows one alarm meets the next.
        signal.setitimer(signal.ITIMER_REAL, min(self.test_seconds, remaining), 0.05)
        try:
            run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout = saved

    def candidate_line(self, tb):
        """(line number, text) of the deepest frame of the candidate's code in `tb`."""
        found = None
        for frame, lineno in traceback.walk_tb(tb):
            if frame.f_code.co_filename == "<candidate>":
                found = lineno
        if found is None:
            return ""
        lines = self.config["code"].splitlines()
        text = lines[found - 1].strip() if 0 < found <= len(lines) else ""
        return " (at line " + str(found) + " of the function: " + self.cut(text) + ")"

    def test_line(self, tb, table):
        """What to show for the test an exception came from: its assert, else its line."""
        found = None
        for frame, lineno in traceback.walk_tb(tb):
            if frame.f_code.co_filename == "<tests>":
                found = lineno
        if found is None:
            return None
        for entry in table:
            if entry["lines"][0] <= found <= entry["lines"][1]:
                return entry["shown"]
        if 0 < found <= len(self.source_lines):
            return self.source_lines[found - 1].strip()
        return None

    def exception_text(self, exc):
        return self.cut(traceback.format_exception_only(type(exc), exc)[-1].strip())

    # ------------------------------------------------------------------ the candidate

    def define(self):
        """(the candidate's namespace, what defining it printed), or (None, why not)."""
        ns = {"__name__": "__candidate__", "__builtins__": builtins}
        exec(compile(self.config.get("context", ""), "<prompt>", "exec"), ns)
        ns.pop(self.entry, None)  # the prompt's stub must not pass for the candidate's function
        try:
            code = compile(self.config["code"], "<candidate>", "exec")
        except SyntaxError as exc:
            where = "line " + str(exc.lineno)
            if exc.text and exc.text.strip():
                where += ": " + exc.text.strip()
            return None, {"kind": "syntax_error",
                          "message": type(exc).__name__ + ": " + str(exc.msg) + " (" + self.cut(where) + ")"}
        out = _Output(self.field)
        try:
            self.timed(lambda: exec(code, ns), out)
        except _Timeout:
            return None, {"kind": "timeout", "message": "running the code that defines the function did not finish "
                          "within " + format(self.test_seconds, "g") + " s", "output": out.text()}
        except BaseException as exc:
            return None, {"kind": "definition_error", "message": "running the code that defines the function raised "
                          + self.exception_text(exc) + self.candidate_line(exc.__traceback__), "output": out.text()}
        if not callable(ns.get(self.entry)):
            return None, {"kind": "malformed", "message": "the code does not define a function named " + self.entry}
        return ns, out.text()

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
        except BaseException as exc:
            where = self.test_line(exc.__traceback__, table) or shown
            record.update(test=self.cut(where), kind="exception", message=self.cut(where) + " raised "
                          + self.exception_text(exc) + self.candidate_line(exc.__traceback__))
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
        source = self.config["tests"]
        self.source_lines = source.splitlines()
        tree = ast.parse(source)
        checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
        if not checks or not checks[-1].args.args:
            raise _HarnessError("the test module has no check(candidate) function")
        check = checks[-1]
        param = check.args.args[0].arg
        setup = compile(ast.Module([s for s in tree.body if s is not check], []), "<tests>", "exec")
        try:
            self.timed(lambda: exec(setup, ns), _Output(self.field))
        except BaseException as exc:
            raise _HarnessError("the test module's own code failed: " + self.exception_text(exc)) from None
        self.assigned = {n.id for n in ast.walk(check) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.assigned.discard(param)
        scope = dict(ns)
        scope[param] = ns[self.entry]
        self.run_steps(check.body, scope, (param, self.entry),
                       lambda s: any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(s)))

    def run_asserts(self, ns):
        source = "\n".join(self.config["tests"])
        self.source_lines = source.splitlines()
        body = ast.parse(source).body
        self.assigned = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.run_steps(body, dict(ns), None, lambda s: True)

    def run_steps(self, statements, scope, rename, is_test):
        """Each statement a step; a failing test does not stop the rest, a failing setup
        step (or the spent budget) does."""
        scope[_COMPARE], scope[_TRUTH] = _compare, _truth
        stopped = False
        for statement in statements:
            testing = is_test(statement)
            shown = _first_line(_display(statement, rename))
            table = []
            module = _Asserts(rename, table).visit(ast.Module([statement], []))
            if isinstance(statement, ast.Assert):
                shown = table[0]["shown"]
            if stopped:
                if testing:
                    self.tests.append({"ok": False, "kind": "not_run", "test": self.cut(shown)})
                continue
            code = compile(ast.fix_missing_locations(module), "<tests>", "exec")
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
    try:
        expected = ast.literal_eval(want.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    try:
        return isinstance(value, bool) == isinstance(expected, bool) and bool(value == expected)
    except BaseException:
        return False


def main(payload):
    config = json.loads(base64.b64decode(payload).decode("utf-8"))
    report = Harness(config).run()
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
    return json.dumps(report)
