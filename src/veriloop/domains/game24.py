"""Game of 24: an exact solver, puzzle loading, answer extraction and a sound checker.

The checker never hands model output to Python's evaluator: it parses with `ast`,
accepts a small whitelist of node types and evaluates with exact fractions, so an
answer can only ever be judged, never run.
"""

from __future__ import annotations

import ast
import csv
import re
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache, lru_cache
from itertools import combinations, combinations_with_replacement
from pathlib import Path
from typing import Any

from ..errors import DataFileError, VeriloopError
from .base import Candidate, Instance, Message, SoundlyScored, Verdict, VerdictError, rejection_feedback, shown_errors

TARGET = Fraction(24)
MIN_NUMBER = 1
MAX_NUMBER = 13
MAX_EXPRESSION_CHARS = 200
MAX_PAREN_DEPTH = 50

# Precedence of a rendered sub-expression, so the solver can print the fewest brackets
# that keep the value unchanged.
_SUM, _PRODUCT, _ATOM = 1, 2, 3

Reach = dict[Fraction, tuple[str, int]]


# --------------------------------------------------------------------------- solver


def _literal(n: int) -> tuple[str, int]:
    return (str(n), _ATOM) if n >= 0 else (f"({n})", _ATOM)


def _combine(left: tuple[str, int], op: str, right: tuple[str, int]) -> tuple[str, int]:
    lexpr, lp = left
    rexpr, rp = right
    if op in "*/" and lp == _SUM:
        lexpr = f"({lexpr})"
    # Only the right operand of - and / (and * of a sum) needs brackets: + and * are
    # associative and the exact arithmetic makes a*(b/c) and a*b/c the same number.
    if (op in "-*" and rp == _SUM) or (op == "/" and rp != _ATOM):
        rexpr = f"({rexpr})"
    return f"{lexpr} {op} {rexpr}", (_SUM if op in "+-" else _PRODUCT)


@cache
def _splits(nums: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Each way to cut a sorted multiset in two, listed once, smaller group first."""
    n = len(nums)
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for size in range(1, n // 2 + 1):
        for idx in combinations(range(n), size):
            chosen = set(idx)
            a = tuple(nums[i] for i in idx)
            b = tuple(nums[i] for i in range(n) if i not in chosen)
            # With equal halves the complement shows up as its own combination.
            if 2 * size == n and b < a:
                continue
            if (a, b) not in seen:
                seen.add((a, b))
                out.append((a, b))
    return tuple(out)


@cache
def _reachable(nums: tuple[int, ...]) -> Reach:
    """Every value an expression over exactly this multiset can take, with one witness."""
    if len(nums) == 1:
        return {Fraction(nums[0]): _literal(nums[0])}
    out: Reach = {}
    for a, b in _splits(nums):
        ra, rb = _reachable(a), _reachable(b)
        for va, ea in ra.items():
            for vb, eb in rb.items():
                out.setdefault(va + vb, _combine(ea, "+", eb))
                out.setdefault(va - vb, _combine(ea, "-", eb))
                out.setdefault(vb - va, _combine(eb, "-", ea))
                out.setdefault(va * vb, _combine(ea, "*", eb))
                if vb:
                    out.setdefault(va / vb, _combine(ea, "/", eb))
                if va:
                    out.setdefault(vb / va, _combine(eb, "/", ea))
    return out


def _root_hits(nums: tuple[int, ...]) -> list[tuple[str, int]]:
    """Root combinations reaching 24, found by looking up the value the other side needs.

    Enumerating whole value sets at the root is the expensive step, so only the smaller
    group is walked; the larger group's memoised table answers "can you make b?".
    """
    hits: list[tuple[str, int]] = []
    for a_nums, b_nums in _splits(nums):
        ra, rb = _reachable(a_nums), _reachable(b_nums)
        for va, ea in ra.items():
            # (needed b, renders as "a op b" when True or "b op a" when False, operator)
            wants: list[tuple[Fraction, bool, str]] = [
                (TARGET - va, True, "+"),
                (va - TARGET, True, "-"),
                (TARGET + va, False, "-"),
            ]
            if va:
                wants += [(TARGET / va, True, "*"), (va / TARGET, True, "/"), (TARGET * va, False, "/")]
            for need, a_first, op in wants:
                eb = rb.get(need)
                if eb is not None:
                    hits.append(_combine(ea, op, eb) if a_first else _combine(eb, op, ea))
    return hits


@cache
def _solve_sorted(nums: tuple[int, ...]) -> str | None:
    if not nums:
        return None
    if len(nums) == 1:
        return str(nums[0]) if nums[0] == 24 else None
    hits = _root_hits(nums)
    return hits[0][0] if hits else None


def solve(numbers: Sequence[int]) -> str | None:
    """One expression using every number exactly once that equals 24, or None."""
    return _solve_sorted(tuple(sorted(int(n) for n in numbers)))


@cache
def _solution_count_sorted(nums: tuple[int, ...]) -> int:
    if len(nums) < 2:
        return int(len(nums) == 1 and nums[0] == 24)
    return len(_root_hits(nums))


def solution_count(numbers: Sequence[int]) -> int:
    """How many (split, left value, operator) roots reach 24: a cheap ease score."""
    return _solution_count_sorted(tuple(sorted(int(n) for n in numbers)))


def _neutral(rest: tuple[int, ...]) -> bool:
    """Whether these leftover numbers fold away for free: nothing, 1s (x * 1), or an
    equal pair (x / x = 1, x - x = 0), possibly with 1s."""
    if all(n == 1 for n in rest):
        return True
    counts = Counter(n for n in rest if n != 1)
    return len(counts) == 1 and next(iter(counts.values())) == 2


@cache
def _core_operations_sorted(nums: tuple[int, ...]) -> int:
    best = len(nums) - 1
    for size in range(1, len(nums)):
        for idx in combinations(range(len(nums)), size):
            core = tuple(nums[i] for i in idx)
            rest = tuple(nums[i] for i in range(len(nums)) if i not in idx)
            if _neutral(rest) and Fraction(TARGET) in _reachable(core):
                best = min(best, size - 1)
    return best


def core_operations(numbers: Sequence[int]) -> int:
    """How many real operations a solution needs once free leftovers (1s, an equal pair)
    are folded away: 1 for 1 1 4 6 (4 * 6), 3 for 4 9 10 13. The main ease proxy: human
    solve times on 4nums.com and small models' success both favour few real steps."""
    return _core_operations_sorted(tuple(sorted(int(n) for n in numbers)))


@lru_cache(maxsize=1)
def _all_solvable() -> tuple[tuple[int, int, int, int], ...]:
    puzzles = combinations_with_replacement(range(MIN_NUMBER, MAX_NUMBER + 1), 4)
    return tuple(p for p in puzzles if _solve_sorted(p) is not None)


def all_solvable_puzzles() -> list[tuple[int, int, int, int]]:
    """Every solvable multiset of four numbers from 1 to 13, as sorted tuples."""
    return list(_all_solvable())


# ----------------------------------------------------------------- safe evaluation


class MalformedExpression(ValueError):
    """The candidate cannot be read as a + - * / expression over whole numbers."""


_BINOPS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BAD_BINOPS: dict[type[ast.operator], str] = {
    ast.Pow: "**",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}
_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Call: "a function call",
    ast.Name: "a name",
    ast.Attribute: "attribute access",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.Subscript: "indexing",
    ast.Compare: "a comparison",
    ast.BoolOp: "and/or",
    ast.Tuple: "a tuple (stray comma?)",
    ast.List: "a list",
}


def _paren_depth(expr: str) -> int:
    depth = deepest = 0
    for ch in expr:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.BinOp) and type(node.op) in _BAD_BINOPS:
        return f"uses `{_BAD_BINOPS[type(node.op)]}`, only + - * / are allowed"
    if isinstance(node, ast.UnaryOp):
        return "uses a unary operator other than minus"
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, float):
            return f"uses the decimal number {value!r}; only whole numbers are allowed"
        return f"uses the constant {value!r}; only whole numbers are allowed"
    name = _NODE_NAMES.get(type(node), type(node).__name__)
    return f"uses {name}, which is not allowed; only whole numbers, + - * / and brackets are"


def _eval(node: ast.AST, literals: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        literals.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _eval(node.operand, literals)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval(node.left, literals)
        right = _eval(node.right, literals)
        op = _BINOPS[type(node.op)]
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if right == 0:
            raise ZeroDivisionError
        return left / right
    raise MalformedExpression(f"The expression {_describe(node)}.")


def evaluate_expression(expr: str) -> tuple[Fraction, list[int]]:
    """The exact value of `expr` and its integer literals, or MalformedExpression.

    Size and nesting are capped before parsing so that neither the parser nor the
    recursive walk can be made to hang or overflow the stack.
    """
    if len(expr) > MAX_EXPRESSION_CHARS:
        raise MalformedExpression(
            f"The expression is {len(expr)} characters long; a Game of 24 answer needs far "
            f"fewer than {MAX_EXPRESSION_CHARS}."
        )
    if _paren_depth(expr) > MAX_PAREN_DEPTH:
        raise MalformedExpression(f"The expression nests brackets more than {MAX_PAREN_DEPTH} deep.")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise MalformedExpression(f"`{expr.strip()}` is not a well-formed arithmetic expression.") from None
    literals: list[int] = []
    try:
        value = _eval(tree.body, literals)
    except ZeroDivisionError:
        raise MalformedExpression(f"`{expr.strip()}` divides by zero.") from None
    except (RecursionError, MemoryError):
        raise MalformedExpression(f"`{expr.strip()}` is too deeply nested to check.") from None
    return value, literals


def format_value(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


# ------------------------------------------------------------------ extraction

_ANSWER_RE = re.compile(r"answer\s*:", re.IGNORECASE)
_RUN_RE = re.compile(r"[0-9 +\-*/().]+")
_TIMES_X_RE = re.compile(r"(?<=[0-9)])[ \t]*[xX][ \t]*(?=[0-9(])")
_DIGIT_RE = re.compile(r"[0-9]")
_OP_RE = re.compile(r"[+\-*/]")
_LATEX = {
    "\\times": "*",
    "\\cdot": "*",
    "\\div": "/",
    "\\left": "",
    "\\right": "",
    "\\(": " ",
    "\\)": " ",
    "\\[": " ",
    "\\]": " ",
    "$": " ",
}
_UNICODE = str.maketrans(
    {
        "×": "*",
        "✕": "*",
        "·": "*",
        "⋅": "*",
        "∗": "*",
        "÷": "/",
        "∕": "/",
        "−": "-",
        "–": "-",
        "—": "-",
    }
)


def _normalise(segment: str) -> str:
    for latex, plain in _LATEX.items():
        segment = segment.replace(latex, plain)
    segment = segment.translate(_UNICODE)
    return _TIMES_X_RE.sub("*", segment)


def _tidy(candidate: str) -> str:
    candidate = candidate.strip()
    # An expression can never start with *, so a leading run of them is markdown bold or
    # a list bullet; a trailing "**" is bold and a trailing "." ends the sentence. A
    # leading "." or a single trailing operator is kept: dropping it would change what
    # the model wrote into something that might pass.
    candidate = candidate.lstrip("* ")
    while candidate.endswith("**") or candidate.endswith("."):
        candidate = candidate.rstrip(".").rstrip()
        if candidate.endswith("**"):
            candidate = candidate.rstrip("*").rstrip()
    return candidate


def _extract(text: str) -> str | None:
    last: re.Match[str] | None = None
    for last in _ANSWER_RE.finditer(text):  # noqa: B007 - the loop keeps the last match
        pass
    if last is not None:
        after = text[last.end() :]
        lines = [line for line in after.splitlines() if line.strip()]
        segment = lines[0] if lines else ""
    else:
        segment = text
    segment = _normalise(segment)
    sides = [side for side in segment.split("=") if side.strip() != "24"]
    best: str | None = None
    for side in sides:
        for run in _RUN_RE.finditer(side):
            candidate = _tidy(run.group())
            if not (_DIGIT_RE.search(candidate) and _OP_RE.search(candidate)):
                continue
            if best is None or len(candidate) > len(best):
                best = candidate
    return best


# ------------------------------------------------------------------ the domain


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
        ordered = sorted(all_solvable_puzzles(), key=lambda p: (core_operations(p), -p.count(1), -solution_count(p), p))
        return [
            Instance(
                id=f"game24-g{i + 1}",
                data={"numbers": list(p), "rank": None, "core_operations": core_operations(p), "solutions": solution_count(p)},
                reference=solve(p),
            )
            for i, p in enumerate(ordered)
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
        return _extract(text)

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        if answer is None:
            return None
        return "".join(answer.split()) or None

    def verify(self, instance: Instance, text: str) -> Verdict:
        expr = _extract(text)
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
        if Counter(literals) != Counter(puzzle):
            errors.append(VerdictError(kind="wrong_numbers", message=_numbers_message(literals, puzzle), where=expr))
        if value != TARGET:
            errors.append(
                VerdictError(
                    kind="wrong_value",
                    message=f"`{expr}` evaluates to {format_value(value)}, not 24.",
                    where=expr,
                )
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
