"""`veriloop view` on a humaneval run: each round's verdict carries its failing tests
(kind, message with the values and what the function printed, where), the verifier
against the ground truth tells the examples' false accept apart, and the answer, a
function, keeps its lines on the page."""

from __future__ import annotations

import pytest
from scripted import play
from view_runs import write_run

from veriloop.domains import get_domain
from veriloop.domains.humaneval import read_problems
from veriloop.view import data

# Its tests on one worker (tests/conftest.py): the module fixture plays two strategies through
# the sandbox, which each worker would play again.
ONE_WORKER = True

DOMAIN = get_domain("humaneval")
ADD = next(p for p in read_problems() if p.data["task_id"] == "HumanEval/53")
WRONG = "```python\ndef add(x: int, y: int):\n    print('adding', x, y)\n    return x - y\n```"
SHOWN_ONLY = "```python\ndef add(x: int, y: int):\n    if (x, y) in ((2, 3), (5, 7)):\n        return x + y\n    return 0\n```"
RIGHT = "```python\ndef add(x: int, y: int):\n    return x + y\n```"


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> dict:
    oracle, _ = play("backprompt:verifier=hidden,feedback=first,max_rounds=2", DOMAIN, ADD, [WRONG, RIGHT])
    shown, _ = play("backprompt:verifier=visible,feedback=first,max_rounds=2", DOMAIN, ADD, [WRONG, SHOWN_ONLY])
    run = write_run(tmp_path_factory.mktemp("view") / "humaneval", [oracle, shown])
    return data.build_payload(data.load([run]))


def rounds_of(payload: dict, verifier: str) -> list[list]:
    (t,) = [t for t in payload["T"] if payload["groups"][t["g"]]["strategy"].endswith(f"verifier={verifier}")]
    return t["r"]


def test_a_rejected_rounds_verdict_lists_its_failing_tests(payload):
    first = rounds_of(payload, "hidden")[0]
    verdict = first[3]
    assert (verdict["ok"], verdict["by"], verdict["sc"]) == (False, "hidden", 1 / 6)  # add(1, 0) == 1 passes
    assert [(kind, where) for kind, _, where in verdict["e"]] == [("wrong_output", f"test {i} of 6") for i in (1, 3, 4, 5, 6)]
    assert payload["S"][verdict["e"][0][1]] == (
        "assert add(0, 1) == 1 failed: got -1, expected 1; it printed 'adding 0 1\\n'")
    # What was fed back after it: the first failing test.
    assert payload["S"][first[6]].startswith("Your function is not correct: assert add(0, 1) == 1 failed: got -1")


def test_the_verifier_against_the_ground_truth(payload):
    assert [r[5] for r in rounds_of(payload, "hidden")] == ["agree", "agree"]
    assert [r[5] for r in rounds_of(payload, "visible")] == ["agree", "false_accept"]


def test_the_answer_is_the_whole_function_and_the_page_keeps_its_lines(payload):
    answer = payload["S"][rounds_of(payload, "hidden")[1][2]]
    assert answer == "def add(x: int, y: int):\n    return x + y"
    script = (data.Path(data.__file__).parent / "assets" / "view.js").read_text()
    assert 'r.answer.indexOf("\\n") >= 0 ? pre(r.answer) : h("code", null, r.answer)' in script
