"""The Game of 24 domain: puzzles (generated, easiest first, or the 4nums.com CSV),
prompts, the sound checker, feedback, and the candidates and critique report of the
studies. The solver, the safe evaluator and answer extraction are the package's other
modules.

The generated puzzles are solved and ordered once a process; each load gets fresh
instances of them, its own to change."""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import DataFileError, VeriloopError
from ..base import Candidate, Instance, Message, SoundlyScored, Verdict, VerdictError, rejection_feedback, shown_errors
from .expressions import MalformedExpression, evaluate_expression, format_value
from .extraction import extract_expression, rival_expressions
from .solver import MAX_NUMBER, MIN_NUMBER, TARGET, all_solvable_puzzles, core_operations, solution_count, solve


def _numbers(instance: Instance) -> list[int]:
    return [int(n) for n in instance.data["numbers"]]


def _spaced(nums: Sequence[int]) -> str:
    return " ".join(str(n) for n in nums)


def _listed(nums: Sequence[int]) -> str:
    return ", ".join(str(n) for n in sorted(nums))


# One plain chain, one with brackets, one that needs a fraction on the way. The tests
# check they lie outside the generated easiest 30 and CSV ranks 901-1000, the usual
# evaluation slices, so an example never hands the model the answer it is tested on.
PROMPT_EXAMPLES: tuple[tuple[tuple[int, int, int, int], str], ...] = (
    ((2, 6, 9, 12), "12 + 2 * 9 - 6"),
    ((4, 4, 6, 8), "(4 + 8) * (6 - 4)"),
    ((1, 5, 5, 5), "5 * (5 - 1 / 5)"),
)

_SYSTEM = "You solve Game of 24 puzzles. Keep your reply short and finish with the requested answer line."

_RULES = (
    "Combine the four given numbers into one arithmetic expression equal to 24. "
    "Each number must appear exactly once; you may use +, -, *, / and parentheses, "
    "and no other numbers."
)

_REASK = "Please try again and reply with one line of the form `Answer: <expression>`."


class Game24(SoundlyScored):
    """Game of 24 as a veriloop domain."""

    name: str = "game24"
    description: str = "Make 24 from four numbers with + - * / and parentheses, using each number once."
    # A reply is one expression line; the cap only stops a rambling small model early.
    answer_tokens: int = 200
    # The fields of a batch line (`veriloop verify --batch`) besides "answer", with an example.
    instance_fields: dict[str, str] = {"instance": "1 1 4 6"}

    def parse_instance(self, raw: Any) -> Instance:
        """An instance from user input: {"instance": "1 1 4 6"}, "1 1 4 6", [1, 1, 4, 6] or {"numbers": [...]}."""
        if isinstance(raw, dict) and "instance" in raw:
            raw = raw["instance"]
        nums = raw.get("numbers") if isinstance(raw, dict) else raw
        parts = str(nums).split() if isinstance(nums, str) else nums
        try:
            if parts is None:
                raise TypeError("no numbers")
            numbers = [int(x) for x in parts]
        except (TypeError, ValueError):
            numbers = []
        if len(numbers) != 4 or not all(MIN_NUMBER <= x <= MAX_NUMBER for x in numbers):
            raise VeriloopError(
                f"a Game of 24 instance is four whole numbers from {MIN_NUMBER} to {MAX_NUMBER}, like \"1 1 4 6\"; got {raw!r}"
            )
        return Instance(id="game24-" + "-".join(map(str, numbers)), data={"numbers": numbers, "rank": None})

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        instances = self._generated() if source is None else self._from_csv(Path(source))
        end = None if n is None else offset + n
        return instances[offset:end]

    @staticmethod
    def _generated() -> list[Instance]:
        # Fresh instances each call (a caller may change its own), from rows worked out once.
        return [
            Instance(
                id=f"game24-g{i + 1}",
                data={"numbers": list(p), "rank": None, "core_operations": operations, "solutions": solutions},
                reference=reference,
            )
            for i, (p, operations, solutions, reference) in enumerate(_generated_rows())
        ]

    @staticmethod
    def _from_csv(path: Path) -> list[Instance]:
        hint = "expected the 4nums.com export with columns Rank and Puzzles"
        line = 0
        rows: list[tuple[int, list[int]]] = []
        try:
            with path.open(newline="", encoding="utf-8-sig") as fh:
                reader = csv.DictReader(fh)
                header = reader.fieldnames or []
                line = 1
                missing = [col for col in ("Rank", "Puzzles") if col not in header]
                if missing:
                    raise DataFileError(f"{path}, line 1: missing column {', '.join(missing)}; {hint}")
                for row in reader:
                    line = reader.line_num
                    rank = _parse_rank(path, line, row.get("Rank"))
                    rows.append((rank, _parse_puzzle(path, line, row.get("Puzzles"))))
        except FileNotFoundError:
            raise DataFileError(f"{path}: file not found; check the path, or omit it to use generated puzzles") from None
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise DataFileError(f"{path}, line {line}: cannot read the file ({reason}); {hint}") from None
        rows.sort(key=lambda r: r[0])
        return [
            Instance(id=f"game24-r{rank}", data={"numbers": nums, "rank": rank}, reference=solve(nums))
            for rank, nums in rows
        ]

    def prompt(self, instance: Instance) -> list[Message]:
        examples = "\n\n".join(f"Numbers: {_spaced(nums)}\nAnswer: {expr}" for nums, expr in PROMPT_EXAMPLES)
        user = (
            f"{_RULES}\n\nExamples:\n\n{examples}\n\n"
            f"Numbers: {_spaced(_numbers(instance))}\n"
            "Reply with a single line: Answer: <expression>"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def judge_task(self, instance: Instance) -> str:
        return (
            f"Game of 24 with the numbers {_spaced(_numbers(instance))}. A correct answer is one "
            "arithmetic expression that uses each of these four numbers exactly once and no other "
            "numbers, uses only +, -, *, / and parentheses, and evaluates exactly to 24 "
            "(fractions may appear along the way)."
        )

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The reply's expression; None for a reply `verify` rejects as offering more than
        one answer, so the answer a run records is the one its verdict judged."""
        expr = extract_expression(text)
        if expr is None or _wrong_rival(expr, text, _numbers(instance)) is None:
            return expr
        return None

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        if answer is None:
            return None
        return "".join(answer.split()) or None

    def verify(self, instance: Instance, text: str) -> Verdict:
        expr = extract_expression(text)
        if expr is None:
            return _malformed(
                "No arithmetic expression was found; end the reply with a line `Answer: <expression>`.", None
            )
        try:
            value, literals = evaluate_expression(expr)
        except MalformedExpression as exc:
            return _malformed(str(exc), expr)
        errors: list[VerdictError] = []
        puzzle = _numbers(instance)
        # Sorted lists of ints are equal exactly when the multisets are (and cost a tenth of two Counters).
        if sorted(literals) != sorted(puzzle):
            errors.append(VerdictError(kind="wrong_numbers", message=_numbers_message(literals, puzzle), where=expr))
        if value != TARGET:
            errors.append(
                VerdictError(
                    kind="wrong_value",
                    message=f"`{expr}` evaluates to {format_value(value)}, not 24.",
                    where=expr,
                )
            )
        rival = None if errors else _wrong_rival(expr, text, puzzle)
        if rival is not None:
            return _malformed(
                f"The reply gives more than one answer (`{expr}` and `{rival}`); give exactly one, "
                "on a line `Answer: <expression>`.",
                expr,
            )
        return Verdict(ok=not errors, errors=errors)

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        shown = shown_errors(verdict, level)
        reask = f"The numbers are {_spaced(_numbers(instance))}. {_REASK}"
        return rejection_feedback(shown, level, "That answer is not correct", reask)

    # ------------------------------------------------------------------ studies

    # The paper's judge also states what the expression evaluates to, so evaluation and
    # verification can be compared (its Table A3).
    judge_fields = {"evaluation": "the number the expression evaluates to"}

    def candidates(self, instance: Instance, rng: Any) -> list[Candidate]:
        """correct; ablated by one operator and by one number (Table A3's two kinds); random."""
        out: list[Candidate] = []
        numbers = _numbers(instance)
        reference = instance.reference or solve(numbers)
        if reference:
            out.append(self._candidate("correct", reference, instance))
            tokens = re.findall(r"\d+|[-+*/()]|\s+", reference)
            # Binary operators only (one follows a number or a closing bracket): a unary
            # minus is left alone.
            ops = [i for i, t in enumerate(tokens) if t in ("+", "-", "*", "/") and _follows_operand(tokens, i)]
            rng.shuffle(ops)
            for i in ops:
                for new in rng.sample("+-*/", 4):
                    if new == tokens[i]:
                        continue
                    changed = "".join(tokens[:i] + [new] + tokens[i + 1 :])
                    cand = self._candidate("ablated", changed, instance, note=f"operator {tokens[i]} -> {new}")
                    if not cand.correct:
                        out.append(cand)
                        break
                else:
                    continue
                break
            lits = [i for i, t in enumerate(tokens) if t.isdigit()]
            i = rng.choice(lits)
            new_number = rng.choice([n for n in range(MIN_NUMBER, MAX_NUMBER + 1) if n != int(tokens[i])])
            changed = "".join(tokens[:i] + [str(new_number)] + tokens[i + 1 :])
            out.append(self._candidate("ablated", changed, instance, note=f"number {tokens[i]} -> {new_number}"))
        out.append(self._candidate("random", _random_expression(numbers, rng), instance))
        return out

    def _candidate(self, kind: str, expression: str, instance: Instance, note: str = "") -> Candidate:
        text = f"Answer: {expression}"
        return Candidate(kind=kind, text=text, correct=self.score(instance, text), note=note)

    def critique_report(self, instance: Instance, answer_text: str, critique: str) -> dict[str, float]:
        """Whether the judge's stated evaluation of the expression is right (Table A3)."""
        expression = self.extract_answer(instance, answer_text)
        try:
            true_value = evaluate_expression(expression)[0] if expression else None
        except MalformedExpression:
            true_value = None
        claimed = _claimed_value(critique)
        return {
            "states_value": float(claimed is not None),
            "evaluation_correct": float(claimed is not None and true_value is not None and claimed == true_value),
        }


_EVALUATION_RE = re.compile(r'"evaluation"\s*:\s*"?\s*(-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?)')
_PROSE_VALUE_RE = re.compile(
    r"(?:evaluates? to|equals|is equal to|results? in|gives)\s*(-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?)", re.IGNORECASE
)


def _claimed_value(text: str) -> Fraction | None:
    """The value a judge says the expression has: its JSON "evaluation", else prose."""
    found = _EVALUATION_RE.findall(text) or _PROSE_VALUE_RE.findall(text)
    if not found:
        return None
    try:
        return Fraction(found[-1].replace(" ", ""))
    except (ValueError, ZeroDivisionError):
        return None


@cache
def _generated_rows() -> tuple[tuple[tuple[int, ...], int, int, str | None], ...]:
    """Every solvable puzzle, easiest first, with its ease scores and a witness: the same
    for every load (a run, an import, a rescore each load them), so solved once a process."""
    ordered = sorted(all_solvable_puzzles(), key=lambda p: (core_operations(p), -p.count(1), -solution_count(p), p))
    return tuple((tuple(p), core_operations(p), solution_count(p), solve(p)) for p in ordered)


def _follows_operand(tokens: list[str], i: int) -> bool:
    before = [t for t in tokens[:i] if t.strip()]
    return bool(before) and (before[-1].isdigit() or before[-1] == ")")


def _random_expression(numbers: Sequence[int], rng: Any) -> str:
    """The puzzle's numbers in a random order, random operators, random bracketing."""
    parts = [str(n) for n in rng.sample(list(numbers), len(numbers))]
    while len(parts) > 1:
        i = rng.randrange(len(parts) - 1)
        parts[i : i + 2] = [f"({parts[i]} {rng.choice('+-*/')} {parts[i + 1]})"]
    expr = parts[0]
    return expr[1:-1] if expr.startswith("(") and expr.endswith(")") else expr


def _wrong_rival(expr: str, text: str, puzzle: list[int]) -> str | None:
    """The first other answer the reply gives that is not itself right, when `expr` (the
    one read) is right; else None. Only a reply that would pass is searched for a second
    answer: a rejected reply keeps its verdict and its errors, as the recorded tables
    count them."""
    if not _right(expr, puzzle):
        return None
    return next((rival for rival in rival_expressions(text) if not _right(rival, puzzle)), None)


def _right(expression: str, puzzle: list[int]) -> bool:
    """Whether `expression` is itself a right answer to the puzzle (a hedge between two right answers is one)."""
    try:
        value, literals = evaluate_expression(expression)
    except MalformedExpression:
        return False
    return value == TARGET and sorted(literals) == sorted(puzzle)


def _malformed(message: str, expr: str | None) -> Verdict:
    return Verdict(ok=False, malformed=True, errors=[VerdictError(kind="malformed", message=message, where=expr)])


def _numbers_message(used: list[int], puzzle: list[int]) -> str:
    used_c, puzzle_c = Counter(used), Counter(puzzle)
    missing = sorted((puzzle_c - used_c).elements())
    extra = sorted((used_c - puzzle_c).elements())
    parts = [f"The expression uses {_listed(used) or 'no numbers'}, but the puzzle's numbers are {_listed(puzzle)}"]
    if missing:
        parts.append(f"missing: {_listed(missing)}")
    if extra:
        parts.append(f"not available (or used too often): {_listed(extra)}")
    return "; ".join(parts) + ". Use each puzzle number exactly once."


def _parse_rank(path: Path, line: int, raw: Any) -> int:
    try:
        return int(str(raw).strip())
    except ValueError:
        raise DataFileError(
            f"{path}, line {line}: rank {raw!r} is not a whole number; fix or delete that row"
        ) from None


def _parse_puzzle(path: Path, line: int, raw: Any) -> list[int]:
    parts = str(raw or "").split()
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        nums = []
    if len(nums) != 4 or not all(MIN_NUMBER <= x <= MAX_NUMBER for x in nums):
        raise DataFileError(
            f"{path}, line {line}: puzzle {raw!r} is not four whole numbers from "
            f"{MIN_NUMBER} to {MAX_NUMBER}; fix or delete that row"
        )
    return nums
