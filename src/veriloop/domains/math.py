"""Program-of-thought math: GSM8K, MATH-500 and SVAMP.

The model answers with a Python program that stores its result in `answer`; the
program runs in the sandbox (tools/sandbox.py) and the value it leaves there is the
answer. Ground truth compares that value with the dataset's reference: numerically
after rounding for the word-problem sets, with mathcheck.equivalent (numbers, then
LaTeX through math_verify) for MATH-500. In CRITIC the interpreter's result is the
evidence the model critiques, so these domains call no tools of their own.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .. import mathcheck
from ..datafiles import json_list_or_lines, json_objects
from ..errors import DataFileError, VeriloopError
from ..tools.sandbox import ExecResult, RunCache, SandboxLimits, program_from_text, run_python
from .base import (
    Instance,
    MatchesReference,
    Message,
    ModelCritiqued,
    ReadsDataFile,
    Verdict,
    VerdictError,
    rejection_feedback,
    shown_errors,
)

CACHE_SIZE = 1024

_SYSTEM = "You solve math problems by writing short, correct Python programs."

_FORMAT = (
    "Reply with the program only, in one ```python code block. The program must store the final "
    "result in a variable named `answer`."
)

_REASK = "Please write a corrected program: the whole program in one ```python block, with the final result in `answer`."


class _ProgramOfThought(ReadsDataFile, MatchesReference, ModelCritiqued):
    """What the three datasets share; subclasses say how files look and how answers
    are compared."""

    name: str
    description: str
    answer_tokens: int = 400
    critic_tools: tuple[str, ...] = ()
    max_corrections: int = 4
    # CRITIC: greedy first program, then corrections sampled with top-p 0.5 so the loop
    # does not repeat itself.
    critic_sampling = {"temperature": 0.0, "top_p": 1.0, "correction_temperature": 1.0, "correction_top_p": 0.5}
    file_format: str  # shown when the file is missing or malformed
    answer_hint: str  # one sentence on what `answer` should hold

    def __init__(self, limits: SandboxLimits | None = None, allow_unisolated: bool = False) -> None:
        self.limits = limits or SandboxLimits()
        self.allow_unisolated = allow_unisolated
        self._runs: RunCache[ExecResult] = RunCache(CACHE_SIZE)

    # ------------------------------------------------------------------ running

    def run_program(self, program: str) -> ExecResult:
        """The sandbox's result for a program, remembered (LRU) so that extract_answer,
        verify and score on the same reply run it once."""
        hit = self._runs.get(program)
        if hit is not None:
            return hit
        result = run_python(program, self.limits, allow_unisolated=self.allow_unisolated)
        # A timeout may be the machine's fault rather than the program's: not remembered.
        if not result.timed_out and not result.refused:
            self._runs.put(program, result)
        return result

    # ------------------------------------------------------------------ data

    def parse_instance(self, raw: Any) -> Instance:
        """{"question": "..."} (or "problem", or the whole line as text), with an
        optional "reference" answer to score against."""
        if isinstance(raw, dict) and "instance" in raw:
            raw = raw["instance"] if isinstance(raw["instance"], (str, dict)) else raw
        reference = None
        if isinstance(raw, dict):
            question = raw.get("question") or raw.get("problem")
            if question is None and ("Body" in raw or "Question" in raw):
                question = _svamp_question(raw)
            reference = raw.get("reference")
        else:
            question = raw
        if not isinstance(question, str) or not question.strip():
            raise VeriloopError(
                f'a {self.name} instance is a problem text, like {{"question": "Tom has 3 apples..."}}; got {raw!r}'
            )
        digest = hashlib.sha256(question.encode()).hexdigest()[:10]
        return Instance(
            id=f"{self.name}-{digest}",
            data={"question": question.strip()},
            reference=None if reference is None else str(reference),
        )

    # ------------------------------------------------------------------ prompts

    def prompt(self, instance: Instance) -> list[Message]:
        user = (
            "Write a Python program that solves the problem below. "
            f"{self.answer_hint}\n{_FORMAT}\n\nProblem: {instance.data['question']}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def judge_task(self, instance: Instance) -> str:
        return (
            f"Math problem: {instance.data['question']}\n"
            "A correct reply is a Python program whose variable `answer` ends up holding the problem's final result."
        )

    # ------------------------------------------------------------------ answers

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        raise NotImplementedError

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        program = program_from_text(text)
        if not program.strip():
            return None
        return self.run_program(program).answer

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return mathcheck.canonical_answer(answer)

    def verify(self, instance: Instance, text: str) -> Verdict:
        """Ground truth on a reply: the program must run, set `answer`, and match the
        reference. Without a reference only the run itself is checked."""
        program = program_from_text(text)
        if not program.strip():
            return Verdict(
                ok=False,
                malformed=True,
                errors=[VerdictError(kind="malformed", message="the reply contains no program; " + _FORMAT)],
            )
        result = self.run_program(program)
        if result.error is not None:
            syntax = result.error.startswith(("SyntaxError", "IndentationError", "TabError"))
            return Verdict(
                ok=False,
                malformed=syntax,
                errors=[VerdictError(kind="program_error", message=f"the program failed: {result.error}")],
            )
        if instance.reference is None:
            return Verdict(ok=True)
        if not self.matches(result.answer, instance.reference):
            return Verdict(
                ok=False,
                errors=[
                    VerdictError(
                        kind="wrong_answer",
                        message=f"the program's answer {result.answer} is not the expected result",
                        where=result.answer,
                    )
                ],
            )
        return Verdict(ok=True)

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        return rejection_feedback(shown_errors(verdict, level), level, "That program does not give the correct result", _REASK)

    # ------------------------------------------------------------------ CRITIC

    def evidence(self, instance: Instance, text: str) -> list[tuple[str, str]]:
        return [("python", program_from_text(text))]

    def verify_instructions(self, instance: Instance) -> str:
        return (
            "Look at the program and the result of running it. First, is the result plausible as an "
            "answer to the question (its size, its sign, a whole number where the question counts "
            "things, the unit the question asks for)? Then go through the code line by line: does "
            "each step use the right quantities from the question and the right operation? Say "
            "exactly what is wrong, or that the program is correct."
        )

    def correction_request(self, instance: Instance) -> str:
        return (
            "Write a corrected program for the problem: the whole program in one ```python block, "
            "storing the final result in a variable named `answer`."
        )

    def metrics(self, instance: Instance, text: str | None) -> dict[str, float]:
        return {"accuracy": float(self.score(instance, text))}

    def sample_metric(self, instance: Instance, text: str) -> float:
        return float(self.score(instance, text))


# --------------------------------------------------------------------------- files


def _text_field(path: Path, where: str, item: dict[str, Any], key: str, hint: str) -> str:
    value = item.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(f"{path}, {where}: missing or empty field {key!r}; {hint}")
    return value


GSM8K_FORMAT = 'JSONL with "question" and "answer", the answer ending in "#### <number>" (GSM8K test.jsonl)'
MATH500_FORMAT = 'JSONL with "problem" and "answer" (LaTeX), like MATH-500 test.jsonl'


def read_gsm8k(path: Path) -> list[Instance]:
    """GSM8K's test.jsonl: one instance per line, id gsm8k-<line>, the reference being
    the number after the solution's "####"."""
    hint = "expected " + GSM8K_FORMAT
    out = []
    for number, item in json_objects(path, hint):
        where = f"line {number}"
        question = _text_field(path, where, item, "question", hint)
        solution = _text_field(path, where, item, "answer", hint)
        if "####" not in solution:
            raise DataFileError(f'{path}, {where}: the answer has no "#### <number>" final line; {hint}')
        final = solution.rsplit("####", 1)[1].strip()
        out.append(Instance(id=f"gsm8k-{number}", data={"question": question.strip()}, reference=final))
    return out


def read_math500(path: Path) -> list[Instance]:
    """MATH-500's test.jsonl: one instance per line, id math500-<line>, the reference
    being the LaTeX answer; subject, level and unique_id are kept in the data."""
    hint = "expected " + MATH500_FORMAT
    out = []
    for number, item in json_objects(path, hint):
        where = f"line {number}"
        problem = _text_field(path, where, item, "problem", hint)
        answer = _text_field(path, where, item, "answer", hint)
        extra: dict[str, Any] = {k: item[k] for k in ("subject", "level", "unique_id") if k in item}
        out.append(Instance(id=f"math500-{number}", data={"question": problem.strip(), **extra}, reference=answer))
    return out


def _svamp_question(item: dict[str, Any]) -> str:
    body = str(item.get("Body", "")).strip()
    question = str(item.get("Question", "")).strip()
    if body and not body.endswith((".", "?", "!")):
        body += "."
    return f"{body} {question}".strip()


class GSM8K(_ProgramOfThought):
    name = "gsm8k"
    description = "Grade-school math word problems (GSM8K), solved by writing a Python program."
    file_format = GSM8K_FORMAT
    answer_hint = "`answer` must be a number."

    def _read(self, path: Path) -> list[Instance]:
        return read_gsm8k(path)

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return mathcheck.numbers_match(predicted, reference)


class SVAMP(_ProgramOfThought):
    name = "svamp"
    description = "Arithmetic word problems with varied structure (SVAMP), solved by writing a Python program."
    file_format = 'a JSON list or JSONL of objects with "Body", "Question" and "Answer" (the SVAMP format)'
    answer_hint = "`answer` must be a number."

    def _read(self, path: Path) -> list[Instance]:
        hint = "expected " + self.file_format
        rows = json_list_or_lines(path, hint)
        out = []
        for i, (where, item) in enumerate(rows, start=1):
            for key in ("Body", "Question"):
                _text_field(path, where, item, key, hint)
            answer = item.get("Answer")
            if isinstance(answer, bool) or not isinstance(answer, (int, float, str)) or mathcheck.parse_number(str(answer)) is None:
                raise DataFileError(f"{path}, {where}: field 'Answer' must be a number, got {answer!r}; {hint}")
            ident = str(item.get("ID") or i)
            out.append(Instance(id=f"svamp-{ident}", data={"question": _svamp_question(item)}, reference=str(answer)))
        return out

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return mathcheck.numbers_match(predicted, reference)


class Math500(_ProgramOfThought):
    name = "math500"
    description = "Competition mathematics (MATH-500), solved by writing a Python program."
    file_format = MATH500_FORMAT
    answer_hint = (
        "If the result is not a plain number, keep it exact with sympy (fractions, square roots, pi) "
        "or give it as a LaTeX string."
    )

    def _read(self, path: Path) -> list[Instance]:
        return read_math500(path)

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return mathcheck.equivalent(predicted, reference)
