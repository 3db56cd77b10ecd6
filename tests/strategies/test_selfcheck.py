"""SelfCheck: the text readers, the confidence function, the vote, and the checker's
control flow (on a rule-following stand-in model; the real small model runs in
test_selfcheck_e2e.py)."""

from __future__ import annotations

import asyncio
import math
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import veriloop
from veriloop.domains import Instance
from veriloop.episode import Episode
from veriloop.models.base import Completion, GenParams
from veriloop.records import Trajectory
from veriloop.selfcheck import (
    CheckSettings,
    StepChecker,
    answer_clusters,
    confidence,
    parse_comparison,
    parse_global,
    parse_used,
    split_facts,
    split_steps,
    vote,
)
from veriloop.strategies import parse_strategy
from veriloop.verifiers import get_verifier
from veriloop.verifiers.selfcheck import SelfCheckVerifier

# ------------------------------------------------------------------ step splitting


def test_marked_steps_drop_preamble_labels_and_answer_line() -> None:
    text = "Let's work it out.\nStep 1: 3 * 4 = 12 apples.\nStep 2: 12 + 5 = 17.\nAnswer: 17"
    assert split_steps(text) == ["3 * 4 = 12 apples.", "12 + 5 = 17."]


@pytest.mark.parametrize(
    "text",
    [
        "**Step 1:** a\n\n**Step 2.** b\n**Final answer:** 3",
        "### Step 1 - a\n### Step 2 - b\nAnswer: 3",
        "step 1) a\nstep 2) b",
        "1. a\n2. b\nAnswer: 3",
    ],
)
def test_step_marker_variants(text: str) -> None:
    assert split_steps(text) == ["a", "b"]


def test_multiline_step_stays_one_step() -> None:
    text = "Step 1: First part\nwith a second line.\nStep 2: done"
    assert split_steps(text) == ["First part\nwith a second line.", "done"]


def test_unmarked_solutions_fall_back_to_paragraphs_then_lines() -> None:
    assert split_steps("First we add.\n\nThen we divide.\nAnswer: 2") == ["First we add.", "Then we divide."]
    assert split_steps("add 2\nthen 3") == ["add 2", "then 3"]
    assert split_steps("one single step") == ["one single step"]


def test_empty_and_answer_only_solutions_have_no_steps() -> None:
    assert split_steps("") == []
    assert split_steps("Answer: 5") == []
    assert split_steps("Step 1:\nStep 2:   \nAnswer: 3") == []


def test_hundreds_of_steps_split_in_order() -> None:
    text = "\n".join(f"Step {i}: x{i} = {i}" for i in range(1, 301)) + "\nAnswer: 300"
    steps = split_steps(text)
    assert len(steps) == 300 and steps[0] == "x1 = 1" and steps[-1] == "x300 = 300"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_split_steps_never_fails_and_never_returns_blank_steps(text: str) -> None:
    steps = split_steps(text)
    assert all(s.strip() for s in steps)


# ------------------------------------------------------------------ question facts


def test_question_facts_are_sentences_with_decimals_and_abbreviations_intact() -> None:
    facts = split_facts("Mr. Smith has 3.5 kg of rice. He buys 2 more! How much does he have now?")
    assert facts == ["Mr. Smith has 3.5 kg of rice.", "He buys 2 more!", "How much does he have now?"]


def test_math_spans_and_option_lines_are_kept() -> None:
    facts = split_facts("Let $x = 1.5.$ Find $x^2$.\nOptions: a) 1, b) 2.25")
    assert facts == ["Let $x = 1.5.$ Find $x^2$.", "Options: a) 1, b) 2.25"]


@settings(max_examples=200, deadline=None)
@given(st.text())
@example(". ")  # a sentence of nothing but its full stop (hypothesis found it: an IndexError)
def test_split_facts_keeps_every_word(text: str) -> None:
    facts = split_facts(text)
    assert "".join("".join(f.split()) for f in facts) == "".join(text.split())


# ------------------------------------------------------------------ index parsing


@pytest.mark.parametrize(
    ("reply", "facts", "steps", "readable"),
    [
        ("Information: 1, 3; Steps: 2", [1, 3], [2], True),
        ("Information 2 and Information 4. Step 1 and 2", [2, 4], [1, 2], True),
        ("Information: none; Steps: none", [], [], True),
        ("Information 1-3; Steps: 1 to 2", [1, 2, 3], [1, 2], True),
        ("Info: 9, 2; Step 3, Step 4", [2], [], True),  # out of range facts, the step itself, later steps
        ("It uses the first two facts.", [], [], False),
        ("", [], [], False),
    ],
)
def test_parse_used(reply: str, facts: list[int], steps: list[int], readable: bool) -> None:
    assert parse_used(reply, n_facts=4, step=3) == (facts, steps, readable)


def test_parse_used_ignores_absurd_ranges() -> None:
    assert parse_used("Information 1-100000", 5, 2) == ([1], [], True)


# ------------------------------------------------------------------ comparison parser


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Both get 17. Conclusion: supports", (1, True)),
        ("The attempt gets 18, the step 17.\nConclusion: contradicts", (-1, True)),
        ("Conclusion: not related", (0, True)),
        ("Conclusion: (C) is not directly related to it", (0, True)),
        ("The step is supported. Conclusion: The attempt contradicts the step.", (-1, True)),
        ("The attempt does not support the step.", (-1, True)),
        ("It does not contradict the step.", (1, True)),
        ("The result is inconsistent with the step", (-1, True)),
        ("The values match.", (1, True)),
        ("Conclusion: supports (it does not contradict)", (1, True)),
        ("I am not sure what to say.", (0, False)),
        ("", (0, False)),
    ],
)
def test_parse_comparison(reply: str, expected: tuple[int, bool]) -> None:
    assert parse_comparison(reply) == expected


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_comparison_parser_is_total(text: str) -> None:
    r, readable = parse_comparison(text)
    assert r in (-1, 0, 1) and (readable or r == 0)


def test_parse_global() -> None:
    assert parse_global("Looks fine.\nVerdict: correct") == (1, True)
    assert parse_global("Verdict: incorrect") == (-1, True)
    assert parse_global("no verdict here") == (0, False)


# ------------------------------------------------------------------ integration function


def test_confidence_values() -> None:
    assert confidence(0, 0) == 1.0
    assert confidence(1, 0) == pytest.approx(2 / (1 + math.e))
    assert confidence(0, 1) == pytest.approx(2 / (1 + math.exp(0.3)))
    assert confidence(2, 3, lambda_contradict=0.5, lambda_unrelated=0.1) == pytest.approx(2 / (1 + math.exp(1.3)))
    assert confidence(10_000, 0) == 0.0


def test_contradictions_weigh_more_than_unrelated_steps() -> None:
    assert confidence(1, 0) < confidence(0, 1) < confidence(0, 0)


@given(st.integers(0, 50), st.integers(0, 50))
def test_confidence_is_in_unit_interval_and_decreasing(neg: int, zero: int) -> None:
    w = confidence(neg, zero)
    assert 0.0 <= w <= 1.0
    assert confidence(neg + 1, zero) <= w and confidence(neg, zero + 1) <= w


def test_confidence_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        confidence(-1, 0)
    with pytest.raises(ValueError):
        confidence(0, 0, lambda_contradict=-1)


# ------------------------------------------------------------------ voting


def test_clusters_use_the_equivalence() -> None:
    same = lambda a, b: float(a) == float(b)  # noqa: E731
    assert answer_clusters(["2", "2.0", None, "3", "02"], same) == [0, 0, None, 1, 0]


def test_weighted_vote_can_overturn_the_majority() -> None:
    clusters = [0, 0, 1]
    assert vote(clusters).cluster == 0
    weighted = vote(clusters, [0.2, 0.3, 1.0])
    assert weighted.cluster == 1 and weighted.winner == 2
    assert weighted.scores == {0: pytest.approx(0.5), 1: 1.0}


def test_ties_go_to_the_answer_seen_first() -> None:
    assert vote([1, 0, 0, 1]).cluster == 1
    assert vote([0, 1], [0.5, 0.5]).cluster == 0
    # Float sums that differ only by rounding are a tie too.
    assert vote([0, 0, 0, 1], [0.1, 0.2, 0.3, 0.6]).cluster == 0


def test_winner_is_the_most_confident_member() -> None:
    assert vote([0, 1, 0], [0.3, 0.2, 0.9]).winner == 2


def test_no_answers_no_winner() -> None:
    result = vote([None, None], [1.0, 1.0])
    assert result.winner is None and result.scores == {}


def test_vote_needs_one_weight_per_solution() -> None:
    with pytest.raises(ValueError):
        vote([0, 1], [1.0])


# ------------------------------------------------------------------ the checker's control flow


class RuleModel:
    """Answers each SelfCheck stage by rule, and wrongly on steps that contain "WRONG":
    a stand-in whose replies are known, to test what the checker does with them."""

    backend = identity = name = "rules"

    def __init__(self, concurrency: int = 1, collect_reply: str = "Information: 1; Steps: none",
                 compare_reply: str | None = None, solutions: list[str] | None = None) -> None:
        self.preferred_concurrency = concurrency
        self.collect_reply = collect_reply
        self.compare_reply = compare_reply
        self.solutions = solutions or []
        self.prompts: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def reply(self, prompt: str, i: int) -> str:
        # Later stages quote earlier replies, so the most specific instruction is tested first.
        if "Conclusion: supports" in prompt:
            if self.compare_reply is not None:
                return self.compare_reply
            original = prompt.split("The original step:", 1)[1]
            return "Conclusion: contradicts" if "WRONG" in original else "Conclusion: supports"
        if "Your task:" in prompt:
            return "The total is 17."
        if "Information: <their numbers>" in prompt:
            return self.collect_reply
        if "The step aims to" in prompt:
            return "The step aims to find the total."
        if "Verdict: correct" in prompt:
            return "Verdict: incorrect" if "WRONG" in prompt else "Verdict: correct"
        return self.solutions[i % len(self.solutions)]

    async def generate(self, messages, params: GenParams):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        prompt = messages[-1]["content"]
        out = []
        for i in range(params.n):
            self.prompts.append(prompt)
            out.append(Completion(text=self.reply(prompt, params.sample_offset + i), finish_reason="stop",
                                  prompt_tokens=len(prompt) // 4, completion_tokens=5))
        return out

    async def aclose(self) -> None:
        pass


def _ask(model: RuleModel):
    async def ask(messages, params, stage, round, step):
        return (await model.generate(messages, params))[0].text

    return ask


QUESTION = "Tom has 12 apples. He buys 5 more. How many apples does he have?"


def test_each_step_gets_four_calls_and_contradictions_lower_confidence() -> None:
    model = RuleModel()
    checker = StepChecker(_ask(model))
    solution = "Step 1: He starts with 12.\nStep 2: 12 + 5 = 18 WRONG\nAnswer: 18"
    check = asyncio.run(checker.check(QUESTION, solution))
    assert len(model.prompts) == 8
    assert [s.result for s in check.steps] == [1, -1]
    assert check.contradicted == [2] and check.unrelated == 0
    assert check.confidence == pytest.approx(confidence(1, 0))
    assert check.steps[1].facts_used == [1] and check.steps[1].target == "The step aims to find the total."


def test_regeneration_never_sees_the_step_it_checks() -> None:
    model = RuleModel(collect_reply="Information: 1, 2; Steps: 1")
    solution = "Step 1: He starts with 12 apples.\nStep 2: SECRET-STEP-TEXT 12 + 5 = 17\nAnswer: 17"
    asyncio.run(StepChecker(_ask(model)).check(QUESTION, solution))
    regeneration_prompts = [p for p in model.prompts if "Your task:" in p]
    assert len(regeneration_prompts) == 2
    assert all("SECRET-STEP-TEXT" not in p for p in regeneration_prompts)
    assert "Step 1: He starts with 12 apples." in regeneration_prompts[1]
    assert "Information 2: He buys 5 more." in regeneration_prompts[1]
    assert "Information 3" not in regeneration_prompts[1]


def test_unreadable_collection_gives_everything_and_unreadable_comparison_counts_zero() -> None:
    model = RuleModel(collect_reply="hmm", compare_reply="I cannot tell.")
    check = asyncio.run(StepChecker(_ask(model)).check(QUESTION, "Step 1: a\nStep 2: b"))
    second = check.steps[1]
    assert second.collection_unreadable and second.facts_used == [1, 2, 3] and second.steps_used == [1]
    assert all(s.unreadable and s.result == 0 for s in check.steps)
    assert check.unrelated == 2 and check.confidence == pytest.approx(confidence(0, 2))


def test_step_cap_is_applied_and_recorded() -> None:
    model = RuleModel()
    solution = "\n".join(f"Step {i}: x = {i}" for i in range(1, 301))
    check = asyncio.run(StepChecker(_ask(model), CheckSettings(max_steps=3)).check(QUESTION, solution))
    assert (check.steps_total, check.steps_checked, check.max_steps, check.capped) == (300, 3, 3, True)
    assert len(model.prompts) == 12


def test_solutions_without_steps_or_answers_do_not_crash() -> None:
    model = RuleModel()
    checker = StepChecker(_ask(model))
    empty = asyncio.run(checker.check(QUESTION, ""))
    assert empty.steps_checked == 0 and empty.confidence == 1.0
    one = asyncio.run(checker.check(QUESTION, "The answer is obviously seventeen"))
    assert one.steps_checked == 1


def test_steps_are_checked_concurrently_when_the_backend_allows() -> None:
    serial = RuleModel(concurrency=1)
    solution = "\n".join(f"Step {i}: x = {i}" for i in range(1, 7))
    asyncio.run(StepChecker(_ask(serial), concurrency=1).check_many(QUESTION, [(1, solution), (2, solution)]))
    parallel = RuleModel(concurrency=4)
    asyncio.run(StepChecker(_ask(parallel), concurrency=4).check_many(QUESTION, [(1, solution), (2, solution)]))
    # Target and collection of one step go together even on a serial backend; a server
    # gets several steps at once.
    assert serial.max_in_flight == 2
    assert parallel.max_in_flight > 2


def test_global_checker_is_one_call_on_the_same_scale() -> None:
    model = RuleModel()
    checker = StepChecker(_ask(model))
    bad = asyncio.run(checker.check_global(QUESTION, "Step 1: 12 + 5 = 18 WRONG"))
    good = asyncio.run(checker.check_global(QUESTION, "Step 1: 12 + 5 = 17"))
    assert len(model.prompts) == 2
    assert (bad.checker, bad.confidence, good.confidence) == ("global", pytest.approx(confidence(1, 0)), 1.0)


def test_settings_validate() -> None:
    with pytest.raises(ValueError):
        CheckSettings(max_steps=0)
    with pytest.raises(ValueError):
        CheckSettings(lambda_unrelated=-0.1)


# ------------------------------------------------------------------ strategy and verifier


class _Numbers:
    """A minimal step-by-step domain: the answer is the number on the Answer line."""

    name = "numbers"
    description = "test"
    answer_tokens = 64

    def prompt(self, instance):
        return [{"role": "user", "content": "Solve: " + instance.data["question"]}]

    def extract_answer(self, instance, text):
        m = re.search(r"Answer:\s*(\S+)", text)
        return m.group(1) if m else None

    def canonical(self, instance, answer):
        return None if answer is None else str(float(answer))

    def matches(self, a, b):
        return float(a) == float(b)

    def score(self, instance, text):
        return text is not None and self.extract_answer(instance, text) == instance.reference

    def judge_task(self, instance):
        return instance.data["question"]


def _episode(model, strategy: str = "selfcheck") -> Episode:
    t = Trajectory(strategy=strategy, domain="numbers", model="rules", instance_id="q", seed=0)
    return Episode(model=model, domain=_Numbers(), instance=Instance(id="q", data={"question": QUESTION}, reference="17"),
                   seed=0, trajectory=t)


# Two wrong solutions agree (each with two contradicted steps), one right one stands alone.
SOLUTIONS = [
    "Step 1: 12 + 5 = 18 WRONG\nStep 2: so 18 WRONG\nAnswer: 18",
    "Step 1: 12 + 5 = 18 WRONG\nStep 2: so 18 WRONG\nAnswer: 18.0",
    "Step 1: 12 + 5 = 17\nAnswer: 17",
]


def test_weighted_vote_beats_majority_on_the_same_solutions() -> None:
    weighted = _episode(RuleModel(solutions=SOLUTIONS))
    asyncio.run(parse_strategy("selfcheck:n=3").run(weighted))
    majority = _episode(RuleModel(solutions=SOLUTIONS))
    asyncio.run(parse_strategy("selfcheck:n=3,vote=majority").run(majority))
    # 18 and 18.0 are one cluster; its earliest solution represents it.
    assert majority.trajectory.final_answer == "18" and not majority.trajectory.correct
    t = weighted.trajectory
    assert t.final_answer == "17" and t.correct and t.stop_reason == "weighted_vote"
    assert [c.confidence for c in t.step_checks] == pytest.approx([confidence(2, 0)] * 2 + [1.0])
    assert [r.verdict.score for r in t.rounds] == pytest.approx([confidence(2, 0)] * 2 + [1.0])
    assert [r.verdict.ok for r in t.rounds] == [False, False, True]
    assert [e.where for e in t.rounds[0].verdict.errors] == ["step 1", "step 2"]
    checks = [c for c in t.calls if c.role == "check"]
    assert {c.stage for c in checks} == {"target", "collect", "regenerate", "compare"}
    assert sorted({c.round for c in checks}) == [1, 2, 3]
    assert not majority.trajectory.step_checks


def test_global_checker_strategy() -> None:
    # One call per solution: a rejected solution keeps w = 0.54, so two wrong answers
    # that differ cannot outweigh an accepted one.
    solutions = ["Step 1: 12 + 5 = 18 WRONG\nAnswer: 18", "Step 1: 12 + 5 = 19 WRONG\nAnswer: 19", SOLUTIONS[2]]
    episode = _episode(RuleModel(solutions=solutions))
    asyncio.run(parse_strategy("selfcheck:n=3,checker=global").run(episode))
    assert episode.trajectory.final_answer == "17"
    assert [c.stage for c in episode.trajectory.calls if c.role == "check"] == ["global"] * 3


def test_no_answers_finishes_with_no_answer() -> None:
    episode = _episode(RuleModel(solutions=["Step 1: I do not know."]))
    asyncio.run(parse_strategy("selfcheck:n=2").run(episode))
    assert episode.trajectory.stop_reason == "no_answer"


def test_verifier_lists_contradicted_steps_first_one_first() -> None:
    episode = _episode(RuleModel())
    solution = "Step 1: 12 apples.\nStep 2: WRONG 12 + 5 = 18\nStep 3: WRONG so 18\nAnswer: 18"
    verdict = asyncio.run(SelfCheckVerifier().verify(episode, solution, round=2))
    assert not verdict.ok and verdict.verifier == "selfcheck"
    assert [e.where for e in verdict.errors] == ["step 2", "step 3"]
    assert verdict.score == pytest.approx(confidence(2, 0))
    assert episode.trajectory.step_checks[0].round == 2


def test_verifier_threshold_from_its_name() -> None:
    episode = _episode(RuleModel(compare_reply="Conclusion: not related"))
    lenient = asyncio.run(get_verifier("selfcheck@0.5").verify(episode, "Step 1: a\nStep 2: b\nAnswer: 17", 1))
    strict = asyncio.run(get_verifier("selfcheck@0.9").verify(episode, "Step 1: a\nStep 2: b\nAnswer: 17", 1))
    assert lenient.ok and not strict.ok
    assert strict.errors[0].kind == "low_confidence"


def test_verifier_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        SelfCheckVerifier(threshold=1.5)
    with pytest.raises(ValueError):
        SelfCheckVerifier(checker="vibes")


def test_check_solution_wraps_any_model() -> None:
    from veriloop.selfcheck import check_solution

    model = RuleModel(concurrency=3)
    check = asyncio.run(check_solution(model, QUESTION, "Step 1: 12 + 5 = 18 WRONG\nStep 2: so 18\nAnswer: 18"))
    assert check.contradicted == [1] and len(model.prompts) == 8


def test_selfcheck_on_a_one_reply_function_checks_every_solution(tmp_path):
    asked: list[int] = []

    def reply(messages, params):
        asked.append(params.n)
        return "Step 1: 2 + 2 = 4.\nAnswer: 4"

    result = veriloop.correct(reply, "What is 2 + 2?", strategy="selfcheck:n=2,max_steps=1", reference="4",
                         cache=False)
    solutions = [c for c in result.trajectory.calls if c.role == "generate"]
    assert len(solutions) == 2 and [c.sample_index for c in solutions] == [0, 1]
    assert set(asked) == {1}  # each sample is its own call, so a one-reply function cannot shrink the vote
