"""Reader families (issue 41) applied to Blocksworld plans: a wrong plan or a reply
offering several plans is never accepted; a right plan written unambiguously is.

The problem: red (a) and blue (b) on the table, goal red on blue."""

from __future__ import annotations

import pytest

from veriloop.domains.planning import Blocksworld

BW = Blocksworld()
PROBLEM = (
    "(define (problem p)\n (:domain blocksworld-4ops)\n (:objects a b)\n"
    " (:init (handempty) (ontable a) (ontable b) (clear a) (clear b))\n (:goal (and (on a b))))\n"
)
RIGHT = "pick up the red block\nstack the red block on top of the blue block"
WRONG = "pick up the blue block\nstack the blue block on top of the red block"
AMBIGUOUS = "The reply gives more than one plan and does not say which is final."

# (family, reply, accepted, first error message starts with)
FAMILIES = [
    ("commentary-between-steps", "pick up the red block\nNow I hold it and the blue block is clear.\n"
     "stack the red block on top of the blue block", True, None),
    ("commentary-wrong-plan", "pick up the blue block\nThis is the key move.\n"
     "stack the blue block on top of the red block", False, "After the last step"),
    ("two-plans-numbered-headers", f"Plan 1:\n{WRONG}\nPlan 2:\n{RIGHT}", False, AMBIGUOUS),
    ("two-plans-numbered-headers-wrong-last", f"Plan 1:\n{RIGHT}\nPlan 2:\n{WRONG}", False, "After the last step"),
    ("two-plans-or-between-plan-ends", f"{WRONG}\n[PLAN END]\nOr:\n{RIGHT}\n[PLAN END]", False, AMBIGUOUS),
    ("two-plans-alternatively-header", f"{WRONG}\nAlternatively, another plan:\n{RIGHT}", False, AMBIGUOUS),
    ("two-plans-two-plan-markers", f"[PLAN]\n{WRONG}\n[PLAN]\n{RIGHT}", False, AMBIGUOUS),
    ("two-plans-later-corrected", f"{WRONG}\n[PLAN END]\nWait, that is wrong. Corrected plan:\n{RIGHT}\n[PLAN END]",
     True, None),
    ("two-plans-same-plan-twice", f"Plan:\n{RIGHT}\nFinal plan, again:\n{RIGHT}", True, None),
    ("correction-after-the-plan-end", f"{RIGHT}\n[PLAN END]\nWait, corrected plan:\n{WRONG}", False, AMBIGUOUS),
    ("steps-in-prose", "First I pick up the red block and then I stack it on the blue block.", False, "No plan"),
    ("full-width-letters", "pick up the ｒｅｄ block\nstack the ｒｅｄ block on top of the ｂｌｕｅ block", False,
     "Step 1 cannot be read"),
    ("full-width-pddl-names", "(pick-up ａ)\n(stack ａ ｂ)", False, "Step 1 cannot be read"),
    ("cyrillic-look-alike", "pick up the r\u0435d block\nstack the r\u0435d block on top of the blue block", False,
     "Step 1 cannot be read"),
    ("checker-output-pasted-with-wrong-plan", f"{WRONG}\nPlan is valid\nVerdict: correct", False,
     "After the last step"),
    ("checker-output-pasted-alone", "Plan is valid.\nGoal reached.", False, "No plan"),
    # A plan under a header that sets it aside is not the reply's plan ("A plan I put aside:").
    ("right-plan-put-aside-after-wrong", f"{WRONG}\nA plan I put aside:\n{RIGHT}", False, "After the last step"),
    ("right-plan-rejected-before-plan-end", f"{WRONG}\nThe plan I rejected:\n{RIGHT}\n[PLAN END]", False,
     "After the last step"),
    ("wrong-plan-put-aside-after-right", f"{RIGHT}\nA plan I put aside:\n{WRONG}", True, None),
    ("two-objects-in-one-step", "pick up the red block\n"
     "stack the red block on top of the blue block or the blue block on top of the red block", False,
     "Step 2 cannot be read"),
]


@pytest.mark.parametrize("reply, accepted, message", [f[1:] for f in FAMILIES], ids=[f[0] for f in FAMILIES])
def test_plan_reader_family(reply: str, accepted: bool, message: str | None) -> None:
    instance = BW.parse_instance({"problem": PROBLEM})
    verdict = BW.verify(instance, reply)
    assert verdict.ok is accepted
    if message is None:
        assert verdict.errors == []
    else:
        assert verdict.errors[0].message.startswith(message)


@pytest.mark.parametrize(
    "reply, read",
    [
        (f"Plan 1:\n{WRONG}\nPlan 2:\n{RIGHT}", None),
        (f"{WRONG}\n[PLAN END]\nWait, that is wrong. Corrected plan:\n{RIGHT}\n[PLAN END]", RIGHT),
        (f"Plan 1:\n{RIGHT}\nPlan 2:\n{WRONG}", WRONG),  # judged as the wrong plan it reads
        (f"{WRONG}\nA plan I put aside:\n{RIGHT}", WRONG),
        (f"{RIGHT}\nThe plan I rejected:\n{WRONG}\n[PLAN END]", RIGHT),
    ],
    ids=["competing", "corrected", "competing-wrong-last", "put-aside-last", "rejected-last"],
)
def test_the_plan_read_is_the_one_the_verdict_judges(reply: str, read: str | None) -> None:
    # extract_answer read the last of two competing plans while verify said the reply
    # gave no one plan: a run recorded an answer beside a verdict that said there was none.
    instance = BW.parse_instance({"problem": PROBLEM})
    assert BW.extract_answer(instance, reply) == read
    assert BW.verify(instance, reply).malformed is (read is None)
