"""The calculator tool: exact arithmetic, common functions, bounded sizes, and an
observation (never an exception) for any input."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veriloop.tools import get_tool
from veriloop.tools.calculator import Calculator, CalculatorError, calculate, format_number


def shown(expression: str) -> str:
    observation = Calculator().run(expression)
    assert observation.ok, observation.text
    return observation.text


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", "7"),
        ("(17 - 5) * 3 / 4", "9"),
        ("0.1 + 0.2", "0.3"),
        ("10 / 4", "2.5"),
        ("1 / 3", "0.333333333333"),
        ("2 ^ 10", "1024"),
        ("2 ** -2", "0.25"),
        ("10 % 3", "1"),
        ("15% * 80", "12"),
        ("sqrt(16)", "4"),
        ("sqrt(2)", "1.41421356237"),
        ("sqrt(9/4)", "1.5"),
        ("ln(e)", "1"),
        ("log(100, 10)", "2"),
        ("log10(1000)", "3"),
        ("exp(0)", "1"),
        ("sin(0) + cos(0)", "1"),
        ("tan(pi / 4)", "1"),
        ("factorial(5)", "120"),
        ("abs(-3.5)", "3.5"),
        ("round(2.675, 2)", "2.68"),
        ("round(7 / 2)", "4"),
        ("min(3, 1, 2) + max(4, 9)", "10"),
        ("3 × 4 − 2 ÷ 2", "11"),
        ("2 * pi", "6.28318530718"),
        ("-(-5)", "5"),
        ("12 * 4 = ?", "48"),
    ],
)
def test_values(expression: str, expected: str) -> None:
    assert shown(expression) == expected


def test_exact_fraction_is_kept_in_data() -> None:
    observation = Calculator().run("1/3 + 1/6")
    assert observation.text == "0.5"
    assert observation.data == {"value": "0.5", "exact": True, "fraction": "1/2"}
    thirds = Calculator().run("2/3")
    assert thirds.data["fraction"] == "2/3" and thirds.data["exact"] is True
    assert Calculator().run("sqrt(2)").data["exact"] is False


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("0 ^ -1", "zero cannot be raised to a negative power"),
        ("9 ** 9 ** 9", "the power is too large"),
        ("2 ** 1000000", "the power is too large"),
        ("factorial(100000)", "factorial is limited"),
        ("factorial(2.5)", "factorial needs a whole number"),
        ("sqrt(-1)", "not a real number"),
        ("(-8) ^ (1/3)", "not a real number"),
        ("log(0)", "log is only defined for positive numbers"),
        ("exp(100000)", "too large"),
        ("__import__('os')", "unknown function"),
        ("open('x')", "unknown function"),
        ("x + 1", "unknown name 'x'"),
        ("(1).__class__", "Attribute is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("'a' * 3", "is not a number"),
        ("True + 1", "is not a number"),
        ("1 +", "cannot read the expression"),
        ("", "the expression is empty"),
        ("1 << 3", "is not supported"),
        ("max()", "max takes 1 to 64 argument(s), got 0"),
        ("sqrt(x=4)", "positional arguments only"),
        ("1" + "+1" * 600, "longer than 1000 characters"),
    ],
)
def test_refusals_are_failed_observations(expression: str, reason: str) -> None:
    observation = Calculator().run(expression)
    assert not observation.ok
    assert reason in observation.text
    assert observation.text.startswith("Error: ")


POWER_REFUSED = "the power is too large (results are limited to 100000 bits)"
PRODUCT_REFUSED = "an intermediate number has more than 100000 bits"


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        # The size of a power is estimated before it is computed (bits of the base times
        # the exponent, rounded up: 10 counts as 4 bits), so 10 ** 30000 is refused.
        ("(10 ** 30000) * (10 ** 30000) * (10 ** 30000)", POWER_REFUSED),
        ("factorial(1000) ** 50", POWER_REFUSED),
        ("9 ** 99999", POWER_REFUSED),
        # Each factor fits; their product is refused as soon as it is made.
        ("(10 ** 20000) * (10 ** 20000) * (10 ** 20000)", PRODUCT_REFUSED),
    ],
)
def test_huge_intermediate_numbers_are_refused(expression: str, reason: str) -> None:
    # How long a refusal takes, next to an ordinary calculation: bench/calculator_bounds.py.
    observation = Calculator().run(expression)
    assert (observation.ok, observation.text, observation.data) == (False, f"Error: {reason}.", {"error": reason})


def test_big_integers_are_shown_exactly_with_a_magnitude() -> None:
    text = shown("factorial(100)")
    assert text.startswith("93326215443944152681")
    assert text.endswith("(about 9.33262e+157)")


def test_format_number() -> None:
    assert format_number(Fraction(18)) == "18"
    assert format_number(Fraction(-7, 4)) == "-1.75"
    assert format_number(Fraction(1, 1000)) == "0.001"
    assert format_number(2.0) == "2"
    assert format_number(1e20) == "1e+20"


def test_registry_builds_it() -> None:
    tool = get_tool("calculator")
    assert isinstance(tool, Calculator) and tool.deterministic
    assert "calculator" in tool.identity()


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gives_an_observation(text: str) -> None:
    observation = Calculator().run(text)
    assert observation.tool == "calculator"
    assert observation.ok == ("error" not in observation.data)


_ATOMS = st.integers(min_value=-50, max_value=50).map(str) | st.sampled_from(
    ["pi", "e", "2.5", "0", "sqrt(", "factorial(", "log(", "(", ")", "^", "**", "%", "/", "*", "-", "+", ",", "9"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ATOMS, max_size=25).map(" ".join))
def test_calculator_like_token_soup_never_raises(text: str) -> None:
    observation = Calculator().run(text)
    assert isinstance(observation.text, str) and observation.text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=-1000, max_value=1000), min_size=1, max_size=6),
    st.lists(st.sampled_from(["+", "-", "*", "/"]), min_size=5, max_size=5),
)
def test_exact_arithmetic_agrees_with_fractions(numbers: list[int], ops: list[str]) -> None:
    expression = str(numbers[0])
    expected: Fraction | None = Fraction(numbers[0])
    for op, n in zip(ops, numbers[1:]):
        expression = f"({expression}) {op} ({n})"
        if expected is None:
            continue
        if op == "/" and n == 0:
            expected = None
        else:
            expected = {"+": expected + n, "-": expected - n, "*": expected * n}.get(op) if op != "/" else expected / n
    assert outcome(expression) == ("division by zero" if expected is None else expected)


def outcome(expression: str) -> Fraction | str:
    """The exact value, or the reason the calculator gives for refusing."""
    try:
        return calculate(expression)
    except CalculatorError as exc:
        return str(exc)


@pytest.mark.parametrize(
    ("expression", "text", "fraction"),
    [
        ("2 ** 20000", "a 6021-digit number, about 3.98028e+6020", None),
        ("-(3 ** 10000)", "a 4772-digit number, about -1.63135e+4771", None),
        ("1 / 10 ** 5000", "1e-5000", None),
    ],
)
def test_numbers_beyond_pythons_string_limit_are_observations(expression, text, fraction) -> None:
    observation = Calculator().run(expression)
    assert (observation.ok, observation.text, observation.data.get("fraction")) == (True, text, fraction)
