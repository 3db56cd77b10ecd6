"""The exact control flow of every strategy, driven by a scripted model.

The replies are the test's input, so each test states exactly what the loop must do
with them: which calls it makes (role, round, prompt), when the verifier's acceptance
stops it, what feedback text a rejection turns into, and how the budget ends it. Every
other part is the real one: Game of 24 (its parser, sound checker and feedback), the
LLM judge's parser, the feedback levels, HotpotQA with BM25 search for the CRITIC
family, GSM8K step by step for SelfCheck, and the episode's records.

Puzzle 1 1 4 6: `1 + 4 * 6 - 1` is right; `6 / (1 - 1/4)` is 8 (one error); `4 * 6 + 1`
leaves out a 1 and is 25 (two errors, so the `first` and `all` levels differ).
"""

from __future__ import annotations

import pytest
from scripted import play, search_toolbox

from veriloop.domains import get_domain
from veriloop.feedback import CRITIC_INSTRUCTIONS as CRITIQUE_INSTRUCTIONS
from veriloop.feedback import CRITIC_SYSTEM as CRITIQUE_SYSTEM
from veriloop.records import Trajectory
from veriloop.selfcheck.scoring import confidence
from veriloop.strategies import STRATEGIES
from veriloop.strategies.critic import REACT_WRAP_UP
from veriloop.tools.base import Toolbox
from veriloop.verifiers.critic import CRITIC_SYSTEM
from veriloop.verifiers.llm_judge import JUDGE_SYSTEM

GAME24 = get_domain("game24")
PUZZLE = GAME24.parse_instance({"instance": "1 1 4 6"})
BASE = GAME24.prompt(PUZZLE)

RIGHT = "Answer: 1 + 4 * 6 - 1"
EIGHT = "Answer: 6 / (1 - 1/4)"
TWO_ERRORS = "Answer: 4 * 6 + 1"
TWENTY = "Answer: (1 + 1) * (4 + 6)"

REASK = "The numbers are 1 1 4 6. Please try again and reply with one line of the form `Answer: <expression>`."
MISSING_ONE = (
    "The expression uses 1, 4, 6, but the puzzle's numbers are 1, 1, 4, 6; missing: 1. "
    "Use each puzzle number exactly once."
)
TWENTY_FIVE = "`4 * 6 + 1` evaluates to 25, not 24."
TWENTY_FEEDBACK = f"That answer is not correct: `(1 + 1) * (4 + 6)` evaluates to 20, not 24.\n{REASK}"
# What the next user message says after TWO_ERRORS is rejected, at each feedback level.
FEEDBACK_AFTER_TWO_ERRORS = {
    "none": BASE[-1]["content"],
    "binary": f"That answer is not correct. {REASK}",
    "first": f"That answer is not correct: {MISSING_ONE}\n{REASK}",
    "all": f"That answer is not correct:\n- {MISSING_ONE}\n- {TWENTY_FIVE}\n{REASK}",
}
JUDGE_REJECTS = '{"evaluation": "8", "correct": false, "errors": ["6 / (1 - 1/4) is 8, not 24"]}'
JUDGE_ACCEPTS = '{"evaluation": "24", "correct": true, "errors": []}'
JUDGE_INSTRUCTIONS = (
    'Check the proposed answer against every rule of the problem. Reply with only a JSON object of the form '
    '{"evaluation": <the number the expression evaluates to>, "correct": true or false, '
    '"errors": ["one short sentence per mistake"]}, with an empty errors list when the answer is correct.'
)


def judge_prompt(answer: str) -> list[dict[str, str]]:
    task = GAME24.judge_task(PUZZLE)
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"{task}\n\nProposed answer:\n{answer}\n\n{JUDGE_INSTRUCTIONS}"},
    ]


def calls(t: Trajectory) -> list[tuple[str, int, int]]:
    """Each recorded call as (role, round, sample index)."""
    return [(c.role, c.round, c.sample_index) for c in t.calls]


def test_every_registered_strategy_is_covered_here() -> None:
    # best-of-n and cascade have their own files; a new strategy must get its control-flow tests.
    covered = {"standard", "backprompt", "sampling", "self-consistency", "critic", "react", "rejection-sampling",
               "selfcheck"}
    assert set(STRATEGIES) - {"best-of-n", "cascade"} == covered


# ------------------------------------------------------------------ standard


def test_standard_is_one_greedy_call_whatever_the_answer() -> None:
    t, model = play("standard", GAME24, PUZZLE, [EIGHT])
    assert calls(t) == [("generate", 1, 0)]
    assert model.asked[0][0] == BASE and model.asked[0][1].temperature == 0.0
    assert [(r.round, r.answer, r.verdict, r.correct) for r in t.rounds] == [(1, "6 / (1 - 1/4)", None, False)]
    assert (t.stop_reason, t.final_text, t.final_answer, t.correct) == ("single_answer", EIGHT, "6 / (1 - 1/4)", False)


# ------------------------------------------------------------------ backprompt, sound verifier


def test_backprompt_stops_when_the_first_answer_is_accepted() -> None:
    t, model = play("backprompt:verifier=sound,feedback=first,max_rounds=5", GAME24, PUZZLE, [RIGHT])
    assert calls(t) == [("generate", 1, 0)] and model.replies == []
    assert [(r.round, r.verdict.ok) for r in t.rounds] == [(1, True)]
    assert (t.stop_reason, t.final_text, t.correct) == ("verifier_accepted", RIGHT, True)


@pytest.mark.parametrize("level", ["none", "binary", "first", "all"])
def test_backprompt_feeds_the_rejection_back_at_each_level(level: str) -> None:
    t, model = play(f"backprompt:verifier=sound,feedback={level},max_rounds=5", GAME24, PUZZLE, [TWO_ERRORS, RIGHT])
    assert calls(t) == [("generate", 1, 0), ("generate", 2, 0)]
    # The whole history goes back: base prompt, the rejected answer, the feedback.
    assert model.asked[1][0] == [
        *BASE,
        {"role": "assistant", "content": TWO_ERRORS},
        {"role": "user", "content": FEEDBACK_AFTER_TWO_ERRORS[level]},
    ]
    assert [[e.kind for e in r.verdict.errors] for r in t.rounds] == [["wrong_numbers", "wrong_value"], []]
    assert (t.stop_reason, t.final_text, t.correct) == ("verifier_accepted", RIGHT, True)


def test_backprompt_llm_feedback_asks_the_model_for_the_critique_it_feeds_back() -> None:
    critique = "  It leaves out one of the 1s and comes to 25.  "
    spec = "backprompt:verifier=sound,feedback=llm,max_rounds=5"
    t, model = play(spec, GAME24, PUZZLE, [TWO_ERRORS, critique, RIGHT])
    assert calls(t) == [("generate", 1, 0), ("critique", 1, 0), ("generate", 2, 0)]
    critique_prompt, critique_params = model.asked[1]
    assert critique_prompt == [
        {"role": "system", "content": CRITIQUE_SYSTEM},
        {
            "role": "user",
            "content": f"{GAME24.judge_task(PUZZLE)}\n\nProposed answer:\n4 * 6 + 1\n\n{CRITIQUE_INSTRUCTIONS}",
        },
    ]
    assert (critique_params.temperature, critique_params.max_tokens) == (0.0, 200)
    assert model.asked[2][0][-1] == {
        "role": "user",
        "content": f"That answer is not correct:\n- It leaves out one of the 1s and comes to 25.\n{REASK}",
    }
    assert t.stop_reason == "verifier_accepted" and t.correct


def test_backprompt_a_malformed_answer_is_told_what_to_write() -> None:
    t, model = play("backprompt:verifier=sound,feedback=first,max_rounds=2", GAME24, PUZZLE, ["I do not know.", RIGHT])
    assert model.asked[1][0][-1]["content"] == (
        "That answer is not correct: No arithmetic expression was found; end the reply with a line "
        f"`Answer: <expression>`.\n{REASK}"
    )
    assert t.rounds[0].verdict.malformed and t.rounds[0].answer is None
    assert t.stop_reason == "verifier_accepted"


def test_backprompt_ends_after_max_rounds_with_the_last_answer() -> None:
    spec = "backprompt:verifier=sound,feedback=first,max_rounds=3"
    t, model = play(spec, GAME24, PUZZLE, [EIGHT, TWENTY, TWO_ERRORS])
    assert calls(t) == [("generate", 1, 0), ("generate", 2, 0), ("generate", 3, 0)] and model.replies == []
    assert [len(messages) for messages, _ in model.asked] == [2, 4, 6]
    assert model.asked[2][0][2:] == [
        {"role": "assistant", "content": EIGHT},
        {"role": "user", "content": f"That answer is not correct: `6 / (1 - 1/4)` evaluates to 8, not 24.\n{REASK}"},
        {"role": "assistant", "content": TWENTY},
        {"role": "user", "content": TWENTY_FEEDBACK},
    ]
    assert [r.verdict.ok for r in t.rounds] == [False, False, False]
    assert (t.stop_reason, t.final_text, t.correct) == ("max_rounds", TWO_ERRORS, False)


def test_backprompt_llm_feedback_writes_no_critique_after_the_last_round() -> None:
    t, _ = play("backprompt:verifier=sound,feedback=llm,max_rounds=2", GAME24, PUZZLE, [EIGHT, "It is 8.", TWENTY])
    assert calls(t) == [("generate", 1, 0), ("critique", 1, 0), ("generate", 2, 0)]
    assert (t.stop_reason, t.final_text) == ("max_rounds", TWENTY)


# ------------------------------------------------------------------ backprompt, the model as its own judge


def test_backprompt_llm_judge_rejection_is_fed_back_then_its_acceptance_stops() -> None:
    spec = "backprompt:verifier=llm,feedback=first,max_rounds=5"
    t, model = play(spec, GAME24, PUZZLE, [EIGHT, JUDGE_REJECTS, RIGHT, JUDGE_ACCEPTS])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("generate", 2, 0), ("verify", 2, 0)]
    assert model.asked[1][0] == judge_prompt("6 / (1 - 1/4)")
    assert (model.asked[1][1].temperature, model.asked[1][1].max_tokens) == (0.0, 200)
    assert model.asked[2][0][-1]["content"] == f"That answer is not correct: 6 / (1 - 1/4) is 8, not 24.\n{REASK}"
    assert model.asked[3][0] == judge_prompt("1 + 4 * 6 - 1")
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "llm"), (True, "llm")]
    assert (t.stop_reason, t.correct) == ("verifier_accepted", True)


def test_backprompt_llm_judge_that_accepts_a_wrong_answer_ends_the_loop_wrong() -> None:
    t, _ = play("backprompt:verifier=llm,feedback=first,max_rounds=5", GAME24, PUZZLE, [EIGHT, JUDGE_ACCEPTS])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0)]
    assert (t.stop_reason, t.final_text, t.correct) == ("verifier_accepted", EIGHT, False)


def test_backprompt_unreadable_judge_reply_is_a_rejection_with_its_own_feedback() -> None:
    spec = "backprompt:verifier=llm,feedback=first,max_rounds=2"
    t, model = play(spec, GAME24, PUZZLE, [EIGHT, "Looks fine to me!", RIGHT, "Hmm."])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("generate", 2, 0), ("verify", 2, 0)]
    assert model.asked[2][0][-1]["content"] == (
        f"That answer is not correct: the checker's reply could not be read as a verdict.\n{REASK}"
    )
    assert [(r.verdict.ok, r.verdict.unreadable) for r in t.rounds] == [(False, True), (False, True)]
    assert (t.stop_reason, t.final_text, t.correct) == ("max_rounds", RIGHT, True)


def test_backprompt_llm_judge_and_llm_critique_until_max_rounds() -> None:
    replies = [EIGHT, JUDGE_REJECTS, "It comes to 8.", TWENTY, JUDGE_REJECTS]
    t, model = play("backprompt:verifier=llm,feedback=llm,max_rounds=2", GAME24, PUZZLE, replies)
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("critique", 1, 0), ("generate", 2, 0), ("verify", 2, 0)]
    assert model.asked[3][0][-1]["content"] == f"That answer is not correct:\n- It comes to 8.\n{REASK}"
    assert model.replies == [] and t.stop_reason == "max_rounds"


def test_backprompt_chain_of_thought_judge_reads_its_last_verdict() -> None:
    reasoning = (
        'If it were {"correct": true} we would stop, but 6 / (3/4) = 8.\n{"correct": false, "errors": ["it is 8"]}'
    )
    spec = "backprompt:verifier=llm-cot,feedback=first,max_rounds=2"
    t, model = play(spec, GAME24, PUZZLE, [EIGHT, reasoning, RIGHT, JUDGE_ACCEPTS])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("generate", 2, 0), ("verify", 2, 0)]
    assert model.asked[1][1].max_tokens == 500 and "think step by step" in model.asked[1][0][-1]["content"]
    assert model.asked[2][0][-1]["content"] == f"That answer is not correct: it is 8.\n{REASK}"
    assert [r.verdict.verifier for r in t.rounds] == ["llm-cot", "llm-cot"] and t.stop_reason == "verifier_accepted"


# ------------------------------------------------------------------ sampling


def test_sampling_draws_fresh_samples_of_the_base_prompt_until_one_is_accepted() -> None:
    t, model = play("sampling:k=5", GAME24, PUZZLE, [EIGHT, TWENTY, RIGHT])
    assert calls(t) == [("generate", 1, 0), ("generate", 2, 1), ("generate", 3, 2)] and model.replies == []
    assert all(messages == BASE for messages, _ in model.asked)
    assert [(p.temperature, p.sample_offset, p.n) for _, p in model.asked] == [(1.0, 0, 1), (1.0, 1, 1), (1.0, 2, 1)]
    assert [r.verdict.ok for r in t.rounds] == [False, False, True]
    assert (t.stop_reason, t.final_text, t.correct) == ("verifier_accepted", RIGHT, True)


def test_sampling_ends_after_k_rejected_samples_with_the_last() -> None:
    t, _ = play("sampling:k=3", GAME24, PUZZLE, [EIGHT, TWENTY, TWO_ERRORS])
    assert calls(t) == [("generate", 1, 0), ("generate", 2, 1), ("generate", 3, 2)]
    assert (t.stop_reason, t.final_text, t.correct) == ("max_rounds", TWO_ERRORS, False)


def test_sampling_with_the_llm_judge_verifies_each_sample() -> None:
    t, model = play("sampling:k=3,verifier=llm", GAME24, PUZZLE, [EIGHT, JUDGE_REJECTS, RIGHT, JUDGE_ACCEPTS])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("generate", 2, 1), ("verify", 2, 0)]
    assert model.asked[2][0] == BASE  # no feedback: sampling never shows the judge's reply
    assert (t.stop_reason, t.correct) == ("verifier_accepted", True)


def test_sampling_together_draws_k_samples_in_one_call_and_checks_them_in_order() -> None:
    t, model = play("sampling:k=4,together=true", GAME24, PUZZLE, [EIGHT, TWENTY, RIGHT, TWO_ERRORS])
    # One call for the k samples (the same cache entries as one a round; the script records
    # a call once per reply), each its round's answer.
    assert [(p.temperature, p.sample_offset, p.n) for _, p in model.asked] == [(1.0, 0, 4)] * 4
    assert calls(t) == [("generate", 1, 0), ("generate", 2, 1), ("generate", 3, 2), ("generate", 4, 3)]
    # The fourth was paid and is recorded, but never checked: the third was accepted.
    assert [(r.round, r.verdict.ok) for r in t.rounds] == [(1, False), (2, False), (3, True)]
    assert (t.stop_reason, t.final_text, t.correct) == ("verifier_accepted", RIGHT, True)


def test_sampling_together_ends_with_the_last_when_none_is_accepted() -> None:
    t, _ = play("sampling:k=2,together=true", GAME24, PUZZLE, [EIGHT, TWENTY])
    assert [r.verdict.ok for r in t.rounds] == [False, False]
    assert (t.stop_reason, t.final_text) == ("max_rounds", TWENTY)


# ------------------------------------------------------------------ self-consistency


def test_self_consistency_is_one_call_for_k_samples_and_the_majority_wins() -> None:
    samples = [TWO_ERRORS, "Answer: 1+4*6-1", RIGHT]  # the last two are one answer once spaces are ignored
    t, model = play("self-consistency:k=3", GAME24, PUZZLE, samples)
    assert model.requests == 1 and [(p.n, p.temperature) for _, p in model.asked] == [(3, 1.0)] * 3
    assert calls(t) == [("generate", 1, 0), ("generate", 1, 1), ("generate", 1, 2)]
    assert [(r.round, r.text, r.verdict) for r in t.rounds] == [(1, samples[0], None), (2, samples[1], None),
                                                                (3, samples[2], None)]
    assert (t.stop_reason, t.final_text, t.correct) == ("majority", samples[1], True)


def test_self_consistency_tie_goes_to_the_earliest_answer() -> None:
    t, _ = play("self-consistency:k=2", GAME24, PUZZLE, [EIGHT, RIGHT])
    assert (t.stop_reason, t.final_text, t.correct) == ("majority", EIGHT, False)


def test_self_consistency_without_any_answer_keeps_the_first_sample() -> None:
    t, _ = play("self-consistency:k=2", GAME24, PUZZLE, ["No idea.", "Pass."])
    assert (t.stop_reason, t.final_text, t.final_answer) == ("no_answer", "No idea.", None)


# ------------------------------------------------------------------ CRITIC, ReAct, rejection sampling (HotpotQA)

QA = get_domain("hotpotqa")
QUESTION = QA.parse_instance({"question": "What is the capital of France?", "reference": "Paris"})
LYON = "France's capital is Lyon.\nSo the answer is: Lyon"
NICE = "Maybe Nice.\nSo the answer is: Nice"
PARIS = "The capital of France is Paris.\nSo the answer is: Paris"
CORRECTION_REQUEST = (
    "Using the critique, answer the question again: What is the capital of France?\n"
    "Reason step by step in a few short sentences, then end with one line `So the answer is: <short answer>`."
)
CORPUS = [
    {"title": "Paris", "text": "Paris is the capital and most populous city of France."},
    {"title": "Lyon", "text": "Lyon is the third-largest city of France, on the Rhone."},
]


@pytest.fixture()
def search(tmp_path, monkeypatch) -> Toolbox:
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    return search_toolbox(tmp_path, CORPUS)


def correction_prompt(answer: str, critique: str) -> list[dict[str, str]]:
    return [
        *QA.prompt(QUESTION),
        {"role": "assistant", "content": answer},
        {"role": "user", "content": f"A check of your answer found:\n{critique}\n\n{CORRECTION_REQUEST}"},
    ]


def test_critic_accepting_the_first_answer_stops_after_one_verification() -> None:
    t, model = play("critic:tools=false", QA, QUESTION, [PARIS, "Paris is right.\nVerdict: correct"])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0)] and model.replies == []
    assert model.asked[1][0][0] == {"role": "system", "content": CRITIC_SYSTEM}
    assert model.asked[1][0][1]["content"].startswith(f"{QA.judge_task(QUESTION)}\n\nProposed answer:\n{PARIS}\n\n")
    assert [(r.round, r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(1, True, "critic-notool")]
    assert (t.stop_reason, t.final_text, t.correct) == ("critic_accepted", PARIS, True)


def test_critic_feeds_the_critique_into_the_correction_and_verifies_again() -> None:
    critique = "Lyon is not the capital; Paris is.\nVerdict: incorrect"
    t, model = play("critic:tools=false", QA, QUESTION, [LYON, critique, PARIS, "Verdict: correct"])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("correct", 2, 1), ("verify", 2, 0)]
    assert model.asked[2][0] == correction_prompt(LYON, critique)
    assert [(r.round, r.answer, r.verdict.ok) for r in t.rounds] == [(1, "Lyon", False), (2, "Paris", True)]
    assert t.rounds[0].verdict.errors[0].message == critique
    assert (t.stop_reason, t.correct) == ("critic_accepted", True)


def test_critic_with_search_feeds_the_observation_and_the_critique_into_the_correction(search: Toolbox) -> None:
    replies = [LYON, "Action: search\nAction Input: capital of France", "Paris is.\nVerdict: incorrect", PARIS,
               "Verdict: correct"]
    t, model = play("critic", QA, QUESTION, replies, tools=search)
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("verify", 1, 0), ("correct", 2, 1), ("verify", 2, 0)]
    assert [(c.round, c.tool, c.input) for c in t.tool_calls] == [(1, "search", "capital of France")]
    observation = f"Observation: {t.tool_calls[0].text}"
    assert model.asked[2][0][-1] == {"role": "user", "content": observation}
    critique = f"Action: search\nAction Input: capital of France\n{observation}\nParis is.\nVerdict: incorrect"
    assert model.asked[3][0] == correction_prompt(LYON, critique)
    assert (t.stop_reason, t.correct) == ("critic_accepted", True)


def test_critic_stops_when_a_correction_repeats_the_answer() -> None:
    t, _ = play("critic:tools=false", QA, QUESTION, [LYON, "Verdict: incorrect", "Still Lyon.\nSo the answer is: lyon"])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("correct", 2, 1)]
    # The repeated answer is recorded as a round of its own, never verified.
    assert [(r.round, r.answer, r.verdict is None) for r in t.rounds] == [(1, "Lyon", False), (2, "lyon", True)]
    assert (t.stop_reason, t.final_answer) == ("unchanged", "lyon")


def test_critic_ends_after_max_corrections() -> None:
    replies = [LYON, "Verdict: incorrect", NICE, "Verdict: incorrect", PARIS, "Verdict: incorrect"]
    t, model = play("critic:tools=false,max_corrections=2", QA, QUESTION, replies)
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("correct", 2, 1), ("verify", 2, 0), ("correct", 3, 2),
                        ("verify", 3, 0)]
    assert model.replies == [] and [r.verdict.ok for r in t.rounds] == [False, False, False]
    # The critic rejected the last answer, but it is the output (and happens to be right).
    assert (t.stop_reason, t.final_text, t.correct) == ("max_rounds", PARIS, True)


def test_critic_oracle_ignores_the_critics_acceptance_and_stops_on_the_right_answer() -> None:
    t, _ = play("critic:tools=false,oracle=true", QA, QUESTION, [LYON, "Verdict: correct", PARIS])
    assert calls(t) == [("generate", 1, 0), ("verify", 1, 0), ("correct", 2, 1)]
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(True, "critic-notool"), (True, "oracle")]
    assert (t.stop_reason, t.correct) == ("oracle_correct", True)


def test_react_answers_after_a_search(search: Toolbox) -> None:
    t, model = play("react", QA, QUESTION, ["Action: search\nAction Input: capital of France", PARIS], tools=search)
    assert calls(t) == [("generate", 1, 0), ("generate", 1, 0)] and model.replies == []
    assert [(c.round, c.tool) for c in t.tool_calls] == [(1, "search")]
    assert model.asked[1][0][-1] == {"role": "user", "content": f"Observation: {t.tool_calls[0].text}"}
    assert all("Observation:" in p.stop for _, p in model.asked)
    assert [(r.round, r.answer, r.verdict) for r in t.rounds] == [(1, "Paris", None)]
    assert (t.stop_reason, t.final_text, t.correct) == ("answered", PARIS, True)


def test_react_tool_budget_ends_with_a_wrap_up_request(search: Toolbox) -> None:
    asks = [f"Action: search\nAction Input: query {i}" for i in range(2)]
    t, model = play("react:max_interactions=2", QA, QUESTION, [*asks, PARIS], tools=search)
    assert calls(t) == [("generate", 1, 0)] * 3 and len(t.tool_calls) == 2
    last_prompt, last_params = model.asked[2]
    assert last_prompt[-1]["content"] == f"Observation: {t.tool_calls[1].text}\n\n{REACT_WRAP_UP}"
    assert "Observation:" not in last_params.stop
    assert (t.stop_reason, t.final_text) == ("answered", PARIS)


def test_rejection_sampling_is_one_call_and_keeps_the_best_sample_by_f1() -> None:
    samples = [LYON, "So the answer is: Paris, France", PARIS, "So the answer is: Paris."]
    t, model = play("rejection-sampling:n=4", QA, QUESTION, samples)
    assert model.requests == 1 and [(p.n, p.temperature, p.top_p) for _, p in model.asked] == [(4, 1.0, 0.5)] * 4
    assert calls(t) == [("generate", 1, i) for i in range(4)]
    assert [r.round for r in t.rounds] == [1, 2, 3, 4]
    # F1 0, 2/3, 1, 1: the earliest of the best.
    assert (t.stop_reason, t.final_text) == ("best_of_n", PARIS)


# ------------------------------------------------------------------ SelfCheck

WRONG_SOLUTION = "Step 1: 1 - 1/4 = 3/4, and 6 / (3/4) = 24.\nAnswer: 6 / (1 - 1/4)"
RIGHT_SOLUTION = "Step 1: 4 * 6 = 24, and adding 1 then taking 1 away keeps 24.\nAnswer: 1 + 4 * 6 - 1"


def step_check(regenerated: str, conclusion: str) -> list[str]:
    """Scripted replies to the four stages of checking one step."""
    return ["The step aims to reach 24.", "Information: 1; Steps: none", regenerated, f"Conclusion: {conclusion}"]


STAGES = ["target", "collect", "regenerate", "compare"]


def test_selfcheck_checks_every_step_and_the_weighted_vote_picks_the_confident_answer() -> None:
    replies = [WRONG_SOLUTION, RIGHT_SOLUTION, *step_check("6 / (3/4) = 8.", "contradicts"),
               *step_check("4 * 6 = 24.", "supports")]
    t, model = play("selfcheck:n=2", GAME24, PUZZLE, replies)
    assert model.replies == [] and model.asked[0][1].n == 2 and model.asked[0][1].temperature == 0.7
    assert [(c.role, c.stage, c.round, c.step) for c in t.calls] == [
        ("generate", None, 1, None), ("generate", None, 1, None),
        *[("check", stage, 1, 1) for stage in STAGES], *[("check", stage, 2, 1) for stage in STAGES],
    ]
    assert [(c.round, c.contradicted, c.confidence) for c in t.step_checks] == [
        (1, [1], pytest.approx(confidence(1, 0))), (2, [], 1.0)
    ]
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "selfcheck"), (True, "selfcheck")]
    assert (t.stop_reason, t.final_text, t.correct) == ("weighted_vote", RIGHT_SOLUTION, True)


def test_selfcheck_majority_vote_makes_no_check_call_and_a_tie_goes_to_the_earliest() -> None:
    t, _ = play("selfcheck:n=2,vote=majority", GAME24, PUZZLE, [WRONG_SOLUTION, RIGHT_SOLUTION])
    assert calls(t) == [("generate", 1, 0), ("generate", 1, 1)] and t.step_checks == []
    assert [r.verdict for r in t.rounds] == [None, None]
    assert (t.stop_reason, t.final_text, t.correct) == ("majority_vote", WRONG_SOLUTION, False)


def test_selfcheck_global_checker_is_one_call_per_solution() -> None:
    replies = [WRONG_SOLUTION, RIGHT_SOLUTION, "It is 8.\nVerdict: incorrect", "Verdict: correct"]
    t, _ = play("selfcheck:n=2,checker=global", GAME24, PUZZLE, replies)
    assert [(c.role, c.stage, c.round) for c in t.calls] == [
        ("generate", None, 1), ("generate", None, 1), ("check", "global", 1), ("check", "global", 2)
    ]
    assert [c.confidence for c in t.step_checks] == [pytest.approx(confidence(1, 0)), 1.0]
    assert (t.stop_reason, t.final_text) == ("weighted_vote", RIGHT_SOLUTION)


def test_selfcheck_gate_keeps_rejected_solutions_out_of_the_vote() -> None:
    t, _ = play("selfcheck:n=2,vote=majority,gate=sound", GAME24, PUZZLE, [WRONG_SOLUTION, RIGHT_SOLUTION])
    assert calls(t) == [("generate", 1, 0), ("generate", 1, 1)]
    assert [r.verdict and (r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "sound"), None]
    assert (t.stop_reason, t.final_text, t.correct) == ("majority_vote", RIGHT_SOLUTION, True)


def test_selfcheck_llm_gate_asks_the_judge_after_the_solutions_and_can_reject_all() -> None:
    t, model = play("selfcheck:n=2,vote=majority,gate=llm", GAME24, PUZZLE,
                    [WRONG_SOLUTION, RIGHT_SOLUTION, JUDGE_REJECTS, '{"correct": false}'])
    assert calls(t) == [("generate", 1, 0), ("generate", 1, 1), ("verify", 1, 0), ("verify", 2, 0)]
    assert model.asked[2][0] == judge_prompt("6 / (1 - 1/4)")
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "llm"), (False, "llm")]
    assert (t.stop_reason, t.final_text) == ("gate_rejected_all", WRONG_SOLUTION)


def test_selfcheck_without_answers_finishes_with_no_answer() -> None:
    t, _ = play("selfcheck:n=2,vote=majority", GAME24, PUZZLE, ["Step 1: I am not sure.", "Step 1: Neither am I."])
    assert (t.stop_reason, t.final_text, t.final_answer) == ("no_answer", "Step 1: I am not sure.", None)


GSM = get_domain("gsm8k-cot")
APPLES = GSM.parse_instance({"question": "Tom has 12 apples. He buys 5 more. How many apples does he have?",
                             "reference": "17"})
REDO_FROM_STEP_2 = (
    "Keep step 1 exactly as you wrote them and redo the solution from step 2 on: write Step 2 and the steps after it, "
    'each on its own line as "Step N: ...", and end with a line "Answer: <final answer>" where <final answer> is '
    "a number only, with no units."
)


def test_selfcheck_verifier_in_backprompt_asks_to_redo_from_the_contradicted_step() -> None:
    wrong = "Step 1: He starts with 12 apples.\nStep 2: 12 + 5 = 18.\nAnswer: 18"
    right = "Step 1: He starts with 12 apples.\nStep 2: 12 + 5 = 17.\nAnswer: 17"
    replies = [wrong, *step_check("12 apples.", "supports"), *step_check("12 + 5 = 17.", "contradicts"),
               right, *step_check("12 apples.", "supports"), *step_check("12 + 5 = 17.", "supports")]
    t, model = play("backprompt:verifier=selfcheck,feedback=first,max_rounds=3", GSM, APPLES, replies)
    assert model.replies == []
    assert [(c.role, c.stage, c.round, c.step) for c in t.calls] == [
        ("generate", None, 1, None), *[("check", s, 1, i) for i in (1, 2) for s in STAGES],
        ("generate", None, 2, None), *[("check", s, 2, i) for i in (1, 2) for s in STAGES],
    ]
    feedback = model.asked[9][0][-1]["content"]
    assert feedback == (
        "Some steps of your solution do not hold up:\n"
        '- Step 2: step 2 ("12 + 5 = 18.") is contradicted by an independent attempt at its goal, which found: '
        f'"12 + 5 = 17."\n{REDO_FROM_STEP_2}'
    )
    assert [(c.round, c.contradicted) for c in t.step_checks] == [(1, [2]), (2, [])]
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "selfcheck"), (True, "selfcheck")]
    assert (t.stop_reason, t.final_answer, t.correct) == ("verifier_accepted", "17", True)
