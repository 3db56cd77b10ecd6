"""The humaneval domain with its tests run in the sandbox: ground truth on canonical and
wrong functions, the verdict's errors and the feedback at each level, the docstring's
examples and given asserts, the cache, and a sandbox that cannot isolate."""

from __future__ import annotations

import asyncio
import marshal

import pytest

from veriloop.domains import get_domain
from veriloop.domains.humaneval import HumanEval, read_problems
from veriloop.domains.humaneval import runner as runner_module
from veriloop.errors import VeriloopError
from veriloop.tools.sandbox import ExecResult

PROBLEMS = {p.data["task_id"]: p for p in read_problems()}
ADD = PROBLEMS["HumanEval/53"]
CLOSE = PROBLEMS["HumanEval/0"]


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}\n```\n"


def canonical(task: str) -> str:
    p = PROBLEMS[task]
    return fenced(p.data["prompt"] + p.data["canonical_solution"])


@pytest.fixture(scope="module")
def domain() -> HumanEval:
    built = get_domain("humaneval")
    assert isinstance(built, HumanEval)
    return built


@pytest.mark.parametrize("task", [
    # helpers from the prompt (32's poly, 38's encode_cyclic), random loops (53), messages on asserts (151),
    # a check that loops over cases (32), tuples and None (136, 148), floats with tolerance (2, 4)
    "HumanEval/2", "HumanEval/4", "HumanEval/32", "HumanEval/38", "HumanEval/50", "HumanEval/53", "HumanEval/136",
    "HumanEval/148", "HumanEval/151", "HumanEval/163",
])
def test_the_canonical_solution_passes_every_test(domain, task):
    verdict = domain.verify(PROBLEMS[task], canonical(task))
    assert (verdict.ok, verdict.errors, verdict.score) == (True, [], 1.0)
    assert domain.score(PROBLEMS[task], canonical(task)) is True


@pytest.mark.parametrize("task", list(PROBLEMS))
def test_every_canonical_solution_passes_its_hidden_tests(domain, task):
    # All 164, each in the sandbox (about 0.15 s apiece): the function running in its own
    # process and its values crossing as plain data must leave honest functions' results as they were.
    assert domain.score(PROBLEMS[task], canonical(task)) is True


def test_a_body_alone_is_completed_under_the_prompt_as_humaneval_does(domain):
    body = f"```python\n{CLOSE.data['canonical_solution']}```"
    assert domain.verify(CLOSE, body).ok


def test_a_wrong_function_fails_with_each_failing_test_its_values_and_its_place(domain):
    wrong = fenced("def has_close_elements(numbers, threshold):\n    print('checked', len(numbers))\n"
                   "    return numbers[5] > 2")
    verdict = domain.verify(CLOSE, wrong)
    assert (verdict.ok, verdict.malformed, verdict.score) == (False, False, 1 / 7)
    assert [(e.kind, e.where) for e in verdict.errors] == [
        ("wrong_output", "test 2 of 7"), ("exception", "test 3 of 7"), ("exception", "test 4 of 7"),
        ("wrong_output", "test 5 of 7"), ("exception", "test 6 of 7"), ("exception", "test 7 of 7")]
    assert verdict.errors[0].message == (
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False failed: got True, expected False; "
        "it printed 'checked 6\\n'")
    assert verdict.errors[1].message == (
        "assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True raised IndexError: list index out of range "
        "(at line 3 of the function: return numbers[5] > 2); it printed 'checked 5\\n'")
    assert domain.score(CLOSE, wrong) is False


def test_feedback_at_each_level(domain):
    wrong = fenced("def add(x: int, y: int):\n    return x * y")
    verdict = domain.verify(ADD, wrong)
    assert domain.feedback(ADD, verdict, "binary") == (
        "Your function is not correct. Please write the corrected function: the whole function in one ```python block.")
    assert domain.feedback(ADD, verdict, "first") == (
        "Your function is not correct: assert add(0, 1) == 1 failed: got 0, expected 1.\n"
        "Please write the corrected function: the whole function in one ```python block.")
    lines = domain.feedback(ADD, verdict, "all").splitlines()
    assert lines[:4] == ["Your function is not correct:", "- assert add(0, 1) == 1 failed: got 0, expected 1",
                         "- assert add(1, 0) == 1 failed: got 0, expected 1",
                         "- assert add(2, 3) == 5 failed: got 6, expected 5"]
    # The random loop is one test: its first failing case, with the loop's values.
    assert lines[-2].startswith("- assert add(x, y) == x + y failed: got ") and "(with x = " in lines[-2]
    assert lines[-1] == "Please write the corrected function: the whole function in one ```python block."


def test_a_reply_without_the_function_or_that_does_not_parse_is_malformed(domain):
    none = domain.verify(ADD, "I would add them.")
    assert (none.ok, none.malformed, none.score) == (False, True, None)
    assert [(e.kind, e.message) for e in none.errors] == [(
        "malformed", "the reply holds no function add: write the whole function, def add(...), in one ```python block")]
    broken = domain.verify(ADD, "```python\ndef add(x, y):\n    return (x +")
    assert (broken.ok, broken.malformed) == (False, True)
    assert [(e.kind, e.message) for e in broken.errors] == [
        ("syntax_error", "the code does not parse: SyntaxError: '(' was never closed (line 2: return (x +)")]


def test_code_that_fails_while_being_defined(domain):
    verdict = domain.verify(ADD, fenced("def add(x, y):\n    return x + y\n\nadd(1)"))
    assert (verdict.ok, verdict.malformed) == (False, False)
    assert [(e.kind, e.message) for e in verdict.errors] == [(
        "definition_error", "running the code that defines the function raised TypeError: add() missing 1 required "
        "positional argument: 'y' (at line 4 of the function: add(1))")]


def test_the_examples_check_is_sound_for_what_it_checks_and_incomplete(domain):
    cheat = fenced("def add(x: int, y: int):\n    if (x, y) in ((2, 3), (5, 7)):\n        return x + y\n    return 0")
    shown = domain.check_examples(ADD, cheat)
    assert (shown.ok, shown.score) == (True, 1.0)
    assert domain.score(ADD, cheat) is False  # passes what the docstring shows, fails the hidden tests
    wrong = domain.check_examples(ADD, fenced("def add(x, y):\n    return x - y"))
    assert [(e.kind, e.message, e.where) for e in wrong.errors] == [
        ("wrong_output", "add(2, 3) should give 5, got -1", "example 1 of 2"),
        ("wrong_output", "add(5, 7) should give 12, got -2", "example 2 of 2")]
    # A docstring without examples: nothing to reject a running function with.
    no_examples = PROBLEMS["HumanEval/38"]
    assert domain.check_examples(no_examples, canonical("HumanEval/38")).score is None


def test_given_asserts_run_against_the_function(domain):
    verdict = domain.check_asserts(ADD, fenced("def add(x, y):\n    return x - y"),
                                   ["assert add(1, 1) == 2", "assert add(0, 0) == 0", "assert add(3, 1) > 3"])
    assert verdict.score == 1 / 3
    assert [(e.message, e.where) for e in verdict.errors] == [
        ("assert add(1, 1) == 2 failed: got 0, expected 2", "test 1 of 3"),
        ("assert add(3, 1) > 3 failed: the left side is 2, the right side 3", "test 3 of 3")]


def test_the_functions_exceptions_and_arguments_cross_its_process_as_plain_data(domain):
    code = fenced("def add(x, y):\n    if x == -1:\n        raise ValueError('negative')\n    x.append(9)\n    return 0")
    verdict = domain.check_asserts(ADD, code, [
        "try:\n    add(-1, 2)\nexcept ValueError as e:\n    assert str(e) == 'negative'\nelse:\n    assert False",
        "assert add(-1, 0) == 0",
        "xs = [1]", "add(xs, 2)", "assert xs == [1]",  # the function appended to its own copy
        "add(lambda: 1, 2)",
    ])
    assert [(e.message, e.where) for e in verdict.errors] == [
        ("assert add(-1, 0) == 0 raised ValueError: negative (at line 3 of the function: raise ValueError('negative'))",
         "test 2 of 6"),
        ("add(lambda: 1, 2) raised TypeError: the test passes a value of type function to the function, which runs in "
         "its own process; only plain values are compared: None, bool, int, float, complex, str, bytes, and lists, "
         "tuples, dicts and sets of them", "test 6 of 6")]


def test_a_slow_test_times_out_and_the_rest_still_run_within_the_budget():
    # The slow call is add(2, 3), once a run (the marker file outlives the worker that is
    # killed for it): HumanEval/53's last test adds 100 random pairs, and a function slow
    # for every x == 2 met one in about one run in ten, a timeout that had nothing to do
    # with the machine. The slow call sleeps: it waits out the limit without taking a core.
    quick = HumanEval(test_seconds=1, budget_seconds=20)
    slow = fenced("import os, time\ndef add(x, y):\n    if (x, y) == (2, 3) and not os.path.exists('slept'):\n"
                  "        open('slept', 'w').close()\n        time.sleep(600)\n    return x + y")
    verdict = quick.verify(ADD, slow)
    assert [(e.kind, e.where) for e in verdict.errors] == [("timeout", "test 3 of 6")]
    assert verdict.errors[0].message == "assert add(2, 3) == 5 did not finish within 1 s"
    assert verdict.score == 5 / 6 and not verdict.ok


def test_the_budget_spent_leaves_the_rest_unrun_in_one_line():
    quick = HumanEval(test_seconds=0.4, budget_seconds=0.9)
    slow = fenced("def add(x, y):\n    while True:\n        pass")
    verdict = quick.verify(ADD, slow)
    assert [e.kind for e in verdict.errors] == ["timeout", "timeout", "timeout", "not_run"]
    assert verdict.errors[-1].message == "3 more tests did not run: the time for all of them was spent"


def test_a_workers_start_is_not_charged_to_the_test_it_starts_for(monkeypatch):
    # A worker interpreter that takes longer to start than a test may take (as on a loaded
    # machine): starting it is the harness's work, so neither the definition nor the test
    # after a worker ended times out on it, and the budget is not spent on it.
    source = "import time\ntime.sleep(1.2)\n" + runner_module.worker_source()
    slow_start = marshal.dumps(compile(source, "<harness>", "exec", dont_inherit=True, optimize=0))
    monkeypatch.setattr(runner_module, "worker_bytecode", lambda: slow_start)
    quick = HumanEval(test_seconds=1.0, budget_seconds=3.0)
    code = fenced("import os\ndef add(x, y):\n    if (x, y) == (1, 0):\n        os._exit(3)\n    return x + y")
    verdict = quick.check_asserts(ADD, code, ["assert add(0, 1) == 1", "assert add(1, 0) == 1", "assert add(2, 3) == 5",
                                              "assert add(5, 7) == 12"])
    assert [(e.kind, e.message, e.where) for e in verdict.errors] == [
        ("exception", "assert add(1, 0) == 1 failed: the function's process ended (exit status 3) during the call",
         "test 2 of 4")]


def test_a_result_is_remembered_per_function_and_tests(domain, monkeypatch):
    calls = []
    real = runner_module.run_python

    def counting(program, *args, **kwargs):
        calls.append(program)
        return real(program, *args, **kwargs)

    monkeypatch.setattr(runner_module, "run_python", counting)
    fresh = HumanEval()
    reply = fenced("def add(x, y):\n    return x + y  # remembered")
    assert fresh.verify(ADD, reply).ok and fresh.score(ADD, reply) and asyncio.run(fresh.averify(ADD, reply)).ok
    assert fresh.check_examples(ADD, reply).ok and fresh.check_examples(ADD, reply).ok
    assert len(calls) == 2  # the hidden tests once, the examples once
    assert "```" not in calls[0]  # nothing in the program can pass for a fenced block


def test_a_sandbox_that_cannot_isolate_stops_the_run_in_one_line(monkeypatch):
    def refusing(program, *args, **kwargs):
        return ExecResult(None, "", error="refused to run the program: it could not be isolated (unshare: EPERM); "
                          "run where Linux namespaces and seccomp are available, or pass allow_unisolated=True to "
                          "run without isolation", refused=True)

    monkeypatch.setattr(runner_module, "run_python", refusing)
    with pytest.raises(VeriloopError, match=r"^the humaneval tests cannot run: refused to run the program: .* "
                                            r"\(--domain-option allow_unisolated=true\)$"):
        HumanEval().verify(ADD, fenced("def add(x, y):\n    return x + y"))


def test_prompt_judge_task_and_canonical_key(domain):
    messages = domain.prompt(ADD)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == (
        "Complete the Python function below so that it does what its docstring says. Reply with the whole function, "
        "its signature included, with any imports it needs, in one ```python code block.\n\n```python\n"
        + ADD.data["prompt"].strip("\n") + "\n```")
    assert "Proposed" not in domain.judge_task(ADD) and "def add(x: int, y: int):" in domain.judge_task(ADD)
    one = domain.canonical(ADD, "def add(x,y):\n    # sum\n    return (x+y)")
    assert one == domain.canonical(ADD, "def add(x, y):\n    return x + y") == "def add(x, y):\n    return x + y"
    assert domain.canonical(ADD, None) is None


def test_script_prompt_style_asks_for_a_script_without_a_system_message():
    messages = get_domain("humaneval", prompt_style="script").prompt(ADD)
    assert messages == [{"role": "user", "content": (
        "Solve the problem below with a self-contained Python script, given in one markdown code block.\n\n```python\n"
        + ADD.data["prompt"].strip("\n") + "\n```")}]
    with pytest.raises(VeriloopError, match=r"^prompt_style must be one of function, script \(got 'essay'\)$"):
        HumanEval(prompt_style="essay")


def test_parse_instance_by_task_id_instance_id_or_problem(domain):
    assert domain.parse_instance({"instance": "HumanEval/53"}) == ADD
    assert domain.parse_instance({"instance": "humaneval-53"}) == ADD
    own = {"task_id": "Mine/1", "prompt": "def f():\n    pass\n", "entry_point": "f", "test": "def check(c):\n    pass"}
    assert domain.parse_instance({"instance": own}).id == "humaneval-1"
    with pytest.raises(VeriloopError, match=r'^a humaneval instance is a task id like "HumanEval/0"'):
        domain.parse_instance({"instance": "HumanEval/999"})


def test_a_functions_own_timeout_error_is_its_failure_not_the_budgets(domain):
    verdict = domain.verify(ADD, fenced("def add(x, y):\n    raise TimeoutError('too slow')"))
    assert [e.kind for e in verdict.errors] == ["exception"] * 6
    assert verdict.errors[0].message == (
        "assert add(0, 1) == 1 raised TimeoutError: too slow (at line 2 of the function: raise TimeoutError('too slow'))")


def test_a_check_run_loads_none_of_the_heavy_modules_in_the_harness():
    # The test module's own code runs in the harness's process: what it sees loaded there
    # is what every verdict paid for (json, base64, traceback, signal, ast: about 11 ms of CPU).
    tests = ("import sys\n"
             "LOADED = sorted(m for m in ('ast', 'json', 'base64', 'traceback', 'signal', 're', 'enum') if m in sys.modules)\n"
             "def check(candidate):\n"
             "    assert [candidate(0, 0)] + LOADED == [0]\n"
             "    assert candidate(2, 3) == 5\n")
    run = runner_module.TestRunner().run(ADD.data["prompt"], "def add(x, y):\n    return x + y", "add", "check", tests)
    assert [(t.ok, t.message) for t in run.tests] == [(True, None), (True, None)]


def test_the_harness_plans_the_tests_itself_as_this_process_does(monkeypatch):
    wrong = "def has_close_elements(numbers, threshold):\n    print('checked', len(numbers))\n    return numbers[5] > 2"
    args = (CLOSE.data["prompt"], wrong, CLOSE.data["entry_point"], "check", CLOSE.data["test"])
    planned = runner_module.TestRunner().run(*args)
    monkeypatch.setattr(runner_module, "check_plan", lambda tests, entry_point: None)
    unplanned = runner_module.TestRunner().run(*args)
    assert (unplanned.defined, unplanned.problem, unplanned.tests) == (planned.defined, planned.problem, planned.tests)
    assert [t.kind for t in planned.tests] == [
        None, "wrong_output", "exception", "exception", "wrong_output", "exception", "exception"]


def test_a_test_module_without_check_is_the_harness_error_not_the_candidates():
    run = runner_module.TestRunner().run(ADD.data["prompt"], "def add(x, y):\n    return x + y", "add", "check",
                                         "def helper():\n    pass\n")
    assert (run.defined, run.problem, run.tests) == (
        True, ("harness", "the test module has no check(candidate) function"), ())
