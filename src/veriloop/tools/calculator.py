"""A calculator tool: arithmetic and common functions over an `ast`-parsed expression.

Nothing is evaluated by Python's evaluator. The expression is parsed with `ast`, every
node is checked against a whitelist and computed here: + - * / % and integer powers on
exact fractions (so 0.1 + 0.2 is 0.3), the functions on floats. Sizes are bounded
before they are computed (power results, factorial arguments, the bits of any
intermediate number), so a short input cannot make a long computation.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .base import Observation, failed

MAX_INPUT_CHARS = 1000
MAX_BITS = 100_000  # about 30,000 decimal digits in any numerator or denominator
MAX_FACTORIAL = 1000
MAX_SHOWN_DIGITS = 60  # longer integers are shown in scientific notation as well
# Python refuses str() of integers over 4300 digits (about 14,280 bits); above this many bits
# a number is described ("a 6021-digit number, about ...") rather than written out.
MAX_WRITTEN_BITS = 13_000

Number = Fraction | float


class CalculatorError(ValueError):
    """Why an expression has no value; the message is shown to the model."""


_CONSTANTS: dict[str, Number] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _real(x: Number) -> float:
    try:
        return float(x)
    except OverflowError:
        raise CalculatorError("a number is too large for this function") from None


def _check_float(x: float) -> float:
    if math.isnan(x):
        raise CalculatorError("the result is not a real number")
    if math.isinf(x):
        raise CalculatorError("the result is too large")
    return x


def _sqrt(x: Number) -> Number:
    if x < 0:
        raise CalculatorError("sqrt of a negative number is not a real number")
    if isinstance(x, Fraction):
        n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
        if n * n == x.numerator and d * d == x.denominator:
            return Fraction(n, d)
    return math.sqrt(_real(x))


def _log(x: Number, base: Number | None = None) -> float:
    if x <= 0:
        raise CalculatorError("log is only defined for positive numbers")
    if base is None:
        return math.log(x) if isinstance(x, Fraction) and x.denominator == 1 else math.log(_real(x))
    if base <= 0 or base == 1:
        raise CalculatorError("the base of a logarithm must be positive and not 1")
    return _log(x) / _log(base)


def _exp(x: Number) -> float:
    try:
        return math.exp(_real(x))
    except OverflowError:
        raise CalculatorError("exp of this number is too large") from None


def _factorial(x: Number) -> Fraction:
    if not (isinstance(x, Fraction) and x.denominator == 1) and not (isinstance(x, float) and x.is_integer()):
        raise CalculatorError("factorial needs a whole number")
    n = int(x)
    if n < 0:
        raise CalculatorError("factorial of a negative number is undefined")
    if n > MAX_FACTORIAL:
        raise CalculatorError(f"factorial is limited to numbers up to {MAX_FACTORIAL}")
    return Fraction(math.factorial(n))


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return Fraction(round(x))
    if not (isinstance(digits, Fraction) and digits.denominator == 1) or abs(digits) > 100:
        raise CalculatorError("round's second argument must be a whole number of digits up to 100")
    return round(x, int(digits))  # type: ignore[return-value]  # round(Fraction, int) is a Fraction


def _angle(fn: Callable[[float], float]) -> Callable[[Number], float]:
    def apply(x: Number) -> float:
        try:
            return fn(_real(x))
        except ValueError:
            raise CalculatorError(f"{fn.__name__} is not defined for {format_number(x)}") from None

    return apply


def _floor(x: Number) -> Fraction:
    return Fraction(math.floor(x))


def _ceil(x: Number) -> Fraction:
    return Fraction(math.ceil(x))


def _min(*xs: Number) -> Number:
    if not xs:
        raise CalculatorError("min needs at least one number")
    return min(xs)


def _max(*xs: Number) -> Number:
    if not xs:
        raise CalculatorError("max needs at least one number")
    return max(xs)


# name: (function, smallest and largest number of arguments)
_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    "sqrt": (_sqrt, 1, 1),
    "log": (_log, 1, 2),
    "ln": (_log, 1, 1),
    "log10": (lambda x: _log(x, Fraction(10)), 1, 1),
    "log2": (lambda x: _log(x, Fraction(2)), 1, 1),
    "exp": (_exp, 1, 1),
    "sin": (_angle(math.sin), 1, 1),
    "cos": (_angle(math.cos), 1, 1),
    "tan": (_angle(math.tan), 1, 1),
    "asin": (_angle(math.asin), 1, 1),
    "acos": (_angle(math.acos), 1, 1),
    "atan": (_angle(math.atan), 1, 1),
    "factorial": (_factorial, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "floor": (_floor, 1, 1),
    "ceil": (_ceil, 1, 1),
    "min": (_min, 1, 64),
    "max": (_max, 1, 64),
}


def _bits(x: Fraction) -> int:
    return max(x.numerator.bit_length(), x.denominator.bit_length())


def _bounded(x: Number) -> Number:
    if isinstance(x, Fraction):
        if _bits(x) > MAX_BITS:
            raise CalculatorError(f"an intermediate number has more than {MAX_BITS} bits")
        return x
    return _check_float(x)


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(base, Fraction) and isinstance(exponent, Fraction) and exponent.denominator == 1:
        n = exponent.numerator
        if base == 0 and n < 0:
            raise CalculatorError("zero cannot be raised to a negative power")
        if base not in (0, 1, -1) and (_bits(base) or 1) * abs(n) > MAX_BITS:
            raise CalculatorError(f"the power is too large (results are limited to {MAX_BITS} bits)")
        return base**n
    b, x = _real(base), _real(exponent)
    if b < 0 and not x.is_integer():
        raise CalculatorError("a negative number to a fractional power is not a real number")
    if b == 0 and x < 0:
        raise CalculatorError("zero cannot be raised to a negative power")
    try:
        return math.pow(b, x)
    except OverflowError:
        raise CalculatorError("the power is too large") from None


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    if isinstance(op, (ast.Div, ast.Mod, ast.FloorDiv)) and right == 0:
        raise CalculatorError("division by zero")
    if isinstance(op, ast.Div):
        return left / right
    if isinstance(op, ast.Mod):
        return left % right
    if isinstance(op, ast.FloorDiv):
        return Fraction(left // right)
    if isinstance(op, ast.Pow):
        return _power(left, right)
    raise CalculatorError(f"the operator {type(op).__name__} is not supported; use + - * / % ^ ** //")


class _Evaluator:
    def __init__(self, source: str) -> None:
        self.source = source

    def value(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Expression):
            return self.value(node.body)
        if isinstance(node, ast.Constant):
            return self.literal(node)
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise CalculatorError(f"unknown name {node.id!r}; constants are {', '.join(_CONSTANTS)}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            return _bounded(_binary(node.op, left, right))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise CalculatorError(f"{type(node).__name__} is not allowed in a calculator expression")

    def literal(self, node: ast.Constant) -> Number:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise CalculatorError(f"{node.value!r} is not a number")
        if isinstance(node.value, int):
            return _bounded(Fraction(node.value))
        text = ast.get_source_segment(self.source, node) or repr(node.value)
        try:
            # The written digits, not the binary float: 0.1 stays one tenth.
            return _bounded(Fraction(text.replace("_", "")))
        except (ValueError, ZeroDivisionError):
            return _check_float(node.value)

    def call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else "this call"
            raise CalculatorError(f"unknown function {name!r}; functions are {', '.join(_FUNCTIONS)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise CalculatorError("functions take plain positional arguments only")
        fn, low, high = _FUNCTIONS[node.func.id]
        if not low <= len(node.args) <= high:
            wanted = str(low) if low == high else f"{low} to {high}"
            raise CalculatorError(f"{node.func.id} takes {wanted} argument(s), got {len(node.args)}")
        args = [self.value(a) for a in node.args]
        try:
            result = fn(*args)
        except (OverflowError, ValueError) as exc:
            if isinstance(exc, CalculatorError):
                raise
            raise CalculatorError(f"{node.func.id} failed: {exc}") from None
        return _bounded(Fraction(result) if isinstance(result, int) else result)


_PERCENT_RE = re.compile(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\d.(a-zA-Z])")
_REWRITES = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-", "^": "\x00"})


def _top_level_sides(text: str) -> list[str]:
    """`text` cut at each lone "=" outside brackets (not ==, <=, >=, !=)."""
    sides, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            before = text[i - 1] if i else ""
            after = text[i + 1] if i + 1 < len(text) else ""
            if before not in "=<>!" and after != "=":
                sides.append(text[start:i])
                start = i + 1
    sides.append(text[start:])
    return sides


def _prepare(expression: str) -> str:
    text = expression.strip().strip("`").strip()
    text = re.sub(r"^\s*(?:calculate|compute|evaluate)\s*:?\s*", "", text, flags=re.IGNORECASE)
    sides = _top_level_sides(text)
    if len(sides) > 1:
        # "3 * 4 = ?" or "x = 3*4": the longest side is the question.
        sides = [s for s in sides if s.strip() and s.strip() != "?"]
        text = max(sides, key=len) if sides else text
    # ^ is power here (as on calculators), not XOR; a number followed by % and no
    # operand is a percentage.
    text = text.translate(_REWRITES).replace("\x00", "**")
    return _PERCENT_RE.sub(r"(\1/100)", text)


def calculate(expression: str) -> Number:
    """The value of an expression; CalculatorError with a readable reason otherwise."""
    if len(expression) > MAX_INPUT_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_INPUT_CHARS} characters")
    source = _prepare(expression)
    if not source:
        raise CalculatorError("the expression is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"cannot read the expression ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError):
        raise CalculatorError("cannot read the expression") from None
    try:
        return _Evaluator(source).value(tree)
    except RecursionError:
        raise CalculatorError("the expression is nested too deeply") from None
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("a number is too large") from None
    except TypeError as exc:
        raise CalculatorError(f"cannot compute this: {exc}") from None


def format_number(value: Number) -> str:
    """Whole numbers without ".0", terminating fractions as exact decimals, others as
    a 12-significant-digit decimal."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            if value.numerator.bit_length() > MAX_WRITTEN_BITS:
                return f"a {_decimal_exponent(value) + 1}-digit number, about {_scientific(value)}"
            digits = str(value.numerator)
            if len(digits.lstrip("-")) > MAX_SHOWN_DIGITS:
                return f"{digits} (about {_scientific(value)})"
            return digits
        d = value.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d == 1 and _bits(value) < 200:
            return _exact_decimal(value)
        try:
            approx = float(value)
        except OverflowError:
            return _scientific(value)
        return _scientific(value) if approx == 0.0 else _float_text(approx)  # 0.0: underflow
    return _float_text(value)


def _float_text(x: float) -> str:
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.12g}"


def _decimal_exponent(value: Fraction) -> int:
    """floor(log10(|value|)) of a non-zero value, without writing it out (str() of a huge
    integer is refused by Python)."""
    size = abs(value)
    exponent = int((size.numerator.bit_length() - size.denominator.bit_length()) * 0.30103)
    while Fraction(10) ** (exponent + 1) <= size:
        exponent += 1
    while Fraction(10) ** exponent > size:
        exponent -= 1
    return exponent


def _scientific(value: Fraction) -> str:
    exponent = _decimal_exponent(value)
    mantissa = value / Fraction(10) ** exponent
    return f"{float(mantissa):.6g}e{'+' if exponent >= 0 else ''}{exponent}"


def _exact_decimal(value: Fraction) -> str:
    sign = "-" if value < 0 else ""
    value = abs(value)
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    scaled = str((value * 10**places).numerator).rjust(places + 1, "0")
    return f"{sign}{scaled[:-places]}.{scaled[-places:]}"


class Calculator:
    name = "calculator"
    description = (
        "Computes an arithmetic expression exactly where possible: + - * / % ^ (power), parentheses, "
        "pi, e, and sqrt, log (natural; log(x, base)), ln, exp, sin, cos, tan, factorial, abs, round, min, max. "
        "Input: one expression, e.g. (17 - 5) * 3 / 4."
    )
    deterministic = True

    def __init__(self, **options: Any) -> None:
        if options:
            raise TypeError(f"the calculator takes no options, got {sorted(options)}")

    def identity(self) -> str:
        return f"calculator;bits={MAX_BITS};factorial={MAX_FACTORIAL}"

    def run(self, tool_input: str) -> Observation:
        try:
            value = calculate(tool_input)
        except CalculatorError as exc:
            return failed(self.name, tool_input, f"Error: {exc}.", error=str(exc))
        except Exception as exc:  # an unforeseen corner must still come back as an observation
            return failed(self.name, tool_input, f"Error: cannot compute this ({type(exc).__name__}).", error=str(exc))
        shown = format_number(value)
        data: dict[str, Any] = {"value": shown, "exact": isinstance(value, Fraction)}
        writable = isinstance(value, Fraction) and max(
            value.numerator.bit_length(), value.denominator.bit_length()) <= MAX_WRITTEN_BITS
        if isinstance(value, Fraction) and value.denominator != 1 and writable:
            data["fraction"] = f"{value.numerator}/{value.denominator}"
        return Observation(tool=self.name, input=tool_input, text=shown, data=data)
