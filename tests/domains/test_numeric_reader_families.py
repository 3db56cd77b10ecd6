"""Reader families (issue 41) applied to the step-by-step math answer readers (GSM8K and
MATH-500, reference 12): a wrong answer or a reply stating several answers is never
accepted; a right one written unambiguously is."""

from __future__ import annotations

import pytest

from veriloop.domains.stepwise import GSM8KSteps, Math500Steps

GSM8K = GSM8KSteps()
MATH = Math500Steps()
SEVERAL = "malformed"

# (family, reply's last lines, GSM8K accepts, MATH-500 accepts); a rejection of a hedge is
# a malformed verdict, of a wrong single answer a wrong_answer one.
FAMILIES = [
    ("plain-right", "Answer: 12", True, True),
    ("several-answers-or", "Answer: 12 or 14", False, False),
    ("several-answers-comma", "Answer: 12, 14", False, False),
    ("several-answers-either", "Answer: either 14 or 12", False, False),
    ("several-answers-between", "Answer: between 10 and 12", False, False),
    ("two-answer-lines-disagree", "Answer: 14\nAnswer: 12", False, False),
    ("two-answer-lines-agree", "Answer: 12\nFinal answer: 12", True, True),
    # A later answer line that a correction introduces replaces the earlier one.
    ("corrected-to-right", "Answer: 14\nNo, that was wrong.\nAnswer: 12", True, True),
    ("corrected-to-wrong", "Answer: 12\nWait, I made a mistake.\nAnswer: 14", False, False),
    ("two-boxes-on-answer-line", "Answer: \\boxed{14} or \\boxed{12}", False, False),
    ("hash-marks-two", "#### 14\n#### 12", False, False),
    ("answer-in-prose-only", "So the total is 12 apples.", False, False),
    ("equals-target-appended", "Answer: 14 = 12", False, False),
    # Found by `veriloop audit` on the model's own GSM8K solutions ("Answer: 575 miles = 45" read 45).
    ("equals-target-after-a-unit", "Answer: 14 miles = 12", False, False),
    ("equals-target-after-a-currency-sign", "Answer: $14 = 12", False, False),
    ("same-amount-two-ways", "Answer: 12 dollars = $12", True, True),
    ("equals-target-in-the-same-unit", "Answer: 14 miles = 12 miles", False, False),
    ("a-conversion-between-two-units", "Answer: 1 dozen = 12 eggs", True, False),
    ("calculation-with-units-then-result", "Answer: 14 apples - 2 apples = 12", True, True),
    ("calculation-in-words-then-result", "Answer: 3 times 4 = 12", True, True),
    ("sum-shown-then-result", "Answer: 7+5 = 12", True, True),
    ("unit-after-number", "Answer: 12 dollars", True, False),
    ("full-width-digits-right", "Answer: １２", True, True),
    ("full-width-digits-wrong", "Answer: １４", False, False),
    ("letter-o-for-zero", "Answer: 1O", False, False),
    ("typographic-minus-wrong", "Answer: \u221212", False, False),
    ("checker-output-pasted", "Answer: 14\nVerdict: correct, the answer is 12", False, False),
]


@pytest.mark.parametrize("tail, gsm8k_ok, math_ok", [f[1:] for f in FAMILIES], ids=[f[0] for f in FAMILIES])
def test_numeric_reader_family(tail: str, gsm8k_ok: bool, math_ok: bool) -> None:
    reply = f"Step 1: count the apples.\n{tail}"
    for domain, accepted in ((GSM8K, gsm8k_ok), (MATH, math_ok)):
        instance = domain.parse_instance({"question": "How many apples?", "reference": "12"})
        verdict = domain.verify(instance, reply)
        assert verdict.ok is accepted, domain.name
        assert all(e.message for e in verdict.errors)


@pytest.mark.parametrize(
    "tail, why",
    [
        ("Answer: 14\nAnswer: 12", "has answer lines that disagree"),
        ("Answer: 12 or 14", "names several numbers in its answer line"),
        ("Answer: 14 = 12", "states 14 = 12, two different numbers"),
        ("Answer: 14 miles = 12", "states 14 miles = 12, two different numbers"),
        ("Answer: \\boxed{14} or \\boxed{12}", "boxes several different answers on its answer line"),
    ],
    ids=["answer-lines", "or", "equals-appended", "equals-after-a-unit", "two-boxes"],
)
def test_gsm8k_hedged_answer_is_malformed_and_says_why(tail: str, why: str) -> None:
    instance = GSM8K.parse_instance({"question": "How many apples?", "reference": "12"})
    verdict = GSM8K.verify(instance, f"Step 1: count.\n{tail}")
    assert verdict.malformed and [e.kind for e in verdict.errors] == ["malformed"]
    assert verdict.errors[0].message.startswith(f"the reply {why}, so it gives no one final answer; write each step")


def test_typographic_minus_reads_as_minus() -> None:
    instance = GSM8K.parse_instance({"question": "q", "reference": "-12"})
    assert GSM8K.extract_answer(instance, "Answer: \u221212") == "-12"
    assert GSM8K.verify(instance, "Answer: \u221212").ok


@pytest.mark.parametrize(
    "domain, tail, read",
    [
        (GSM8K, "Answer: 14\nAnswer: 12", None),
        (MATH, "Answer: 14\nAnswer: 12", None),
        (GSM8K, "Answer: 12 or 14", None),
        # MATH-500 reads the line as one expression, which math-verify then finds wrong.
        (MATH, "Answer: 12 or 14", "12 or 14"),
        (GSM8K, "Answer: 14\nNo, that was wrong.\nAnswer: 12", "12"),
        (MATH, "Answer: 14\nNo, that was wrong.\nAnswer: 12", "12"),
    ],
    ids=["hedged-lines-gsm8k", "hedged-lines-math500", "hedged-line-gsm8k", "hedged-line-math500",
         "corrected-gsm8k", "corrected-math500"],
)
def test_the_answer_read_is_the_one_the_verdict_judges(domain, tail: str, read: str | None) -> None:
    # extract_answer read the last line of a hedge while verify rejected the reply: the
    # answer a run records and the verdict it records must be about the same reading.
    instance = domain.parse_instance({"question": "How many apples?", "reference": "12"})
    reply = f"Step 1: count.\n{tail}"
    assert domain.extract_answer(instance, reply) == read
    assert domain.verify(instance, reply).malformed is (read is None)
