"""The code verifiers (visible, hidden, generated) inside every strategy that takes a
verifier, with scripted replies over the real humaneval domain and sandbox; the LLM
judges through the domain's judge_task; and a code verifier refused on a non-code domain."""

from __future__ import annotations

import asyncio

import pytest
from scripted import ScriptedModel, play

from veriloop.domains import get_domain
from veriloop.domains.humaneval import read_problems
from veriloop.episode import Episode
from veriloop.errors import VeriloopError
from veriloop.records import Trajectory
from veriloop.strategies import parse_strategy
from veriloop.verifiers import VERIFIERS, get_verifier
from veriloop.verifiers.code import GeneratedTests, HiddenTests, VisibleTests, ask_for_tests, parse_asserts

DOMAIN = get_domain("humaneval")
ADD = next(p for p in read_problems() if p.data["task_id"] == "HumanEval/53")
RIGHT = "```python\ndef add(x: int, y: int):\n    return x + y\n```"
WRONG = "```python\ndef add(x: int, y: int):\n    return x - y\n```"
# Passes both docstring examples, fails the hidden tests: what an incomplete check lets through.
SHOWN_ONLY = "```python\ndef add(x: int, y: int):\n    if (x, y) in ((2, 3), (5, 7)):\n        return x + y\n    return 0\n```"
TESTS = "```python\nassert add(1, 1) == 2\nassert add(0, 0) == 0\nassert add(-1, 1) == 0\n```"
REASK = "Please write the corrected function: the whole function in one ```python block."


def test_the_verifiers_are_registered_by_name_and_say_what_they_are():
    assert {"visible", "hidden", "generated"} <= set(VERIFIERS)
    assert [type(get_verifier(n)) for n in ("visible", "hidden", "generated")] == [VisibleTests, HiddenTests,
                                                                                  GeneratedTests]
    assert "sound for what it checks, incomplete" in (VisibleTests.__doc__ or "")
    assert "oracle" in (HiddenTests.__doc__ or "") and "unsound" in (GeneratedTests.__doc__ or "")


def test_backprompt_with_the_examples_feeds_back_the_first_failing_one_and_stops_where_they_pass():
    t, model = play("backprompt:verifier=visible,feedback=first,max_rounds=3", DOMAIN, ADD, [WRONG, SHOWN_ONLY])
    assert [(r.round, r.verdict.ok, r.verdict.verifier, r.correct) for r in t.rounds] == [
        (1, False, "visible", False), (2, True, "visible", False)]
    # Sound for what it checks, incomplete: accepted, and wrong by the hidden tests (a false accept).
    assert (t.stop_reason, t.correct) == ("verifier_accepted", False)
    assert model.asked[1][0][-1]["content"] == f"Your function is not correct: add(2, 3) should give 5, got -1.\n{REASK}"
    assert [m["role"] for m in model.asked[1][0]] == ["system", "user", "assistant", "user"]


def test_backprompt_with_the_examples_at_binary_says_only_that_it_is_wrong():
    t, model = play("backprompt:verifier=visible,feedback=binary,max_rounds=2", DOMAIN, ADD, [WRONG, WRONG])
    assert t.stop_reason == "max_rounds" and [r.verdict.ok for r in t.rounds] == [False, False]
    assert model.asked[1][0][-1]["content"] == f"Your function is not correct. {REASK}"


def test_the_hidden_oracle_rejects_what_the_examples_let_through():
    t, model = play("backprompt:verifier=hidden,feedback=first,max_rounds=3", DOMAIN, ADD, [SHOWN_ONLY, RIGHT])
    assert [(r.verdict.ok, r.verdict.verifier, r.correct) for r in t.rounds] == [(False, "hidden", False),
                                                                                (True, "hidden", True)]
    assert model.asked[1][0][-1]["content"] == (
        f"Your function is not correct: assert add(0, 1) == 1 failed: got 0, expected 1.\n{REASK}")


def test_generated_tests_are_one_verify_call_a_round_and_their_failures_are_fed_back():
    t, model = play("backprompt:verifier=generated,feedback=all,max_rounds=3", DOMAIN, ADD,
                    [WRONG, TESTS, RIGHT, TESTS])
    assert [c.role for c in t.calls] == ["generate", "verify", "generate", "verify"]
    assert [(r.verdict.ok, r.verdict.verifier) for r in t.rounds] == [(False, "generated"), (True, "generated")]
    assert t.correct is True
    stub = DOMAIN.function_stub(ADD)
    assert model.asked[1][0] == ask_for_tests(stub, "add", 5)
    assert model.asked[1][1].temperature == 0 and model.asked[1][1].max_tokens == 400
    assert model.asked[2][0][-1]["content"] == (
        "Your function is not correct:\n- assert add(1, 1) == 2 failed: got 0, expected 2\n"
        f"- assert add(-1, 1) == 0 failed: got -2, expected 0\n{REASK}")


def test_generated_tests_that_cannot_be_read_are_an_unreadable_rejection():
    t, _ = play("backprompt:verifier=generated,max_rounds=1", DOMAIN, ADD, [RIGHT, "I would test it with 1 and 2."])
    (verdict,) = [r.verdict for r in t.rounds]
    assert (verdict.ok, verdict.unreadable, verdict.verifier) == (False, True, "generated")
    assert [e.message for e in verdict.errors] == ["the test writer's reply held no assert statement on add"]
    assert t.correct is True  # a right function the unsound check could not confirm


def test_no_tests_are_asked_for_a_reply_without_the_function():
    t, _ = play("backprompt:verifier=generated,max_rounds=1", DOMAIN, ADD, ["I cannot."])
    assert [c.role for c in t.calls] == ["generate"]
    assert t.rounds[0].verdict.malformed and t.rounds[0].verdict.verifier == "generated"


def test_parse_asserts_keeps_the_asserts_that_name_the_function():
    reply = ("Tests:\n```python\nimport math\nassert add(1, 2) == 3, 'sum'\nassert math.pi > 3\n"
             "def test_more():\n    assert add(2, 2) == 4\n    assert add(1, 2) == 3\n```\n"
             "```python\nassert add(0, 0) == 0\nassert add(1, (\nassert add(5, 5) == 10\n```")
    assert parse_asserts(reply, "add") == ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0",
                                           "assert add(5, 5) == 10"]
    assert parse_asserts("assert add(1, 1) == 2\nThat is all.", "add") == ["assert add(1, 1) == 2"]
    assert parse_asserts("no tests", "add") == []
    assert len(parse_asserts("\n".join(f"assert add({i}, 0) == {i}" for i in range(30)), "add")) == 10


def test_sampling_stops_at_the_first_sample_the_examples_accept():
    t, model = play("sampling:k=4,verifier=visible", DOMAIN, ADD, [WRONG, "no idea", SHOWN_ONLY, RIGHT])
    assert [(r.verdict.ok, r.verdict.malformed) for r in t.rounds] == [(False, False), (False, True), (True, False)]
    assert t.stop_reason == "verifier_accepted" and len(model.replies) == 1


def test_best_of_n_ranks_by_the_share_of_examples_passed():
    half = "```python\ndef add(x: int, y: int):\n    return 5 if x == 2 else 0\n```"
    t, _ = play("best-of-n:n=3,verifier=visible", DOMAIN, ADD, [WRONG, half, RIGHT])
    assert [r.verdict.score for r in t.rounds] == [0.0, 0.5, 1.0]
    assert t.final_text == RIGHT and t.stop_reason == "best_accepted"
    small = "```python\ndef add(x: int, y: int):\n    return x + y if x < 100 else 0\n```"
    t, _ = play("best-of-n:n=2,verifier=hidden", DOMAIN, ADD, [WRONG, small])
    assert [r.verdict.score for r in t.rounds] == [1 / 6, 5 / 6]
    assert t.final_text == small and t.stop_reason == "none_accepted"  # the larger share of the hidden tests


def test_the_selfcheck_gate_lets_only_what_the_examples_accept_vote():
    t, _ = play("selfcheck:n=3,vote=majority,gate=visible", DOMAIN, ADD, [WRONG, WRONG, RIGHT])
    assert [(r.verdict.ok if r.verdict else None) for r in t.rounds] == [False, False, None]
    assert t.final_text == RIGHT and t.correct is True


def test_the_llm_judge_and_critique_see_the_task_and_the_extracted_function():
    judge_no = '{"correct": false, "errors": ["it subtracts"]}'
    t, model = play("backprompt:verifier=llm,feedback=llm,max_rounds=2", DOMAIN, ADD,
                    [WRONG, judge_no, "It subtracts instead of adding.", RIGHT, '{"correct": true, "errors": []}'])
    assert [c.role for c in t.calls] == ["generate", "verify", "critique", "generate", "verify"]
    judge_prompt = model.asked[1][0][-1]["content"]
    assert judge_prompt.startswith(DOMAIN.judge_task(ADD))
    assert "Proposed answer:\ndef add(x: int, y: int):\n    return x - y\n\n" in judge_prompt
    assert model.asked[3][0][-1]["content"] == f"Your function is not correct:\n- It subtracts instead of adding.\n{REASK}"
    assert (t.stop_reason, t.correct) == ("verifier_accepted", True)


@pytest.mark.parametrize("spec", ["backprompt:verifier=visible", "sampling:verifier=hidden",
                                  "best-of-n:verifier=generated", "selfcheck:gate=visible"])
def test_a_code_verifier_on_another_domain_is_refused_before_any_call(spec):
    with pytest.raises(VeriloopError) as caught:
        parse_strategy(spec).check_domain(get_domain("game24"))
    name = spec.rpartition("=")[2]
    assert str(caught.value) == (f"verifier {name!r} runs tests of a function, and domain 'game24' is not a code task; "
                                 "use it on humaneval, or use verifier=sound or llm")


def test_a_code_verifier_called_on_another_domain_says_the_same():
    game24 = get_domain("game24")
    (instance,) = game24.load_instances(None, n=1)
    episode = Episode(model=ScriptedModel([]), domain=game24, instance=instance, seed=0,
                      trajectory=Trajectory(strategy="s", domain="game24", model="m", instance_id=instance.id, seed=0))
    with pytest.raises(VeriloopError, match=r"^verifier 'visible' runs tests of a function, and domain 'game24'"):
        asyncio.run(VisibleTests().verify(episode, "4 * 6", 1))
