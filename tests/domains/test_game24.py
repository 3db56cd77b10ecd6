"""Tests for the Game of 24 domain: solver, loading, extraction, the sound checker."""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction
from itertools import combinations_with_replacement
from pathlib import Path

import pytest
from helpers import SHARED_DATA
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from veriloop.domains.base import Domain, Instance, Verdict
from veriloop.domains.game24 import (
    PROMPT_EXAMPLES,
    Game24,
    MalformedExpression,
    all_solvable_puzzles,
    core_operations,
    evaluate_expression,
    extract_expression,
    solution_count,
    solve,
)
from veriloop.errors import DataFileError, VeriloopError

CSV_PATH = SHARED_DATA / "game24" / "24.csv"
needs_csv = pytest.mark.skipif(not CSV_PATH.is_file(), reason="4nums.com CSV not available")

GAME = Game24()
SOLVABLE = all_solvable_puzzles()


def inst(*numbers: int) -> Instance:
    return Instance(id="t", data={"numbers": list(numbers), "rank": None})


# An evaluator written separately from the module's, so that ablation tests do not
# trust the code under test to decide whether a mutation changed the value.
def oracle(expr: str) -> Fraction | None:
    tokens = re.findall(r"\d+|[-+*/()]", expr)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom() -> Fraction:
        tok = take()
        if tok == "(":
            value = add()
            take()
            return value
        if tok == "-":
            return -atom()
        return Fraction(int(tok))

    def mul() -> Fraction:
        value = atom()
        while peek() in ("*", "/"):
            op, rhs = take(), atom()
            value = value * rhs if op == "*" else value / rhs
        return value

    def add() -> Fraction:
        value = mul()
        while peek() in ("+", "-"):
            op, rhs = take(), mul()
            value = value + rhs if op == "+" else value - rhs
        return value

    try:
        return add()
    except ZeroDivisionError:
        return None


# ------------------------------------------------------------------------ solver


def test_exactly_1362_puzzles_are_solvable() -> None:
    assert len(SOLVABLE) == 1362
    assert len(set(SOLVABLE)) == 1362
    assert all(list(p) == sorted(p) and len(p) == 4 for p in SOLVABLE)
    assert len(list(combinations_with_replacement(range(1, 14), 4))) == 1820


def test_known_unsolvable_and_solvable() -> None:
    assert solve([1, 1, 1, 1]) is None
    assert solution_count([1, 1, 1, 1]) == 0
    assert (1, 1, 1, 1) not in SOLVABLE
    assert solve([3, 3, 8, 8]) is not None  # needs a fraction along the way
    assert solve([8, 3, 8, 3]) == solve([3, 3, 8, 8])


def test_solver_handles_other_lengths() -> None:
    assert solve([24]) == "24"
    assert solve([]) is None
    expr = solve([4, 6])
    assert expr is not None and oracle(expr) == 24
    expr = solve([2, 3, 4])
    assert expr is not None and oracle(expr) == 24


def test_every_solution_verifies_with_the_right_numbers() -> None:
    for puzzle in SOLVABLE:
        expr = solve(puzzle)
        assert expr is not None
        value, literals = evaluate_expression(expr)
        assert value == 24
        assert sorted(literals) == list(puzzle)
        assert GAME.verify(inst(*puzzle), f"Answer: {expr}").ok, expr
        assert solution_count(puzzle) >= 1


# ----------------------------------------------------------------------- loading


def test_protocol_and_identity() -> None:
    assert isinstance(GAME, Domain)
    assert GAME.name == "game24"
    assert GAME.description and "\n" not in GAME.description


def test_core_operations() -> None:
    assert core_operations([1, 1, 4, 6]) == 1  # 4 * 6, times 1 * 1
    assert core_operations([4, 6, 11, 11]) == 1  # 4 * 6, times 11 / 11
    assert core_operations([1, 2, 3, 4]) == 2  # 2 * 3 * 4, times 1
    assert core_operations([4, 9, 10, 13]) == 3


def test_generated_instances_easiest_first() -> None:
    items = GAME.load_instances(None)
    assert len(items) == 1362
    assert [i.id for i in items[:2]] == ["game24-g1", "game24-g2"]
    keys = [(i.data["core_operations"], -i.data["numbers"].count(1), -i.data["solutions"]) for i in items]
    assert keys == sorted(keys)
    assert items[0].data["core_operations"] == 1 and items[-1].data["core_operations"] == 3
    assert [1, 1, 4, 6] in [i.data["numbers"] for i in items[:5]]  # 4nums.com's easiest puzzle
    assert all(i.data["rank"] is None for i in items)
    assert all(GAME.score(i, f"Answer: {i.reference}") for i in items)
    assert GAME.load_instances(None, n=3, offset=2) == items[2:5]
    assert GAME.load_instances(None) == items  # deterministic


def test_each_load_of_the_generated_puzzles_is_the_callers_own() -> None:
    first = GAME.load_instances(None, n=2)
    kept = [i.model_dump() for i in first]
    first[0].data["numbers"].append(99)
    first[1].data["solutions"] = -1
    first[1].reference = "changed"
    assert [i.model_dump() for i in GAME.load_instances(None, n=2)] == kept


def test_negative_slice_is_a_user_error() -> None:
    with pytest.raises(VeriloopError):
        GAME.load_instances(None, n=-1)


@needs_csv
def test_csv_instances() -> None:
    items = GAME.load_instances(str(CSV_PATH))
    assert len(items) == 1362
    first = items[0]
    assert first.id == "game24-r1"
    assert first.data == {"numbers": [1, 1, 4, 6], "rank": 1}
    assert GAME.verify(first, f"Answer: {first.reference}").ok
    assert [i.data["rank"] for i in items] == list(range(1, 1363))
    part = GAME.load_instances(str(CSV_PATH), n=100, offset=900)
    assert [i.id for i in part] == [f"game24-r{r}" for r in range(901, 1001)]
    assert GAME.load_instances(str(CSV_PATH), offset=1360) == items[1360:]
    assert GAME.load_instances(str(CSV_PATH), n=0) == []


@needs_csv
def test_csv_puzzles_are_exactly_the_solvable_ones() -> None:
    items = GAME.load_instances(str(CSV_PATH))
    assert {tuple(sorted(i.data["numbers"])) for i in items} == set(SOLVABLE)


def test_csv_missing_column(tmp_path: Path) -> None:
    bad = tmp_path / "nocol.csv"
    bad.write_text("Rank,Puzzle\n1,1 1 4 6\n")
    with pytest.raises(DataFileError) as err:
        GAME.load_instances(str(bad))
    msg = str(err.value)
    assert str(bad) in msg and "line 1" in msg and "Puzzles" in msg and "\n" not in msg


@pytest.mark.parametrize("puzzle", ["1 1 x 6", "1 1 4", "1 1 4 14", "0 1 4 6", "", "1 1 4 6 6"])
def test_csv_bad_puzzle_names_file_and_line(tmp_path: Path, puzzle: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(f"Rank,Puzzles,AMT (s)\n1,1 1 4 6,4.4\n2,{puzzle},5.0\n3,2 3 5 12,9\n")
    with pytest.raises(DataFileError) as err:
        GAME.load_instances(str(bad))
    msg = str(err.value)
    assert str(bad) in msg and "line 3" in msg and "\n" not in msg
    assert "Traceback" not in msg


def test_csv_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(DataFileError) as err:
        GAME.load_instances(str(missing))
    assert str(missing) in str(err.value) and "\n" not in str(err.value)


def test_csv_not_text(tmp_path: Path) -> None:
    bad = tmp_path / "binary.csv"
    bad.write_bytes(b"Rank,Puzzles\n1,\xff\xfe\x00 1 4 6\n")
    with pytest.raises(DataFileError) as err:
        GAME.load_instances(str(bad))
    assert str(bad) in str(err.value)


# ---------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: (4 + 8) * (6 - 4)", "(4 + 8) * (6 - 4)"),
        ("answer:(4+8)*(6-4) = 24", "(4+8)*(6-4)"),
        ("24 = (4 + 8) * (6 - 4).", "(4 + 8) * (6 - 4)"),
        ("Try 4*6 first.\nAnswer: (4 + 8) × (6 − 4)\n", "(4 + 8) * (6 - 4)"),
        ("Answer: 12 ÷ 6 x 4 – 8", "12 / 6*4 - 8"),
        ("**Answer:** (4 + 8) * (6 - 4)", "(4 + 8) * (6 - 4)"),
        ("**Answer: (4 + 8) * (6 - 4)**", "(4 + 8) * (6 - 4)"),
        ("Answer: \\((4 + 8) \\times (6 - 4)\\)", "(4 + 8) * (6 - 4)"),
        ("Answer: 1+1\nAnswer:\n\n 2*12", "2*12"),
        ("I give up.", None),
        ("Answer: 24", None),
        ("", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert GAME.extract_answer(inst(4, 4, 6, 8), text) == expected


def test_extract_prefers_longest_arithmetic_run() -> None:
    text = "First 8 - 4 = 4, then (4 + 8) * (6 - 4) = 24 works"
    assert GAME.extract_answer(inst(4, 4, 6, 8), text) == "(4 + 8) * (6 - 4)"


def test_canonical_strips_whitespace() -> None:
    i = inst(4, 4, 6, 8)
    assert GAME.canonical(i, " (4 + 8) *\t(6 - 4) ") == "(4+8)*(6-4)"
    assert GAME.canonical(i, None) is None


def test_long_inputs_do_not_hang() -> None:
    i = inst(4, 4, 6, 8)
    for text in ["1 + " * 5000 + "1", "(" * 20000, "Answer: " + "x" * 50000, "1x" * 20000, "= 24 " * 5000]:
        GAME.extract_answer(i, text)
        assert not GAME.verify(i, text).ok


# ------------------------------------------------------------------------ verifier


@pytest.mark.parametrize(
    "text",
    [
        "Answer: (4 + 8) * (6 - 4)",
        "Let me think. 4 + 8 is 12 and 6 - 4 is 2, so:\nAnswer: (4+8)*(6-4)",
        "(4 + 8) * (6 - 4) = 24",
        "answer: 24 = (6 - 4) * (8 + 4)",
        "Answer: (4 + 8) × (6 − 4)",
        "Answer: (6 – 4) × (4 + 8)",
        "Working: 8 - 4 = 4, no.\nAnswer: (4 + 8) x (6 - 4)",
    ],
)
def test_correct_answers_verify(text: str) -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), text)
    assert verdict.ok, verdict
    assert verdict.errors == [] and not verdict.malformed and verdict.verifier == "sound"
    assert GAME.score(inst(4, 4, 6, 8), text)


def test_fraction_answer_verifies() -> None:
    assert GAME.verify(inst(3, 3, 8, 8), "Answer: 8 / (3 - 8 / 3)").ok
    assert GAME.verify(inst(3, 3, 8, 8), "So the answer is 8 ÷ (3 − 8 ÷ 3) = 24").ok


def test_unary_minus_is_allowed() -> None:
    assert GAME.verify(inst(1, 1, 4, 6), "Answer: -(1 - 1 - 4) * 6").ok


def test_wrong_numbers() -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), "Answer: (4 + 8) * (7 - 5)")
    assert not verdict.ok and not verdict.malformed
    assert [e.kind for e in verdict.errors] == ["wrong_numbers"]
    msg = verdict.errors[0].message
    assert "missing: 4, 6" in msg
    assert "5, 7" in msg
    assert "4, 5, 7, 8" in msg  # what was used


def test_number_used_twice() -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), "Answer: 4 * 6 * 4 / 4")
    assert [e.kind for e in verdict.errors] == ["wrong_numbers"]
    msg = verdict.errors[0].message
    assert "missing: 8" in msg and "4" in msg.split("not available")[1]


def test_wrong_value_integer_and_fraction() -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), "Answer: 4 + 4 + 6 + 8")
    assert [e.kind for e in verdict.errors] == ["wrong_value"]
    assert "22" in verdict.errors[0].message
    verdict = GAME.verify(inst(4, 4, 6, 8), "Answer: 4 / 8 + 6 * 4")
    assert [e.kind for e in verdict.errors] == ["wrong_value"]
    assert "49/2" in verdict.errors[0].message


def test_wrong_numbers_and_value_together_in_order() -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), "Answer: 1 + 2 + 3 + 4")
    assert [e.kind for e in verdict.errors] == ["wrong_numbers", "wrong_value"]
    assert "10" in verdict.errors[1].message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("I could not find one.", "Answer:"),
        ("Answer: (4 + 8 * (6 - 4)", "well-formed"),
        ("Answer: 4 ** 2 + 8 / 1 - 6 + 4", "`**`"),
        ("Answer: 8 // 4 * 6 * 4", "`//`"),
        ("Answer: 4.0 * 6 * (8 - 4) / 4", "decimal"),
        ("Answer: 1.5 * 16", "decimal"),
        ("Answer: 4 / (4 - 4) + 6 + 8", "zero"),
    ],
)
def test_malformed(text: str, needle: str) -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), text)
    assert not verdict.ok and verdict.malformed
    assert [e.kind for e in verdict.errors] == ["malformed"]
    assert needle in verdict.errors[0].message
    assert not GAME.score(inst(4, 4, 6, 8), text)


def test_score_of_none_is_false() -> None:
    assert GAME.score(inst(4, 4, 6, 8), None) is False


INJECTIONS = [
    "__import__('os').system('touch {marker}')",
    "(1).__class__",
    "(1).__class__.__bases__[0].__subclasses__()",
    "2**99999999",
    "9**9**9**9",
    "(" * 100000 + "1" + ")" * 100000,
    "(" * 60 + "1+1" + ")" * 60,
    "1" * 100000,
    "lambda: 24",
    "(lambda: 6*4)()",
    "a * b - c + d",
    "abs(-24)",
    "int('24')",
    "f'{6*4}'",
    "[24][0]",
    "24 if 1 else 0",
    "'24'",
    "True * 24",
    "1 < 2",
]


@pytest.mark.parametrize("payload", INJECTIONS)
def test_injections_are_rejected_without_running(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = payload.replace("{marker}", str(marker))
    i = inst(4, 4, 6, 8)
    with pytest.raises(MalformedExpression):
        evaluate_expression(payload)
    for text in (payload, f"Answer: {payload}"):
        verdict = GAME.verify(i, text)
        assert isinstance(verdict, Verdict) and not verdict.ok
    assert not marker.exists()


@pytest.mark.parametrize(
    "payload",
    ["__import__('os').system('true')", "(1).__class__", "2**99999999", "9**9**9**9",
     "(" * 100000 + "1" + ")" * 100000, "1" * 100000, "a * b"],
)
def test_injections_are_malformed_verdicts(payload: str) -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), f"Answer: {payload}")
    assert verdict.malformed and verdict.errors[0].kind == "malformed"


def test_long_unary_chain_is_arithmetic_not_a_crash() -> None:
    value, literals = evaluate_expression("-" * 150 + "24")
    assert value == 24 and literals == [24]
    assert not GAME.verify(inst(4, 4, 6, 8), "Answer: " + "-" * 150 + "24").ok


def test_parser_messages_name_the_construct() -> None:
    cases = {"2**3": "`**`", "7 % 3": "`%`", "abs(3)": "function call", "x + 1": "name", "1.5 + 2": "1.5"}
    for expr, needle in cases.items():
        with pytest.raises(MalformedExpression) as err:
            evaluate_expression(expr)
        assert needle in str(err.value), (expr, str(err.value))


# ------------------------------------------------------------------------ properties


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    i = inst(4, 4, 6, 8)
    GAME.extract_answer(i, text)
    verdict = GAME.verify(i, text)
    assert isinstance(verdict, Verdict)
    assert verdict.ok == GAME.score(i, text)


@settings(max_examples=300)
@given(st.text(alphabet="0123456789+-*/(). xX=×÷−\nAnswer:*_a'", max_size=80))
# A right answer after a wrong one is a hedge: verify rejected it while extract_answer read
# the right one (the property found the like of it in the step-by-step readers).
@example("Answer:4+4+6+8\nAnswer:(4+8)*(6-4)")
def test_arithmetic_looking_text_never_raises(text: str) -> None:
    verdict = GAME.verify(inst(4, 4, 6, 8), text)
    expr = GAME.extract_answer(inst(4, 4, 6, 8), text)
    try:
        value, literals = evaluate_expression(expr) if expr is not None else (None, [])
    except (MalformedExpression, ZeroDivisionError):
        value, literals = None, []
    # Accepted exactly when the answer is an expression of 4 4 6 8 worth 24.
    assert verdict.ok == (value == 24 and Counter(literals) == Counter([4, 4, 6, 8]))


@given(st.sampled_from(SOLVABLE))
def test_solver_expression_always_verifies(puzzle: tuple[int, int, int, int]) -> None:
    expr = solve(puzzle)
    assert expr is not None
    assert oracle(expr) == 24
    assert GAME.verify(inst(*puzzle), f"Working...\nAnswer: {expr}").ok


@given(st.sampled_from(SOLVABLE), st.data())
def test_changing_one_number_never_verifies(puzzle: tuple[int, int, int, int], data: st.DataObject) -> None:
    expr = solve(puzzle)
    assert expr is not None
    spans = list(re.finditer(r"\d+", expr))
    target = data.draw(st.sampled_from(spans))
    old = int(target.group())
    new = data.draw(st.integers(1, 13).filter(lambda v: v != old))
    mutated = expr[: target.start()] + str(new) + expr[target.end() :]
    verdict = GAME.verify(inst(*puzzle), f"Answer: {mutated}")
    assert not verdict.ok
    # The changed number is reported, unless the change made a divisor zero (e.g.
    # 10 * 12 / (13 - 8) -> 10 * 12 / (8 - 8)): that expression is malformed outright.
    kinds = [e.kind for e in verdict.errors]
    assert "wrong_numbers" in kinds or (kinds == ["malformed"] and "divides by zero" in verdict.errors[0].message)


@given(st.sampled_from(SOLVABLE), st.data())
def test_changing_one_operator_never_verifies(puzzle: tuple[int, int, int, int], data: st.DataObject) -> None:
    expr = solve(puzzle)
    assert expr is not None
    spots = [m.start() for m in re.finditer(r"[-+*/]", expr)]
    spot = data.draw(st.sampled_from(spots))
    new = data.draw(st.sampled_from([op for op in "+-*/" if op != expr[spot]]))
    mutated = expr[:spot] + new + expr[spot + 1 :]
    assume(oracle(mutated) != 24)
    assert not GAME.verify(inst(*puzzle), f"Answer: {mutated}").ok


# ------------------------------------------------------------- prompts and feedback


def test_prompt_shape_and_examples() -> None:
    i = inst(1, 2, 3, 4)
    messages = GAME.prompt(i)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "1 2 3 4" in user and "Answer:" in user
    assert len(" ".join(m["content"] for m in messages).split()) < 160  # roughly < 250 tokens
    for numbers, expr in PROMPT_EXAMPLES:
        assert f"Answer: {expr}" in user
        assert GAME.verify(inst(*numbers), f"Answer: {expr}").ok


def test_prompt_examples_stay_out_of_evaluation_slices() -> None:
    examples = {tuple(sorted(n)) for n, _ in PROMPT_EXAMPLES}
    easiest = {tuple(i.data["numbers"]) for i in GAME.load_instances(None, n=30)}
    assert not examples & easiest


def test_prompt_examples_stay_out_of_the_papers_band(shared_data: Path) -> None:
    examples = {tuple(sorted(n)) for n, _ in PROMPT_EXAMPLES}
    csv = shared_data / "game24" / "24.csv"
    band = {tuple(sorted(i.data["numbers"])) for i in GAME.load_instances(str(csv), n=100, offset=900)}
    assert len(band) == 100 and not examples & band


def test_judge_task_states_numbers_and_rules() -> None:
    task = GAME.judge_task(inst(3, 3, 8, 8))
    assert "3 3 8 8" in task and "24" in task and "exactly once" in task
    assert "Answer:" not in task


def test_feedback_levels() -> None:
    i = inst(4, 4, 6, 8)
    verdict = GAME.verify(i, "Answer: 1 + 2 + 3 + 4")
    numbers_msg, value_msg = (e.message for e in verdict.errors)

    binary = GAME.feedback(i, verdict, "binary")
    assert "not correct" in binary and "Answer:" in binary
    assert numbers_msg not in binary and value_msg not in binary

    first = GAME.feedback(i, verdict, "first")
    assert numbers_msg in first and value_msg not in first and "Answer:" in first

    every = GAME.feedback(i, verdict, "all")
    assert numbers_msg in every and value_msg in every and "Answer:" in every
    assert every.index(numbers_msg) < every.index(value_msg)

    with pytest.raises(ValueError):
        GAME.feedback(i, verdict, "hint")


def test_feedback_without_listed_errors_falls_back_to_binary() -> None:
    i = inst(4, 4, 6, 8)
    empty = Verdict(ok=False, verifier="llm")
    assert GAME.feedback(i, empty, "all") == GAME.feedback(i, empty, "binary")


def test_an_evaluated_expression_is_the_callers_own_and_a_malformed_one_fails_each_time() -> None:
    value, literals = evaluate_expression("(13 - 1) * 2")
    literals.append(99)
    assert evaluate_expression("(13 - 1) * 2") == (Fraction(24), [13, 1, 2])
    for _ in range(2):
        with pytest.raises(MalformedExpression, match="divides by zero"):
            evaluate_expression("24 / (3 - 3)")


def test_a_reply_is_read_the_same_however_long_and_however_often() -> None:
    short = "Let me try.\nAnswer: (13 - 1) * 2 = 24"
    long = "x" * 5000 + "\n" + short
    assert [extract_expression(short) for _ in range(2)] == ["(13 - 1) * 2"] * 2
    assert [extract_expression(long) for _ in range(2)] == ["(13 - 1) * 2"] * 2
