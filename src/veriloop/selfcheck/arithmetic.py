"""Exact labels for the arithmetic a step states: "16 - 3 = 13 eggs" holds, "3 * 4 = 13"
does not. A step whose every stated calculation holds is not thereby right (it may use
the wrong quantities), but one with a false calculation is certainly wrong, which gives
step-level ground truth to measure SelfCheck's step verdicts against without human labels.

Expressions are computed by the calculator tool's `ast` whitelist, never evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from ..tools.calculator import CalculatorError, calculate

# Characters an arithmetic expression is made of, once × ÷ and currency are normalised.
_EXPR_CHARS = r"[0-9.+\-*/()\s]"
_SUFFIX = re.compile(rf"{_EXPR_CHARS}+$")
_PREFIX = re.compile(rf"^{_EXPR_CHARS}+")
_OPERATOR = re.compile(r"\d\s*[-+*/]\s*\(?\s*\d")
_GAP = re.compile(r"[\d.)]\s+(?=[\d(])")
_LEADING_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
RELATIVE_TOLERANCE = Fraction(1, 100)  # "10 / 3 = 3.33" is a rounding, not an error


@dataclass(frozen=True)
class Calculation:
    left: str
    right: str
    holds: bool


def _normalise(text: str) -> str:
    text = _THOUSANDS.sub("", text)
    text = text.replace("×", "*").replace("·", "*").replace("÷", "/").replace("−", "-")
    text = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", text)
    # Units and labels sit between numbers and operators ("16 eggs - 3 eggs = 13 eggs",
    # "3 (breakfast) + 4 = 7"): words go, so do currency marks. Numbers left side by side
    # by this ("week 1 has 7 days") no longer parse, and those sides are skipped.
    text = re.sub(r"\([^()\d]*\)", " ", text)
    text = re.sub(r"[A-Za-z_][A-Za-z_']*", " ", text)
    return re.sub(r"[$€£%]", "", text)


def _value(expression: str) -> Fraction | None:
    expression = expression.strip()
    if not expression or not re.search(r"\d", expression):
        return None
    try:
        value = calculate(expression)
    except (CalculatorError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    try:
        return value if isinstance(value, Fraction) else Fraction(value)
    except (ValueError, OverflowError):
        return None


def _balanced(expression: str) -> str:
    """Drop unmatched parentheses at the ends (an expression cut out of prose)."""
    expression = expression.strip()
    while expression.startswith(")") or (expression.startswith("(") and expression.count("(") > expression.count(")")):
        expression = expression[1:].strip()
    while expression.endswith("(") or (expression.endswith(")") and expression.count(")") > expression.count("(")):
        expression = expression[:-1].strip()
    return expression


def calculations(step: str) -> list[Calculation]:
    """Every "expression = value" in a step whose left side is a calculation (has an
    operator between numbers) and whose both sides can be computed."""
    found = []
    for line in _normalise(step).splitlines():
        parts = line.split("=")
        for left_text, right_text in zip(parts, parts[1:]):
            left_match, right_match = _SUFFIX.search(left_text), _PREFIX.search(right_text)
            if not left_match or not right_match:
                continue
            left = left_match.group(0)
            # Numbers side by side ("5   3 + 3" once "and" is gone) belong to different
            # sentences: the calculation is what follows the last such gap.
            gaps = list(_GAP.finditer(left))
            if gaps:
                left = left[gaps[-1].end() :]
            left = _balanced(left).lstrip("+*/ ").strip()
            # In "3 * 4 = 12 * 2 = 24" each link's value is the number right after "=";
            # what follows it starts the next link.
            number = _LEADING_NUMBER.match(right_match.group(0))
            right = number.group(1) if number else ""
            if not _OPERATOR.search(left):
                continue
            a, b = _value(left), _value(right)
            if a is None or b is None:
                continue
            scale = max(abs(a), abs(b), Fraction(1))
            found.append(Calculation(" ".join(left.split()), right, abs(a - b) <= RELATIVE_TOLERANCE * scale))
    return found


def arithmetic_label(step: str) -> bool | None:
    """False when some stated calculation is wrong, True when there is at least one and
    all hold, None when the step states none that can be checked."""
    found = calculations(step)
    if not found:
        return None
    return all(c.holds for c in found)
