"""The Game of 24 reader against the reader families of issue 41 (`veriloop audit`): each
family applied to wrong answers and to right ones on the puzzle 1 1 4 6, one table per
family so that the audit can reuse the shapes. The standard: the verifier accepts nothing
a careful human grader would reject, and a reply offering several different answers is
rejected as malformed with a message saying to give one."""

from __future__ import annotations

import pytest

from veriloop.domains.base import Instance
from veriloop.domains.game24 import Game24

GAME = Game24()
PUZZLE = Instance(id="game24-1-1-4-6", data={"numbers": [1, 1, 4, 6], "rank": None})

RIGHT = "6 * 4 * 1 * 1"
RIGHT_LONG = "(6 * 4) * (1 * 1)"  # longer than WRONG: the reader's longest-run rule would pick it
OTHER_RIGHT = "4 * 6 / (1 * 1)"
WRONG = "1 + 1 + 4 + 6"  # the puzzle's numbers, value 12
WRONG_20 = "(1 + 1) * (4 + 6)"
WRONG_NUMBERS = "6 * 4 * 1 * 2"  # a number changed, as the audit's ablated candidates are


def accepted(reply: str) -> bool:
    return GAME.verify(PUZZLE, reply).ok


# (id, reply, accepted): an id names the shape; "right" or "wrong" says what is answered.
SEVERAL_ANSWERS = [
    ("or-wrong-first", f"Answer: {WRONG} or {RIGHT}", False),
    ("or-right-first", f"Answer: {RIGHT} or {WRONG}", False),
    ("comma-right-first", f"Answer: {RIGHT}, {WRONG}", False),
    ("semicolon-right-first", f"Answer: {RIGHT}; {WRONG_20}", False),
    ("or-wrong-numbers", f"Answer: {RIGHT} or {WRONG_NUMBERS}", False),
    ("or-maybe-next-line", f"Answer: {RIGHT}\n\nOr maybe {WRONG}", False),
    ("two-answer-lines-right-last", f"Answer: {WRONG}\nAnswer: {RIGHT}", False),
    ("two-answer-lines-right-first", f"Answer: {RIGHT}\nAnswer: {WRONG}", False),
    ("or-without-answer-line", f"{RIGHT_LONG} or {WRONG}", False),
    ("or-two-right-answers", f"Answer: {RIGHT} or {OTHER_RIGHT}", True),
    ("same-answer-twice", f"Answer: {RIGHT}\nAnswer: {RIGHT}", True),
    ("one-answer", f"Answer: {RIGHT}", True),
]

HIDDEN_IN_PROSE = [
    ("wrong-in-a-sentence", f"I think the answer is {WRONG}.", False),
    ("wrong-then-right-mentioned", f"My answer is {WRONG}; note {RIGHT_LONG} = 24.", False),
    ("right-then-wrong-mentioned", f"Answer: {RIGHT}. Another is {WRONG}.", False),
    ("right-with-short-working", f"First 6 * 4 = 24, then 24 * 1 * 1 = 24, so {RIGHT} = 24.", True),
    ("right-with-explanation-after", f"Answer: {RIGHT}\nBecause 6 * 4 = 24 and 1 * 1 = 1.", True),
    ("right-checked-again-after", f"Answer: {RIGHT}\nCheck: {RIGHT} = 24", True),
]

EQUALS_TARGET = [
    ("wrong-equals-24", f"Answer: {WRONG} = 24", False),
    ("wrong-20-equals-24", f"Answer: {WRONG_20} = 24", False),
    ("24-equals-wrong", f"Answer: 24 = {WRONG}", False),
    ("wrong-chained-to-right", f"Answer: 4 + 6 + 1 + 1 = {RIGHT_LONG} = 24", False),
    ("right-chained-to-wrong", f"Answer: {RIGHT_LONG} = 4 + 6 + 1 + 1 = 24", False),
    ("right-equals-24", f"Answer: {RIGHT} = 24", True),
    ("right-with-a-step", f"Answer: {RIGHT_LONG} = 24 * 1 = 24", True),
]

# Unicode: full-width and other scripts' digits are read as digits, so that a hedge
# written in them is seen; a right answer written wholly in them is read and accepted
# (one unambiguous reading: a human grader reads ６ as 6). Superscripts and letters that
# look like digits are not digits.
LOOK_ALIKES = [
    ("full-width-right", "Answer: ６*４*１*１", True),
    ("full-width-operators-right", "Answer: ６＊４＊１＊１", True),
    ("full-width-wrong", "Answer: １+１+４+６", False),
    ("full-width-hedge", f"Answer: {RIGHT} or １+１+４+６", False),
    ("arabic-indic-right", "Answer: ٦*٤*١*١", True),
    ("arabic-indic-hedge", f"Answer: {RIGHT} or ١+١+٤+٦", False),
    ("devanagari-hedge", f"Answer: {RIGHT} or १+१+४+६", False),
    ("letter-l-for-one", "Answer: 6*4*1*l", False),
    ("superscript-is-not-a-digit", "Answer: 6*2²*1*1", False),
    ("times-sign-right", "Answer: 6 × 4 × 1 × 1", True),
]

CHECKER_OUTPUT_PASTED = [
    ("verdict-correct-after-wrong", f"Answer: {WRONG}\nVerdict: correct", False),
    ("evaluates-to-24-claim", f"Answer: {WRONG}\n`{WRONG}` evaluates to 24.", False),
    ("right-expression-in-pasted-verdict", f"Answer: {WRONG}\nThat answer is correct: `{RIGHT}` evaluates to 24.", False),
    ("verdict-correct-after-right", f"Answer: {RIGHT}\nVerdict: correct", True),
]


def _cases(table: list[tuple[str, str, bool]]) -> list[object]:
    return [pytest.param(reply, ok, id=name) for name, reply, ok in table]


@pytest.mark.parametrize(("reply", "ok"), _cases(SEVERAL_ANSWERS))
def test_several_answers_in_one_reply_are_rejected_unless_all_are_right(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


@pytest.mark.parametrize(("reply", "ok"), _cases(HIDDEN_IN_PROSE))
def test_an_answer_hidden_in_prose_is_read_and_a_second_one_beside_it_rejected(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


@pytest.mark.parametrize(("reply", "ok"), _cases(EQUALS_TARGET))
def test_equals_24_appended_or_chained_does_not_make_a_wrong_expression_pass(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


@pytest.mark.parametrize(("reply", "ok"), _cases(LOOK_ALIKES))
def test_full_width_and_other_script_digits_are_read_as_digits(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


@pytest.mark.parametrize(("reply", "ok"), _cases(CHECKER_OUTPUT_PASTED))
def test_the_checkers_own_output_pasted_into_the_reply_is_not_a_verdict(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


def test_a_hedged_reply_is_rejected_as_malformed_with_a_message_naming_both_answers() -> None:
    verdict = GAME.verify(PUZZLE, f"Answer: {RIGHT} or {WRONG}")
    assert (verdict.ok, verdict.malformed, [e.kind for e in verdict.errors]) == (False, True, ["malformed"])
    assert verdict.errors[0].message == (
        f"The reply gives more than one answer (`{RIGHT}` and `{WRONG}`); give exactly one, "
        "on a line `Answer: <expression>`."
    )
    assert verdict.errors[0].where == RIGHT


def test_the_answer_read_from_a_hedge_is_none_as_the_verdict_says() -> None:
    # extract_answer read the right expression of a hedge that verify rejected, so a run
    # recorded an answer beside a verdict that said there was none.
    assert GAME.extract_answer(PUZZLE, f"Answer: {RIGHT} or {WRONG}") is None
    assert GAME.extract_answer(PUZZLE, f"Answer: {WRONG}\nAnswer: {RIGHT}") is None
    assert GAME.extract_answer(PUZZLE, f"Answer: {RIGHT} or {OTHER_RIGHT}") == OTHER_RIGHT  # the longer run
    assert GAME.extract_answer(PUZZLE, f"Answer: {WRONG} or {RIGHT}") == WRONG  # judged: wrong_value


def test_a_rejected_hedge_keeps_the_errors_of_the_expression_read() -> None:
    # Only a reply that would pass is searched for a second answer, so a wrong one keeps
    # the errors the recorded tables count.
    verdict = GAME.verify(PUZZLE, f"Answer: {WRONG} or {RIGHT}")
    assert [e.kind for e in verdict.errors] == ["wrong_value"]


# Kept as the authors' GPT-4 replies are read (the reproduction's pinned game24-1-1-3-6
# reply has this shape): an expression on an earlier line, with no `Answer:` line, is a
# withdrawn try, and the later one is the answer. This also lets an earlier wrong line
# stand beside a later right one, the one shape of the families the reader still accepts.
EARLIER_LINE_WITHDRAWN = [
    ("withdrawn-try", f"(6/(1-1/4))*1 is not allowed. Let's try another one.\n\n{RIGHT_LONG} = 24", True),
    ("earlier-wrong-line", f"{WRONG}\n{RIGHT_LONG}", True),
    ("checker-output-pasted-after-wrong-line", f"{WRONG}\nThat answer is correct: `{RIGHT_LONG}` evaluates to 24.", True),
]


@pytest.mark.parametrize(("reply", "ok"), _cases(EARLIER_LINE_WITHDRAWN))
def test_without_an_answer_line_an_expression_on_an_earlier_line_is_a_withdrawn_try(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok


# An expression of fewer numbers than the puzzle's four cannot be an answer, so beside the
# read one it is working, not a second answer; a hedge with one is therefore accepted too.
SHORTER_BESIDE = [
    ("working-after-a-comma", f"Answer: {RIGHT}, since 6 * 4 = 24", True),
    ("working-with-another-value", "Answer: 4 * 6 * (1 / 1), where 1 / 1 = 1", True),
    ("hedge-with-a-three-number-expression", f"Answer: {RIGHT} or 1 + 1 + 4", True),
]


@pytest.mark.parametrize(("reply", "ok"), _cases(SHORTER_BESIDE))
def test_an_expression_of_fewer_than_four_numbers_beside_the_answer_is_working(reply: str, ok: bool) -> None:
    assert accepted(reply) is ok
