"""HumanEval's problems as instances, and the examples their docstrings show (read as
text and with `ast`; nothing here runs code)."""

from __future__ import annotations

import gzip
import json

import pytest

from veriloop.domains.humaneval import WRONG_EXAMPLES, read_problems, visible_examples
from veriloop.domains.humaneval.problems import docstring
from veriloop.errors import DataFileError

PROBLEMS = read_problems()
BY_TASK = {p.data["task_id"]: p for p in PROBLEMS}


def problem(task: str, prompt: str, entry: str, test: str = "def check(candidate):\n    assert True\n") -> dict:
    return {"task_id": task, "prompt": prompt, "entry_point": entry, "test": test}


def test_the_package_file_holds_the_164_problems_in_order():
    assert len(PROBLEMS) == 164
    assert [p.id for p in PROBLEMS[:3]] == ["humaneval-0", "humaneval-1", "humaneval-2"]
    assert PROBLEMS[-1].id == "humaneval-163" and PROBLEMS[-1].data["task_id"] == "HumanEval/163"
    first = PROBLEMS[0]
    assert set(first.data) == {"task_id", "prompt", "entry_point", "test", "canonical_solution"}
    assert first.data["entry_point"] == "has_close_elements" and first.reference is None
    assert "def check(candidate):" in first.data["test"]


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_file_of_the_same_format_stands_in(tmp_path, suffix):
    rows = [problem("HumanEval/7", "def f(x):\n    \"\"\"x twice\"\"\"\n", "f"),
            problem("Mine/double it", "def g(x):\n    pass\n", "g")]
    text = "".join(json.dumps(r) + "\n" for r in rows) + "\n"
    path = tmp_path / f"mine{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    got = read_problems(path)
    assert [p.id for p in got] == ["humaneval-7", "humaneval-double_it"]
    assert got[0].data == rows[0]


@pytest.mark.parametrize(("lines", "message"), [
    (['{"task_id": "T/1", "prompt": "p", "entry_point": "f"}'],
     "line 1: missing or empty field 'test'; expected JSONL (or .jsonl.gz) with \"task_id\""),
    (["not json"], "line 1: not valid JSON"),
    (['{"task_id": "T/1", "prompt": "p", "entry_point": "not a name", "test": "t"}'],
     "line 1: entry_point 'not a name' is not a Python name"),
    ([json.dumps(problem("A/1", "p", "f")), json.dumps(problem("B/1", "p", "f"))],
     "line 2: task 'B/1' has the id humaneval-1 of line 1; give each problem its own task_id"),
])
def test_a_bad_file_is_one_error_naming_the_line(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFileError) as caught:
        read_problems(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_file_says_what_to_give(tmp_path):
    with pytest.raises(DataFileError, match=r"nothere.jsonl: file not found; expected JSONL"):
        read_problems(tmp_path / "nothere.jsonl")


def test_prompt_examples_are_the_lines_after_each_prompt_marker():
    assert visible_examples(BY_TASK["HumanEval/0"].data["prompt"], "has_close_elements") == [
        ("has_close_elements([1.0, 2.0, 3.0], 0.5)\n", "False\n"),
        ("has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)\n", "True\n"),
    ]


def test_escapes_in_a_docstring_stay_as_typed_and_ragged_indentation_is_read():
    # HumanEval/51's docstring is not raw: "\n" inside it would split the example's source.
    prompt = BY_TASK["HumanEval/51"].data["prompt"]
    assert "\\n" in docstring(prompt, "remove_vowels")
    assert visible_examples(prompt, "remove_vowels", "HumanEval/51")[1] == (
        "remove_vowels(\"abcdef\\nghijklm\")\n", "'bcdf\\nghjklm'\n")


def test_a_comparison_with_nothing_after_it_wants_true_and_a_typo_is_left_out():
    prompt = ('def f(a):\n    """Sort.\n    >>> f([2, 1]) == [1, 2]\n    >>> f([3]) [3]\n    >>> f([])\n    []\n'
              '    >>> x = 1\n    """\n')
    assert visible_examples(prompt, "f") == [("f([2, 1]) == [1, 2]\n", "True\n"), ("f([])\n", "[]\n"),
                                             ("x = 1\n", "")]


def test_one_line_examples_below_the_word_example_with_literal_values_only():
    prompt = ('def f(s, n):\n    """f(1, 2) = 3 is the rule, not an example.\n    For example:\n'
              '    f("ab", 1) ➞ "b"\n    * f("", 0) => []\n    f(x, 1) == 3\n    f("a", 2) -> true\n'
              '    f("a", 3) returns 7 # seven\n    f("z", 4) should return 8.\n    f("q", 5)  ==>  (1, 2)\n    """\n')
    assert visible_examples(prompt, "f") == [
        ('f("ab", 1)\n', '"b"\n'), ('f("", 0)\n', "[]\n"), ('f("a", 3)\n', "7\n"), ('f("z", 4)\n', "8\n"),
        ('f("q", 5)\n', "(1, 2)\n"),
    ]


def test_examples_the_canonical_solutions_contradict_are_left_out():
    median = visible_examples(BY_TASK["HumanEval/47"].data["prompt"], "median", "HumanEval/47")
    assert median == [("median([3, 1, 2, 4, 5])\n", "3\n")]
    assert visible_examples(BY_TASK["HumanEval/116"].data["prompt"], "sort_array", "HumanEval/116") == []
    assert [e[0] for e in visible_examples(BY_TASK["HumanEval/130"].data["prompt"], "tri", "HumanEval/130")] == [
        "tri(3)\n"]
    assert set(WRONG_EXAMPLES) == {"HumanEval/47", "HumanEval/116", "HumanEval/130", "HumanEval/148"}


def test_how_many_problems_show_examples():
    counts = [len(visible_examples(p.data["prompt"], p.data["entry_point"], p.data["task_id"])) for p in PROBLEMS]
    assert (sum(c > 0 for c in counts), sum(counts)) == (127, 344)
