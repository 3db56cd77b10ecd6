"""Program-of-thought math domains (GSM8K, MATH-500, SVAMP) and the answer
equivalence they share (mathcheck)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from veriloop import mathcheck
from veriloop.domains import CriticTask, Domain, Instance, get_domain
from veriloop.domains.math import GSM8K, SVAMP, Math500
from veriloop.errors import DataFileError, VeriloopError
from veriloop.mathcheck import canonical_answer, equivalent, numbers_match, parse_number, sympy_text_to_latex

# ------------------------------------------------------------------ mathcheck


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("18", "18"),
        ("18.0", "18"),
        ("1000", "1,000"),
        ("$5", "5"),
        ("5.00", "\\$5"),
        ("25%", "25"),
        ("0.25", "25\\%"),
        ("17.996", "18"),
        ("-3", "-3.0"),
        ("1/2", "0.5"),
        ("10", "10\\text{ inches}"),
    ],
)
def test_numbers_match(pred: str, gold: str) -> None:
    assert numbers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold"), [("17", "18"), ("17.99", "18"), ("18", "twelve"), ("", "18"), (None, "18")])
def test_numbers_do_not_match(pred: str | None, gold: str) -> None:
    assert not numbers_match(pred, gold)


def test_parse_number_bounds_exponents() -> None:
    assert parse_number("1e999999") is None
    assert parse_number("\\frac{14}{3}") == (mathcheck.Fraction(14, 3), False)
    assert parse_number("-\\dfrac{1}{2}") == (mathcheck.Fraction(-1, 2), False)
    assert parse_number("50\\%") == (mathcheck.Fraction(50), True)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("4.666666666666667", "\\frac{14}{3}"),
        ("Rational(14, 3)", "\\frac{14}{3}"),
        ("14/3", "\\frac{14}{3}"),
        ("(3, pi/2)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("\\left(3, \\frac{\\pi}{2}\\right)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("C", "\\text{(C)}"),
        ("(C)", "\\text{(C)}"),
        ("2*sqrt(2)", "2\\sqrt{2}"),
        ("sqrt(8)", "2\\sqrt{2}"),
        ("0.7071067811865476", "\\frac{\\sqrt{2}}{2}"),
        ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}"),
        ("x**2 + 1", "x^2+1"),
        ("p - q", "p - q"),
    ],
)
def test_equivalent(pred: str, gold: str) -> None:
    assert equivalent(pred, gold)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [("4.6", "\\frac{14}{3}"), ("(B)", "\\text{(C)}"), ("(3, pi)", "\\left( 3, \\frac{\\pi}{2} \\right)"), ("3*sqrt(2)", "2\\sqrt{2}"), ("x" * 500, "x")],
)
def test_not_equivalent(pred: str, gold: str) -> None:
    assert not equivalent(pred, gold)


def test_equivalence_never_calls_an_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    import math_verify.parser
    import sympy.parsing.sympy_parser

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("parse_expr was called on an answer")

    monkeypatch.setattr(math_verify.parser, "parse_expr", forbidden)
    monkeypatch.setattr(sympy.parsing.sympy_parser, "parse_expr", forbidden)
    # Text that would run a command if anything evaluated it is only ever parsed.
    assert not equivalent("__import__('os').system('touch /tmp/should-not-exist')", "5")
    assert equivalent("sqrt(2)/2", "\\frac{\\sqrt{2}}{2}")
    assert equivalent("\\frac{7}{3}", "\\dfrac{7}{3}")


def test_equivalence_works_off_the_main_thread() -> None:
    # math_verify's own timeouts are signal-based and fail in threads; ours are off.
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(equivalent("2*sqrt(3)", "2\\sqrt{3}")))
    worker.start()
    worker.join(timeout=60)
    assert results == [True]


def test_sympy_text_to_latex_refuses_non_math() -> None:
    assert sympy_text_to_latex("sqrt(2)/2") == "\\frac{\\sqrt{2}}{2}"
    assert sympy_text_to_latex("open('x').read()") is None
    assert sympy_text_to_latex("[i for i in range(3)]") is None


def test_canonical_answer_groups_equal_answers() -> None:
    assert canonical_answer("18.0") == canonical_answer("18") == canonical_answer("$18") == "18"
    assert canonical_answer("1,000") == "1000"
    assert canonical_answer("\\frac{1}{3}") == canonical_answer("0.3333333") == "0.333333"
    assert canonical_answer("\\text{(C)}") == canonical_answer("C") == "C"
    assert canonical_answer("\\left( 3, \\dfrac{\\pi}{2} \\right)") == canonical_answer("(3,\\frac{\\pi}{2})")
    assert canonical_answer(None) is None


# ------------------------------------------------------------------ replies

FENCED = """Let's compute the eggs sold and the money made.

```python
eggs_per_day = 16
eaten = 3
baked = 4
price = 2
answer = (eggs_per_day - eaten - baked) * price
```

The program gives the daily earnings."""

UNFENCED = """Here is the solution:

eggs = 16 - 3 - 4
answer = eggs * 2

So she makes 18 dollars."""

WRONG = "```python\neggs = 16 - 3\nanswer = eggs * 2\n```"
CRASHING = "```python\nanswer = 16 / (3 - 3)\n```"
NO_ANSWER = "```python\nresult = (16 - 3 - 4) * 2\nprint(result)\n```"
BROKEN = "```python\nanswer = (16 - 3 - 4 * 2\n```"


@pytest.fixture(scope="module")
def gsm() -> GSM8K:
    return GSM8K()


@pytest.fixture(scope="module")
def eggs() -> Instance:
    return Instance(id="gsm8k-1", data={"question": "Janet's ducks lay 16 eggs..."}, reference="18")


def test_protocols_and_registry() -> None:
    for name, cls in (("gsm8k", GSM8K), ("math500", Math500), ("svamp", SVAMP)):
        domain = get_domain(name)
        assert isinstance(domain, cls)
        assert isinstance(domain, Domain) and isinstance(domain, CriticTask)
        assert domain.name == name and domain.critic_tools == () and domain.max_corrections == 4
        assert domain.answer_tokens == 400


@pytest.mark.parametrize("reply", [FENCED, UNFENCED, "answer = (16 - 3 - 4) * 2"])
def test_extraction_runs_the_program(gsm: GSM8K, eggs: Instance, reply: str) -> None:
    assert gsm.extract_answer(eggs, reply) == "18"
    assert gsm.score(eggs, reply)
    verdict = gsm.verify(eggs, reply)
    assert verdict.ok and not verdict.errors
    assert gsm.metrics(eggs, reply) == {"accuracy": 1.0}
    assert gsm.sample_metric(eggs, reply) == 1.0


def test_wrong_program(gsm: GSM8K, eggs: Instance) -> None:
    assert gsm.extract_answer(eggs, WRONG) == "26"
    assert not gsm.score(eggs, WRONG)
    verdict = gsm.verify(eggs, WRONG)
    assert not verdict.ok and not verdict.malformed
    assert [e.message for e in verdict.errors] == ["the program's answer 26 is not the expected result"]
    assert gsm.metrics(eggs, WRONG) == {"accuracy": 0.0}
    first = gsm.feedback(eggs, verdict, "first")
    assert "the program's answer 26 is not the expected result" in first and "```python" in first
    assert "26" not in gsm.feedback(eggs, verdict, "binary")
    assert "- the program's answer 26" in gsm.feedback(eggs, verdict, "all")


def test_failing_programs(gsm: GSM8K, eggs: Instance) -> None:
    crash = gsm.verify(eggs, CRASHING)
    assert not crash.ok and not crash.malformed
    assert crash.errors[0].message == "the program failed: ZeroDivisionError: division by zero"
    assert gsm.extract_answer(eggs, CRASHING) is None and not gsm.score(eggs, CRASHING)
    missing = gsm.verify(eggs, NO_ANSWER)
    assert "did not set a variable named `answer`" in missing.errors[0].message
    broken = gsm.verify(eggs, BROKEN)
    assert broken.malformed and broken.errors[0].message.startswith("the program failed: SyntaxError")
    assert gsm.score(eggs, None) is False


def test_program_results_are_remembered(gsm: GSM8K, eggs: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    program = "answer = 6 * 3  # remembered"
    assert gsm.extract_answer(eggs, program) == "18"
    import veriloop.domains.math as math_domain

    def no_second_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sandbox ran the same program twice")

    monkeypatch.setattr(math_domain, "run_python", no_second_run)
    assert gsm.score(eggs, f"```python\n{program}\n```")
    assert gsm.verify(eggs, program).ok


def test_critic_parts(gsm: GSM8K, eggs: Instance) -> None:
    assert gsm.evidence(eggs, FENCED) == [("python", FENCED.split("```python\n")[1].split("\n```")[0])]
    assert "line by line" in gsm.verify_instructions(eggs)
    assert gsm.tool_critique(eggs, FENCED, []) is None and gsm.good_enough(eggs, FENCED, []) is None
    assert "`answer`" in gsm.correction_request(eggs) and "```python" in gsm.correction_request(eggs)


def test_prompt_and_judge_task(gsm: GSM8K, eggs: Instance) -> None:
    messages = gsm.prompt(eggs)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "`answer`" in user and "```python" in user and "Janet's ducks" in user
    assert "Janet's ducks" in gsm.judge_task(eggs)
    assert "sympy" in Math500().prompt(eggs)[1]["content"]


def test_math500_scoring_uses_equivalence() -> None:
    domain = Math500()
    polar = Instance(id="m", data={"question": "Convert (0,3) to polar."}, reference="\\left( 3, \\frac{\\pi}{2} \\right)")
    right = "```python\nimport sympy\nanswer = (sympy.sqrt(0**2 + 3**2), sympy.pi / 2)\n```"
    wrong = "```python\nimport sympy\nanswer = (3, sympy.pi)\n```"
    assert domain.extract_answer(polar, right) == "(3, pi/2)"
    assert domain.score(polar, right)
    assert not domain.score(polar, wrong)
    frac = Instance(id="f", data={"question": "q"}, reference="\\frac{14}{3}")
    assert domain.score(frac, "answer = 14 / 3")
    assert domain.score(frac, "answer = '\\\\frac{14}{3}'")
    assert domain.canonical(frac, "4.666666666666667") == domain.canonical(frac, "\\frac{14}{3}")


def test_parse_instance_and_missing_source(gsm: GSM8K) -> None:
    inst = gsm.parse_instance({"question": "What is 2 + 3?", "reference": "5"})
    assert inst.reference == "5" and inst.data["question"] == "What is 2 + 3?"
    assert gsm.score(inst, "answer = 2 + 3")
    assert SVAMP().parse_instance({"Body": "Tom has 3 apples", "Question": "How many?"}).data["question"] == (
        "Tom has 3 apples. How many?"
    )
    with pytest.raises(VeriloopError, match="problem text"):
        gsm.parse_instance({"question": ""})
    with pytest.raises(VeriloopError, match=r'needs a data file.*"#### <number>"'):
        gsm.load_instances(None)


# ------------------------------------------------------------------ files


def test_gsm8k_shared_file(shared_data: Path) -> None:
    path = shared_data / "gsm8k" / "test.jsonl"
    if not path.is_file():
        pytest.skip("gsm8k/test.jsonl is not in ../shared/data")
    instances = GSM8K().load_instances(str(path), n=3)
    assert len(instances) == 3
    assert instances[0].id == "gsm8k-1" and instances[0].reference == "18"
    assert instances[0].data["question"].startswith("Janet")
    assert GSM8K().load_instances(str(path), n=2, offset=1)[0].id == "gsm8k-2"


def test_math500_shared_file(shared_data: Path) -> None:
    path = shared_data / "math500" / "test.jsonl"
    if not path.is_file():
        pytest.skip("math500/test.jsonl is not in ../shared/data")
    instances = Math500().load_instances(str(path), n=2)
    first = instances[0]
    assert first.reference == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert first.data["subject"] == "Precalculus" and first.data["question"].startswith("Convert the point")


def test_svamp_json_list_and_jsonl(tmp_path: Path) -> None:
    items = [
        {"ID": "chal-1", "Body": "Each pack has 6 pencils. Dan buys 4 packs", "Question": "How many pencils does he have?", "Answer": 24.0},
        {"ID": "chal-2", "Body": "There were 9 birds. 4 flew away.", "Question": "How many are left?", "Answer": 5},
    ]
    as_list = tmp_path / "svamp.json"
    as_list.write_text(json.dumps(items, indent=2))
    as_lines = tmp_path / "svamp.jsonl"
    as_lines.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    for path in (as_list, as_lines):
        instances = SVAMP().load_instances(str(path))
        assert [i.id for i in instances] == ["svamp-chal-1", "svamp-chal-2"]
        assert instances[0].data["question"] == "Each pack has 6 pencils. Dan buys 4 packs. How many pencils does he have?"
        assert instances[0].reference == "24.0"
        assert SVAMP().score(instances[0], "```python\nanswer = 6 * 4\n```")
        assert not SVAMP().score(instances[1], "answer = 9 + 4")


@pytest.mark.parametrize(
    ("domain", "content", "message"),
    [
        (GSM8K(), '{"question": "q", "answer": "#### 1"}\n{"question": "q2"\n', r"bad\.jsonl, line 2: not valid JSON"),
        (GSM8K(), '{"question": "q", "answer": "#### 1"}\n{"question": "q2"}\n', r"line 2: missing or empty field 'answer'"),
        (GSM8K(), '{"question": "q", "answer": "no final line"}\n', r'line 1: the answer has no "#### <number>"'),
        (GSM8K(), '["not", "an", "object"]\n', r"line 1: expected a JSON object"),
        (Math500(), '\n{"problem": "p"}\n', r"line 2: missing or empty field 'answer'"),
        (SVAMP(), '[{"Body": "b", "Question": "q", "Answer": 1},\n {"Body": "b"}]', r"item 2: missing or empty field 'Question'"),
        (SVAMP(), '[{"Body": "b", "Question": "q", "Answer": "many"}]', r"item 1: field 'Answer' must be a number"),
        (SVAMP(), '[{"Body": "b",\n "Question": }]', r"line 2: not valid JSON"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: Path, domain: object, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DataFileError, match=message):
        domain.load_instances(str(path))  # type: ignore[attr-defined]


def test_missing_file(tmp_path: Path) -> None:
    for domain in (GSM8K(), Math500(), SVAMP()):
        with pytest.raises(DataFileError, match=r"nothing\.jsonl: file not found; expected"):
            domain.load_instances(str(tmp_path / "nothing.jsonl"))
    with pytest.raises(VeriloopError, match="must not be negative"):
        GSM8K().load_instances(str(tmp_path / "x"), n=-1)


# Answers whose value is too big to compute (a power tower, a huge factorial, binomial,
# sum or product), each against a plain answer, either way round; and what is still
# compared: the same text, and powers and factorials of a person's size.
HUGE = [
    ("9^{9^{9}}", "5", False),
    ("5", "9^{9^{9}}", False),
    ("10^{10^{10}}", "x+1", False),
    ("x+1", "10^{10^{10}}", False),
    ("2^{2^{2^{2^{2}}}}", "65536", False),
    ("9^9^9", "7", False),
    ("9**9**9", "5", False),
    ("(10^{100})!", "1", False),
    ("1000000!", "3", False),
    ("x^{99999 \\cdot 99999}", "x", False),
    ("\\binom{10^{9}}{5 \\cdot 10^{8}}", "3", False),
    ("\\sum_{k=1}^{1000000000} k", "1", False),
    ("\\prod_{k=1}^{100000000} k", "2", False),
    ("\\underbrace{1+1}_{2}", "2", False),
    ("\\frac{1}{" * 40 + "2" + "}" * 40, "2", False),
    ("9^{9^{9}}", "9^{9^{9}}", True),
    ("2^{2007}", "2^{2006} \\cdot 2", True),
    ("\\binom{10}{3}", "120", True),
    ("5!", "120", True),
]


def test_answers_too_big_to_compute_are_answered_not_computed() -> None:
    """In a process of its own, so that a comparison that never ends fails the test instead
    of hanging it; the bound is for a broken implementation only."""
    import os
    import subprocess
    import sys

    source = str(Path(mathcheck.__file__).parents[1])  # the veriloop this suite tests
    script = (
        "import json, sys\nfrom veriloop.mathcheck import equivalent\n"
        "print(json.dumps([equivalent(p, g) for p, g in json.loads(sys.stdin.read())]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps([[p, g] for p, g, _ in HUGE]),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, done.stderr
    assert dict(zip([(p, g) for p, g, _ in HUGE], json.loads(done.stdout))) == {(p, g): e for p, g, e in HUGE}


def test_the_size_bound_passes_every_math500_reference(shared_data) -> None:
    """No reference answer of MATH-500 is refused as too big: the bound is far from them."""
    from veriloop.mathcheck import MAX_RESULT_DIGITS, _digits, _latex_parse

    rows = [json.loads(line) for line in (shared_data / "math500" / "test.jsonl").read_text().splitlines()]
    assert len(rows) == 500
    largest = max(_digits(item) for row in rows for item in _latex_parse(mathcheck._as_latex(row["answer"])))
    assert largest < MAX_RESULT_DIGITS / 1000


def test_a_comparison_slower_than_the_time_limit_is_a_non_match_and_the_next_gets_a_new_worker(monkeypatch) -> None:
    from veriloop.mathcheck import _JUDGE

    # A worker that answers "ready" and then never replies: the comparison's time runs out.
    stalled = "import sys, time\nprint('ready', flush=True)\nsys.stdin.readline()\ntime.sleep(600)\n"
    _JUDGE.stop()
    monkeypatch.setattr(mathcheck, "_WORKER", stalled)
    monkeypatch.setattr(mathcheck, "JUDGE_SECONDS", 0.5)
    assert mathcheck.equivalent("\\sqrt{8}", "2\\sqrt{2}") is False
    assert _JUDGE._proc is None  # killed, not left to hang
    monkeypatch.undo()
    assert mathcheck.equivalent("\\sqrt{8}", "2\\sqrt{2}") is True


def test_a_worker_that_died_between_comparisons_is_started_again() -> None:
    from veriloop.mathcheck import _JUDGE

    assert mathcheck.equivalent("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}") is True
    first = _JUDGE._proc
    assert first is not None
    first.kill()
    first.wait()
    assert mathcheck.equivalent("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}") is True
    assert _JUDGE._proc is not None and _JUDGE._proc.pid != first.pid
