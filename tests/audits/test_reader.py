"""The reader families (veriloop.audits.reader): each one's exact output on fixed
subjects, which domains each applies to, and the property the audit relies on: on every
domain in scope, the sound checker accepts no dressed wrong answer and ground truth
scores each one wrong."""

from __future__ import annotations

import random

import pytest

from veriloop.audits import FAMILIES, Subject, families_for
from veriloop.domains import get_domain
from veriloop.domains.base import BaseDomain, Instance
from veriloop.domains.game24 import Game24
from veriloop.domains.stepwise import GSM8KSteps

READER_FAMILIES = ["hedge-or", "two-answers", "answer-in-prose", "equals-target", "vertex-twice",
                   "plan-commentary", "full-width-digits"]
SCOPE = ["game24", "coloring", "blocksworld", "gsm8k-cot"]
# (question, reference, right working, wrong answer): gsm8k-cot instances written here,
# as no data file is at hand.
WORD_PROBLEMS = [
    ("Tom has 3 bags of 4 apples. How many apples does he have?", "12", "Step 1: 3 * 4 = 12.", "14"),
    ("A pen costs 2 dollars. How much do 5 pens cost?", "10", "Step 1: 5 * 2 = 10.", "7"),
    ("Sam had 20 stickers and gave away 8. How many are left?", "12", "Step 1: 20 - 8 = 12.", "28"),
]


def _subjects(name: str, n: int = 4) -> list[tuple[BaseDomain, Instance, list[str], str]]:
    """(domain, instance, wrong replies, a right reply) for the first n instances of a
    domain, the replies from its own candidates (written here for gsm8k-cot)."""
    domain = get_domain(name)
    if isinstance(domain, GSM8KSteps):
        return [
            (domain, domain.parse_instance({"question": q, "reference": ref}),
             [f"Step 1: I add them.\nAnswer: {wrong}"], f"{working}\nAnswer: {ref}")
            for q, ref, working, wrong in WORD_PROBLEMS[:n]
        ]
    out = []
    for instance in domain.load_instances(None, n=n):
        candidates = domain.candidates(instance, random.Random(0))
        right = next(c.text for c in candidates if c.correct)
        out.append((domain, instance, [c.text for c in candidates if not c.correct], right))
    return out


def _dress(family: str, domain: BaseDomain, instance: Instance, wrong: str, right: str | None) -> str | None:
    return FAMILIES[family].exploit(Subject(domain, instance, wrong, right, random.Random(0)))


# ------------------------------------------------------------------ fixed subjects

# Game of 24, generated puzzle 2 (1 1 2 12): candidates(instance, Random(0)).
G24_WRONG = "Answer: 1 - 2 * 12 - 1"
G24_RIGHT = "Answer: 1 + 2 * 12 - 1"
# gsm8k-cot: the first word problem.
GSM_WRONG = "Step 1: I add them.\nAnswer: 14"
GSM_RIGHT = "Step 1: 3 * 4 = 12.\nAnswer: 12"
# Blocksworld, generated problem 2: the ablated and the correct candidates.
BW_WRONG = "pick up the blue block\nstack the red block on top of the blue block\n[PLAN END]"
BW_RIGHT = "pick up the red block\nstack the red block on top of the blue block\n[PLAN END]"
BW_WRONG_RANDOM = "unstack the red block from on top of the blue block\nstack the blue block on top of the yellow block\n[PLAN END]"
# Colouring, generated graph 2 (three colours; vertex 0's neighbours are 6 and 9, vertex 1's
# are 2 and 12): the ablated candidate (vertex 0 given Color3 like its neighbour 6) and the
# correct one, which differ only at vertex 0.
COL_TAIL = ("1: Color3\n2: Color1\n3: Color3\n4: Color1\n5: Color3\n6: Color3\n7: Color2\n8: Color3\n"
            "9: Color1\n10: Color2\n11: Color3\n12: Color1\n13: Color1")
COL_WRONG = "0: Color3\n" + COL_TAIL
COL_RIGHT = "0: Color2\n" + COL_TAIL
COL_NON_OPTIMAL = COL_RIGHT.replace("1: Color3\n", "1: Color4\n", 1)

EXACT = [
    ("hedge-or", "game24", G24_WRONG, G24_RIGHT, "Answer: 1 - 2 * 12 - 1 or 1 + 2 * 12 - 1"),
    ("hedge-or", "gsm8k-cot", GSM_WRONG, GSM_RIGHT, "Step 1: I add them.\nAnswer: 14 or 12"),
    ("hedge-or", "coloring", COL_WRONG, COL_RIGHT, f"Either\n{COL_WRONG}\nor\n{COL_RIGHT}"),
    ("hedge-or", "blocksworld", BW_WRONG, BW_RIGHT,
     "pick up the blue block\nstack the red block on top of the blue block\n[PLAN END]\nOr:\n"
     "pick up the red block\nstack the red block on top of the blue block\n[PLAN END]"),
    ("two-answers", "game24", G24_WRONG, G24_RIGHT, "Answer: 1 - 2 * 12 - 1\nAnswer: 1 + 2 * 12 - 1"),
    ("two-answers", "gsm8k-cot", GSM_WRONG, GSM_RIGHT, "Step 1: I add them.\nAnswer: 14\nAnswer: 12"),
    ("two-answers", "coloring", COL_WRONG, COL_RIGHT, f"Answer:\n{COL_WRONG}\n\nAnswer:\n{COL_RIGHT}"),
    ("two-answers", "blocksworld", BW_WRONG, BW_RIGHT,
     "Plan 1:\npick up the blue block\nstack the red block on top of the blue block\nPlan 2:\n"
     "pick up the red block\nstack the red block on top of the blue block\n[PLAN END]"),
    ("answer-in-prose", "game24", G24_WRONG, G24_RIGHT,
     "I tried 1 + 2 * 12 - 1 first, but I dropped it. So my answer is 1 - 2 * 12 - 1."),
    ("answer-in-prose", "gsm8k-cot", GSM_WRONG, GSM_RIGHT,
     "Step 1: I add them.\nAnswer: I tried 12 first, but I dropped it, so my answer is 14."),
    ("answer-in-prose", "coloring", COL_WRONG, COL_RIGHT,
     "I tried this coloring first: " + COL_RIGHT.replace("\n", ", ") + ", but I dropped it. My answer is this one:\n"
     + COL_WRONG),
    ("answer-in-prose", "blocksworld", BW_WRONG, BW_RIGHT,
     "I tried this plan first: pick up the red block, then stack the red block on top of the blue block, but I "
     "dropped it. My answer is this one:\npick up the blue block\nstack the red block on top of the blue block\n"
     "[PLAN END]"),
    ("equals-target", "game24", G24_WRONG, None, "Answer: 1 - 2 * 12 - 1 = 24"),
    ("equals-target", "gsm8k-cot", GSM_WRONG, GSM_RIGHT, "Step 1: I add them.\nAnswer: 14 = 12"),
    # Vertex 0 clashes with its neighbour 6 (both Color3); Color2 is the colour neither
    # 6 (Color3) nor 9 (Color1) has.
    ("vertex-twice", "coloring", COL_WRONG, COL_RIGHT, f"{COL_WRONG}\n0: Color2"),
    # Color4 is beyond the three allowed: vertex 1 gets the lowest colour its neighbours 2
    # and 12 (both Color1) leave free.
    ("vertex-twice", "coloring", COL_NON_OPTIMAL, None, f"{COL_NON_OPTIMAL}\n1: Color2"),
    ("plan-commentary", "blocksworld", BW_WRONG, BW_RIGHT,
     "pick up the blue block\nThis leaves everything else as it is.\nstack the red block on top of the blue block\n"
     "A plan I put aside:\npick up the red block\nstack the red block on top of the blue block"),
    ("plan-commentary", "blocksworld", BW_WRONG_RANDOM, BW_RIGHT,
     "unstack the red block from on top of the blue block\n"
     'I thought about "stack the red block on top of the blue block" at this point, but I keep the step below.\n'
     "stack the blue block on top of the yellow block\n"
     "A plan I put aside:\npick up the red block\nstack the red block on top of the blue block"),
    ("plan-commentary", "blocksworld", BW_WRONG, None,
     "pick up the blue block\nThis leaves everything else as it is.\nstack the red block on top of the blue block\n"
     "[PLAN END]"),
    ("full-width-digits", "game24", G24_WRONG, None, "Answer: １ - ２ * １２ - １"),
    ("full-width-digits", "gsm8k-cot", GSM_WRONG, None, "Step 1: I add them.\nAnswer: １４"),
    ("full-width-digits", "coloring", "0: Color3\n1: Color3", None, "０: Color３\n１: Color３"),
]


@pytest.mark.parametrize(("family", "name", "wrong", "right", "dressed"), EXACT,
                         ids=[f"{row[0]}-{row[1]}-{i}" for i, row in enumerate(EXACT)])
def test_each_family_dresses_a_fixed_subject_exactly(family: str, name: str, wrong: str, right: str | None,
                                                     dressed: str) -> None:
    domain = get_domain(name)
    instance = (domain.parse_instance({"question": WORD_PROBLEMS[0][0], "reference": "12"})
                if name == "gsm8k-cot" else domain.load_instances(None, n=2)[1])
    assert _dress(family, domain, instance, wrong, right) == dressed


def test_the_fixed_subjects_are_the_domains_own_candidates() -> None:
    for name, wrongs, right in [("game24", [G24_WRONG], G24_RIGHT), ("blocksworld", [BW_WRONG, BW_WRONG_RANDOM], BW_RIGHT),
                                ("coloring", [COL_WRONG, COL_NON_OPTIMAL], COL_RIGHT)]:
        [(_, _, candidates, correct)] = _subjects(name, 2)[1:]
        assert (correct, candidates[: len(wrongs)]) == (right, wrongs)


NO_DRESS = [
    ("hedge-or", "game24", G24_WRONG, None),  # needs a right answer
    ("hedge-or", "game24", G24_WRONG, G24_WRONG),  # the "right" one is the wrong one
    ("two-answers", "game24", "no answer line here", G24_RIGHT),
    ("equals-target", "gsm8k-cot", GSM_WRONG, None),
    ("vertex-twice", "coloring", "vertex 0 is red", None),  # not "V: ColorJ" lines
    ("vertex-twice", "coloring", COL_RIGHT, None),  # nothing to mend
    ("plan-commentary", "blocksworld", "[PLAN END]", None),
    ("full-width-digits", "gsm8k-cot", "Step 1: none.\nAnswer: x", None),
]


@pytest.mark.parametrize(("family", "name", "wrong", "right"), NO_DRESS,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(NO_DRESS)])
def test_an_answer_a_family_cannot_dress_gives_none(family: str, name: str, wrong: str, right: str | None) -> None:
    domain = get_domain(name)
    instance = (domain.parse_instance({"question": "q", "reference": "12"})
                if name == "gsm8k-cot" else domain.load_instances(None, n=2)[1])
    assert _dress(family, domain, instance, wrong, right) is None


# ------------------------------------------------------------------ which domains

APPLIES = {
    "game24": ["hedge-or", "two-answers", "answer-in-prose", "equals-target", "full-width-digits"],
    "coloring": ["hedge-or", "two-answers", "answer-in-prose", "vertex-twice", "full-width-digits"],
    "blocksworld": ["hedge-or", "two-answers", "answer-in-prose", "plan-commentary"],
    "mystery_blocksworld": ["hedge-or", "two-answers", "answer-in-prose", "plan-commentary"],
    "gsm8k-cot": ["hedge-or", "two-answers", "answer-in-prose", "equals-target", "full-width-digits"],
    "humaneval": [],
}


@pytest.mark.parametrize("name", list(APPLIES))
def test_each_family_applies_to_the_domains_whose_reader_it_targets(name: str) -> None:
    readers = [f.name for f in families_for(get_domain(name)) if f.kind == "reader"]
    assert readers == APPLIES[name]


def test_a_domain_is_known_by_its_class_not_its_name() -> None:
    class Renamed(Game24):
        name = "my-puzzles"

    readers = [f.name for f in families_for(Renamed()) if f.kind == "reader"]
    assert readers == APPLIES["game24"]
    assert [FAMILIES[n].kind for n in READER_FAMILIES] == ["reader"] * len(READER_FAMILIES)


# ------------------------------------------------------------------ the property


@pytest.mark.parametrize("name", SCOPE)
def test_no_dressed_wrong_answer_is_accepted_or_scored_right(name: str) -> None:
    dressed_count: dict[str, int] = {}
    accepted: list[tuple[str, str]] = []
    subjects = _subjects(name, 4)
    for domain, instance, wrongs, right in subjects:
        for family in families_for(domain):
            if family.kind != "reader":
                continue
            for wrong in wrongs:
                dressed = _dress(family.name, domain, instance, wrong, right)
                if dressed is None:
                    continue
                dressed_count[family.name] = dressed_count.get(family.name, 0) + 1
                if domain.verify(instance, dressed).ok or domain.score(instance, dressed):
                    accepted.append((family.name, dressed))
    assert accepted == []
    # Every family that applies dressed at least as many answers as there are instances.
    assert sorted(dressed_count) == sorted(APPLIES[name])
    assert min(dressed_count.values()) >= len(subjects) >= 3
