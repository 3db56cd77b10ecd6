"""When two math answers say the same thing.

Numbers are compared first, the way the datasets write them ("1,000", "$5", "5.00",
"50%", "\\frac{14}{3}") and after rounding, as CRITIC's evaluation does. Anything else
(tuples, radicals, intervals, "\\text{(C)}") goes to math_verify, but only through its
LaTeX extraction: its plain-expression extraction hands text to sympy's parse_expr,
which evaluates Python, and model output must never reach an evaluator here. Answers a
program printed in sympy syntax ("2*sqrt(2)", "(3, pi/2)") are first rewritten into
LaTeX from their `ast`, which parses and never runs them. math_verify's timeouts use
signals, which only work on the main thread, so they are switched off and the input
length is capped instead. The cap bounds the text, not what it stands for: `9^{9^{9}}`
is 9 characters and a number of 370 million digits, which sympy would compute when
math_verify compares it. So a parsed answer goes to math_verify (or to evalf) only when
its size is bounded (`_bounded`): every power, factorial, binomial, sum and product in
it has operands whose magnitude, bounded from the literals up, keeps the result under
MAX_RESULT_DIGITS digits; one that is not is equal to nothing but the same text.

A bound on size is not a bound on time (sympy's simplify may still be slow on a small
expression), so every math_verify comparison and evalf runs in a worker process of its
own (`_Judge`, one per process, started on first use and kept): the caller waits at most
JUDGE_SECONDS for its answer; a comparison that takes longer is a non-match, and the
worker is killed and started afresh for the next. The worker caps its own memory, and a
worker that died between calls is started again. Numbers, choices and identical text are
decided here, without it.
"""

from __future__ import annotations

import ast
import atexit
import json
import logging
import math
import os
import re
import selectors
import subprocess
import sys
import threading
import time
from fractions import Fraction
from functools import lru_cache
from typing import IO, Any

MAX_ANSWER_CHARS = 400
MAX_EXPONENT = 400  # 1e400 is already absurd for an answer; 1e999999 would be slow
# The digits an answer's exact value may reach before it is too big to compare: 2^{2007}
# has 605, 100! has 158; 10^{5} digits is still fast for sympy, 9^{9^{9}} is 3.7e8.
MAX_RESULT_DIGITS = 100_000
MAX_DEPTH = 60  # nesting of the parsed expression: deeper is no answer a person writes
DEFAULT_DIGITS = 2
REL_TOL = 1e-6

_UNIT_TEXT_RE = re.compile(r"\\(?:text|mbox|mathrm|textbf)\{[^{}]*\}\s*$")
_THOUSANDS_RE = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_DECIMAL_RE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$", re.IGNORECASE)
_FRACTION_RE = re.compile(r"^([-+]?\d+)\s*/\s*(\d+)$")
_LATEX_FRAC_RE = re.compile(r"^([-+]?)\\[dt]?frac\{([-+]?\d+)\}\{([-+]?\d+)\}$")
_LATEX_FRAC_SHORT_RE = re.compile(r"^([-+]?)\\[dt]?frac(\d)(\d)$")
_CHOICE_RE = re.compile(r"^\(?([A-Ea-e])\)?$")


def _strip_wrappers(text: str) -> str:
    s = text.strip()
    for _ in range(3):
        m = re.fullmatch(r"\\boxed\{(.*)\}", s, re.DOTALL)
        if m:
            s = m.group(1).strip()
    s = s.strip("$").strip()
    s = s.replace("\\$", "").replace("$", "")
    s = s.replace("\\!", "").replace("\\,", "").replace("\\;", "").replace("\\ ", " ")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", "")
    return s.strip().rstrip(".").strip()


def parse_number(text: str | None) -> tuple[Fraction, bool] | None:
    """(value, written as a percentage) for an answer that is one plain number, else
    None. Accepts thousands commas, currency signs, a trailing unit in \\text{...},
    decimals, exponents, "a/b" and \\frac{a}{b}."""
    if text is None or len(text) > MAX_ANSWER_CHARS:
        return None
    s = _strip_wrappers(text)
    if not s:
        return None
    stripped = _UNIT_TEXT_RE.sub("", s).strip()
    if stripped and stripped != s and re.search(r"\d", stripped):
        s = stripped
    percent = False
    for mark in ("\\%", "%"):
        if s.endswith(mark):
            s, percent = s[: -len(mark)].strip(), True
            break
    s = s.replace(" ", "")
    if _THOUSANDS_RE.match(s):
        s = s.replace(",", "")
    s = s.rstrip(".")
    try:
        if _DECIMAL_RE.match(s):
            exponent = re.search(r"e([-+]?\d+)$", s, re.IGNORECASE)
            if exponent and abs(int(exponent.group(1))) > MAX_EXPONENT:
                return None
            return Fraction(s), percent
        m = _FRACTION_RE.match(s)
        if m and int(m.group(2)) != 0:
            return Fraction(int(m.group(1)), int(m.group(2))), percent
        m = _LATEX_FRAC_RE.match(s) or _LATEX_FRAC_SHORT_RE.match(s)
        if m and int(m.group(3)) != 0:
            value = Fraction(int(m.group(2)), int(m.group(3)))
            return (-value if m.group(1) == "-" else value), percent
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def _close(a: Fraction, b: Fraction, digits: int) -> bool:
    if a == b or round(a, digits) == round(b, digits):
        return True
    return math.isclose(float(a), float(b), rel_tol=REL_TOL) if max(abs(a), abs(b)) < 1e300 else False


def numbers_match(pred: str | None, gold: str | None, digits: int = DEFAULT_DIGITS) -> bool:
    """Whether both are plain numbers that agree after rounding to `digits` decimals
    (or within a relative 1e-6). A percentage on either side may also be read as its
    fraction: "25%" matches "25" and "0.25"."""
    p, g = parse_number(pred), parse_number(gold)
    if p is None or g is None:
        return False
    p_values = {p[0], p[0] / 100} if p[1] else {p[0]}
    g_values = {g[0], g[0] / 100} if g[1] else {g[0]}
    return any(_close(a, b, digits) for a in p_values for b in g_values)


# ------------------------------------------------------------ sympy text to LaTeX

_LATEX_NAMES = {"pi": "\\pi", "E": "e", "I": "i", "oo": "\\infty", "zoo": "\\infty", "nan": "\\text{nan}"}
_LATEX_FUNCTIONS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh", "log", "ln", "exp",
}


class _NotMath(ValueError):
    pass


def _render(node: ast.AST) -> str:
    if isinstance(node, ast.Expression):
        return _render(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return repr(node.value)
    if isinstance(node, ast.Name):
        return _LATEX_NAMES.get(node.id, node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = "-" if isinstance(node.op, ast.USub) else ""
        return f"{sign}({_render(node.operand)})"
    if isinstance(node, ast.BinOp):
        left, right = _render(node.left), _render(node.right)
        if isinstance(node.op, ast.Add):
            return f"({left}) + ({right})"
        if isinstance(node.op, ast.Sub):
            return f"({left}) - ({right})"
        if isinstance(node.op, ast.Mult):
            return f"({left}) \\cdot ({right})"
        if isinstance(node.op, ast.Div):
            return f"\\frac{{{left}}}{{{right}}}"
        if isinstance(node.op, ast.Pow):
            return f"({left})^{{{right}}}"
        raise _NotMath(type(node.op).__name__)
    if isinstance(node, (ast.Tuple, ast.List)):
        inner = ", ".join(_render(e) for e in node.elts)
        return f"({inner})" if isinstance(node, ast.Tuple) else f"[{inner}]"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, [_render(a) for a in node.args]
        if name == "sqrt" and len(args) == 1:
            return f"\\sqrt{{{args[0]}}}"
        if name == "root" and len(args) == 2:
            return f"\\sqrt[{args[1]}]{{{args[0]}}}"
        if name == "Rational" and len(args) == 2:
            return f"\\frac{{{args[0]}}}{{{args[1]}}}"
        if name in ("Abs", "abs") and len(args) == 1:
            return f"\\left|{args[0]}\\right|"
        if name == "exp" and len(args) == 1:
            return f"e^{{{args[0]}}}"
        if name in ("Integer", "Float") and len(args) == 1:
            return args[0]
        if name in _LATEX_FUNCTIONS and len(args) == 1:
            return f"\\{name}({args[0]})"
    raise _NotMath(type(node).__name__)


def sympy_text_to_latex(text: str) -> str | None:
    """LaTeX for an answer written in Python/sympy syntax ("2*sqrt(2)", "(3, pi/2)",
    "Rational(14, 3)"), or None when it is not such an expression. Only parsed."""
    if len(text) > MAX_ANSWER_CHARS:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _render(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _NotMath):
        return None


def _looks_like_python(text: str) -> bool:
    return "\\" not in text and (
        "**" in text or re.search(r"\b(sqrt|Rational|pi|oo|Abs|exp|log)\b", text) is not None or "*" in text
    )


# ------------------------------------------------------------ equivalence


def _as_latex(text: str) -> str:
    s = _strip_wrappers(text)
    if _looks_like_python(s):
        converted = sympy_text_to_latex(s)
        if converted is not None:
            return converted
    return s


def _quiet_math_verify() -> None:
    # It warns on every use that its (signal-based) timeouts are off; turning them off is
    # deliberate here (signals break off the main thread), so the warning is noise.
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)


@lru_cache(maxsize=4096)
def _latex_parse(latex: str) -> tuple[object, ...]:
    from math_verify import LatexExtractionConfig, parse

    _quiet_math_verify()

    # Only the LaTeX extractor: the expression extractor would run sympy's parse_expr.
    return tuple(parse(f"${latex}$", extraction_config=[LatexExtractionConfig()], parsing_timeout=None))


def _digits(expr: object, depth: int = 0) -> float:
    """An upper bound on the decimal digits of `expr`'s value were sympy to evaluate it
    (inf: too big to evaluate, or nested too deep), read from the unevaluated tree.
    A symbol or constant counts as a one-digit number: what matters is what it is raised to."""
    import sympy

    if depth > MAX_DEPTH:
        return math.inf
    if isinstance(expr, sympy.Rational):
        return max(len(str(abs(expr.p))), len(str(expr.q)))
    if isinstance(expr, sympy.Float):
        return math.log10(abs(float(expr)) + 1) + 1  # inf for a float beyond a double's range
    if not isinstance(expr, sympy.Basic):
        if isinstance(expr, (tuple, list, set, frozenset)):
            return max((_digits(e, depth + 1) for e in expr), default=1)
        return 1
    args = [_digits(a, depth + 1) for a in expr.args]
    if any(math.isinf(a) for a in args):
        return math.inf
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        # The exponent's magnitude is below 10**digits; the result's digits below base's times that.
        return math.inf if exponent > 7 else base * 10 ** exponent
    if isinstance(expr, (sympy.factorial, sympy.factorial2, sympy.gamma, sympy.subfactorial)):
        n = 10 ** args[0] if args[0] <= 7 else math.inf
        return n * math.log10(n + 1)
    if isinstance(expr, sympy.binomial):
        n = 10 ** args[0] if args[0] <= 7 else math.inf
        return n * math.log10(2) + 1
    if isinstance(expr, (sympy.Sum, sympy.Product)):
        # Its terms times the number of terms (the limits' magnitude), or as a power.
        terms = 10 ** max(args[1:], default=1)
        return math.inf if terms > 10**5 else args[0] * terms
    if isinstance(expr, sympy.Mul):
        return sum(args) + 1
    return max(args, default=1) + 1


def _bounded(parsed: tuple[object, ...]) -> bool:
    """Whether math_verify may compare (and evalf evaluate) what `_latex_parse` gave."""
    try:
        return all(_digits(item) <= MAX_RESULT_DIGITS for item in parsed)
    except (RecursionError, OverflowError, ValueError, TypeError):
        return False


def _math_verify_equal(pred: str, gold: str) -> bool:
    return bool(_JUDGE.ask(["equal", pred, gold], False))


def _math_verify_equal_here(pred: str, gold: str) -> bool:
    from math_verify import verify

    try:
        gold_parsed = _latex_parse(_as_latex(gold))
        pred_parsed = _latex_parse(_as_latex(pred))
        if not gold_parsed or not pred_parsed or not _bounded(gold_parsed) or not _bounded(pred_parsed):
            return False
        return bool(verify(list(gold_parsed), list(pred_parsed), timeout_seconds=None))
    except Exception:  # a parser corner case is a non-match, not a crash of the run
        return False


def _choice(text: str) -> str | None:
    s = re.sub(r"\\text(?:bf)?\{([^{}]*)\}", r"\1", _strip_wrappers(text)).strip()
    m = _CHOICE_RE.match(s)
    return m.group(1).upper() if m else None


def equivalent(pred: str | None, gold: str | None, digits: int = DEFAULT_DIGITS) -> bool:
    """Whether a predicted answer says the same as the reference: plain numbers by
    numbers_match, multiple-choice letters by letter, the same canonical text, and
    otherwise math_verify on LaTeX (symbolic equality of expressions, tuples, sets)."""
    if pred is None or gold is None:
        return False
    pred, gold = str(pred).strip(), str(gold).strip()
    if not pred or not gold or len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        return False
    p_num, g_num = parse_number(pred), parse_number(gold)
    if p_num is not None and g_num is not None:
        return numbers_match(pred, gold, digits)
    g_choice = _choice(gold)
    if g_choice is not None:
        return _choice(pred) == g_choice
    if canonical_answer(pred) == canonical_answer(gold):
        return True
    if p_num is not None and g_num is None:
        # A rounded decimal from a program against an exact radical or pi: compare the
        # numeric value math_verify finds for the reference.
        value = _numeric_value(gold)
        if value is not None and _close(p_num[0], value, digits):
            return True
    return _math_verify_equal(pred, gold)


def _numeric_value(latex: str) -> Fraction | None:
    found = _JUDGE.ask(["value", latex], None)
    return Fraction(found) if isinstance(found, str) else None


def _numeric_value_here(latex: str) -> Fraction | None:
    try:
        parsed = _latex_parse(_as_latex(latex))
    except Exception:
        return None
    if not _bounded(parsed):
        return None
    for item in parsed:
        try:
            if getattr(item, "is_number", False) and getattr(item, "is_real", False):
                return Fraction(str(float(item.evalf(30))))  # type: ignore[attr-defined]
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return None
    return None


def _format_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    rounded = round(value, 6)
    text = f"{float(rounded):.6f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


def canonical_answer(answer: str | None) -> str | None:
    """A key under which equal answers vote together: numbers as their normalised value
    (percent signs dropped, 6 decimals), choices as the letter, other text with LaTeX
    spacing and sizing removed."""
    if answer is None:
        return None
    text = str(answer)
    if len(text) > MAX_ANSWER_CHARS:
        text = text[:MAX_ANSWER_CHARS]
    number = parse_number(text)
    if number is not None:
        return _format_fraction(number[0])
    choice = _choice(text)
    if choice is not None:
        return choice
    s = _strip_wrappers(text)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = re.sub(r"\\text(?:bf)?\{([^{}]*)\}", r"\1", s)
    s = "".join(s.split())
    return s or None


# --------------------------------------------------------------------------- the worker

JUDGE_SECONDS = 10.0  # one comparison; math_verify takes a few milliseconds on MATH-500
JUDGE_START_SECONDS = 120.0  # importing sympy and math_verify, on a loaded machine
JUDGE_MEMORY_BYTES = 4 << 30
# Run as `python -c`: the worker imports this module from the caller's own sys.path.
_WORKER = "import json, sys\nsys.path[:0] = json.loads(sys.argv[1])\nfrom veriloop.mathcheck import _serve\n_serve()\n"


def _serve() -> None:
    """The worker's loop: a JSON request a line on stdin, a JSON reply a line on stdout."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (JUDGE_MEMORY_BYTES, JUDGE_MEMORY_BYTES))
    _quiet_math_verify()
    import math_verify  # noqa: F401  (imported before "ready": the caller's deadline is per comparison)

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        op, *args = json.loads(line)
        reply: Any
        try:
            if op == "equal":
                reply = _math_verify_equal_here(args[0], args[1])
            else:
                value = _numeric_value_here(args[0])
                reply = None if value is None else str(value)
        except MemoryError:
            reply = None
        out.write(json.dumps(reply) + "\n")
        out.flush()


class _Judge:
    """The worker process and the one call at a time it serves (a lock: scoring threads
    queue here). Owned by the process that started it: a forked child starts its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._buffer = b""
        atexit.register(self.stop)

    def ask(self, request: list[Any], default: Any) -> Any:
        """The worker's reply to `request`, or `default` when it gives none in time."""
        with self._lock:
            proc = self._running()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
            except OSError:
                self.stop()
                return default
            line = self._line(proc.stdout, JUDGE_SECONDS)
            if line is None:  # too slow, or the worker died on it: the next call gets a new one
                self.stop()
                return default
            try:
                return json.loads(line)
            except ValueError:
                self.stop()
                return default

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._owner != os.getpid():
            self._proc = None  # a forked child: the worker is its parent's, left to it
        if self._proc is not None and self._proc.poll() is not None:
            self.stop()
        if self._proc is None:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER, json.dumps(sys.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, bufsize=0, close_fds=True,
            )
            self._proc, self._owner, self._buffer = proc, os.getpid(), b""
            assert proc.stdout is not None
            if self._line(proc.stdout, JUDGE_START_SECONDS) != b"ready":
                self.stop()
                from .errors import VeriloopError

                raise VeriloopError("the math answer checker's worker process did not start (python -c ... "
                                    "veriloop.mathcheck._serve); check that math-verify and sympy import")
        return self._proc

    def _line(self, stream: IO[bytes], seconds: float) -> bytes | None:
        """The next line from `stream` within `seconds`, without its newline; None if none came."""
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()


_JUDGE = _Judge()
