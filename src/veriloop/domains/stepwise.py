"""Step-by-step ("chain of thought") math: GSM8K, MATH-500 and MathQA.

The model writes its solution as numbered lines "Step 1: ...", "Step 2: ...", one
calculation or deduction each, and ends with a line "Answer: ...". The numbered lines
let SelfCheck split a solution into steps and check them one at a time; the answer
line is what ground truth compares with the dataset's reference (numerically for
GSM8K, with mathcheck.equivalent for MATH-500, by option letter for MathQA).

When SelfCheck finds steps its checks contradict (errors of kind "contradicted_step",
`where` = "step K"), the backprompt keeps the steps before the first of them and asks
for the solution again from there.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from .. import mathcheck
from ..datafiles import json_list_or_lines
from ..errors import DataFileError, VeriloopError
from ..selfcheck.text import ANSWER_LINE
from .base import (
    Instance,
    MatchesReference,
    Message,
    ReadsDataFile,
    Verdict,
    VerdictError,
    introduces_a_correction,
    rejection_feedback,
    shown_errors,
)
from .math import GSM8K_FORMAT, MATH500_FORMAT, read_gsm8k, read_math500

_SYSTEM = "You solve math problems step by step, one short step per line, and finish with the final answer."

MATHQA_FORMAT = (
    'a JSON list (or JSONL) of objects with "Problem", "options" (like "a ) 38 , b ) 27.675 , ..." or a '
    'list of such strings) and "correct" (the letter of the right option), as in MathQA'
)

_BOXED_RE = re.compile(r"\\boxed\s*\{")
_STEP_WHERE_RE = re.compile(r"(\d+)")
_LETTERS = "abcde"


# --------------------------------------------------------------------------- answers


def boxed_contents(text: str) -> list[str]:
    """The contents of every complete \\boxed{...} in `text`, in order (braces balanced;
    a box that never closes is skipped)."""
    found = []
    for match in _BOXED_RE.finditer(text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append(text[start:i])
                break
    return found


def _strip_wrappers(answer: str) -> str:
    """`answer` without surrounding markdown bold, math delimiters and a final full stop."""
    s = answer
    for _ in range(4):
        before = s
        s = s.strip().strip("*").strip()
        for left, right in (("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
            if len(s) > len(left) + len(right) - 1 and s.startswith(left) and s.endswith(right):
                s = s[len(left) : len(s) - len(right)].strip()
        s = s.removesuffix(".")
        if s == before:
            break
    return s.strip()


def clean_answer(answer: str) -> str | None:
    """The answer a final line states: a \\boxed{...} in it is taken as the answer,
    then markdown, $...$ and a trailing full stop go, and a typographic minus sign is
    written "-" (read as no sign at all, "−12" would pass for 12). None when nothing is left."""
    boxes = boxed_contents(answer)
    s = _strip_wrappers(boxes[-1] if boxes else answer).replace("\u2212", "-")
    return s or None


def stated_answer(text: str) -> str | None:
    """The text of the last "Answer:" / "Final answer:" line, cleaned; when the reply has
    no such line, the last \\boxed{...}; otherwise None (no guessing from numbers)."""
    last = None
    for line in text.splitlines():
        match = ANSWER_LINE.match(line)
        if match:
            last = match.group(1)
    if last is not None:
        return clean_answer(last)
    boxes = boxed_contents(text)
    return clean_answer(boxes[-1]) if boxes else None


# --------------------------------------------------------------------------- domains


class _StepByStep(ReadsDataFile, MatchesReference):
    """What the three datasets share; subclasses say how files look, what the answer
    line holds and how answers are compared."""

    name: str
    description: str
    answer_tokens: int = 400
    file_format: str  # shown when the file is missing or malformed
    answer_rule: str  # what <final answer> must be, for prompts and feedback

    # ------------------------------------------------------------------ data

    def parse_instance(self, raw: Any) -> Instance:
        """{"question": "..."} (or "problem", or the text itself), with an optional
        "reference" answer to score against."""
        if isinstance(raw, dict) and "instance" in raw:
            raw = raw["instance"] if isinstance(raw["instance"], (str, dict)) else raw
        item = raw if isinstance(raw, dict) else {"question": raw}
        question = item.get("question") or item.get("problem") or item.get("Problem")
        if not isinstance(question, str) or not question.strip():
            raise VeriloopError(f"a {self.name} instance is {self._instance_example()}; got {raw!r}")
        data = {"question": question.strip(), **self._parsed_extra(item, raw)}
        reference = self._parsed_reference(item, data)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
        return Instance(id=f"{self.name}-{digest}", data=data, reference=reference)

    def _instance_example(self) -> str:
        return 'a problem text, like {"question": "Tom has 3 apples..."}'

    def _parsed_extra(self, item: dict[str, Any], raw: Any) -> dict[str, Any]:
        return {}

    def _parsed_reference(self, item: dict[str, Any], data: dict[str, Any]) -> str | None:
        reference = item.get("reference")
        return None if reference is None else str(reference)

    # ------------------------------------------------------------------ prompts

    def format_rule(self) -> str:
        """The reply format in one sentence, for prompts, errors and backprompts."""
        return (
            'write each step on its own line starting with "Step 1:", "Step 2:", and so on, then finish '
            f'with a line "Answer: <final answer>" where <final answer> is {self.answer_rule}'
        )

    def question_text(self, instance: Instance) -> str:
        """The whole question a checker should see (MathQA adds its options)."""
        return instance.data["question"]

    def _problem_block(self, instance: Instance) -> str:
        return f"Problem: {instance.data['question']}"

    def prompt(self, instance: Instance) -> list[Message]:
        user = (
            "Solve the problem below step by step. Write each step on its own line, starting with "
            '"Step 1:", "Step 2:", and so on, and do one calculation or deduction per step. After the '
            f'last step, write a final line "Answer: <final answer>", where <final answer> is {self.answer_rule}.'
            f"\n\n{self._problem_block(instance)}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def judge_task(self, instance: Instance) -> str:
        return (
            f"Math problem: {self.question_text(instance)}\n"
            "A correct reply works the problem out in numbered steps and ends with a line "
            f'"Answer: ..." stating the correct final answer as {self.answer_rule}.'
        )

    # ------------------------------------------------------------------ answers

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        raise NotImplementedError

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The reply's one final answer: None when it states none, or several (`_hedge`),
        so that the answer read and the verdict always agree."""
        answer = self._stated(instance, text)
        return None if answer is None or self._hedge(instance, text, answer) is not None else answer

    def _stated(self, instance: Instance, text: str) -> str | None:
        """The answer the reply's final answer line states, as this domain reads it."""
        return stated_answer(text)

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return mathcheck.canonical_answer(answer)

    def verify(self, instance: Instance, text: str) -> Verdict:
        """Ground truth on a reply: it must state an answer, and that answer must match
        the reference. Without a reference, stating an answer is enough."""
        answer = self._stated(instance, text)
        if answer is None:
            error = VerdictError(kind="malformed", message=self._missing_answer_message(text))
            return Verdict(ok=False, malformed=True, errors=[error])
        hedge = self._hedge(instance, text, answer)
        if hedge is not None:
            message = f"the reply {hedge}, so it gives no one final answer; {self.format_rule()}"
            return Verdict(ok=False, malformed=True, errors=[VerdictError(kind="malformed", message=message)])
        if instance.reference is None or self.matches(answer, instance.reference):
            return Verdict(ok=True)
        message = f"the final answer {answer} is not the expected result"
        return Verdict(ok=False, errors=[VerdictError(kind="wrong_answer", message=message, where=answer)])

    def _missing_answer_message(self, text: str) -> str:
        return f"the reply has no 'Answer:' line giving the final answer; {self.format_rule()}"

    def _hedge(self, instance: Instance, text: str, answer: str) -> str | None:
        """Why the reply states several answers ("Answer: 14" then "Answer: 12"), or None.
        A careful grader takes none of them, so neither may pass for the answer; a later
        answer line that a correction introduces ("no, that was wrong") replaces the
        earlier one."""
        lines = text.splitlines()
        stated = [(i, clean_answer(m.group(1))) for i, m in enumerate(map(ANSWER_LINE.match, lines)) if m]
        read = [(i, self.canonical(instance, self._read_stated(a))) for i, a in stated if a is not None]
        if read:
            last, final = read[-1]
            for i, key in read[:-1]:
                if key != final and not introduces_a_correction("\n".join(lines[i + 1 : last])):
                    return "has answer lines that disagree"
        answer_lines = [m.group(1) for m in map(ANSWER_LINE.match, lines) if m]
        if answer_lines and len({b.strip() for b in boxed_contents(answer_lines[-1])}) > 1:
            return "boxes several different answers on its answer line"
        return _two_numbers(answer)

    def _read_stated(self, stated: str) -> str | None:
        """One answer line's answer as `_stated` reads it."""
        return stated

    # ------------------------------------------------------------------ feedback

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        shown = shown_errors(verdict, level)
        if any(e.kind == "contradicted_step" for e in shown):
            return self._redo_from_step(shown)
        reask = f"Please solve the problem again: {self.format_rule()}."
        return rejection_feedback(shown, level, "That solution does not reach the correct answer", reask)

    def _redo_from_step(self, shown: list[VerdictError]) -> str:
        first = min(_step_number(e) for e in shown if e.kind == "contradicted_step")
        problems = "\n".join(f"- {_error_line(e)}" for e in shown)
        return f"Some steps of your solution do not hold up:\n{problems}\n{self._redo_request(first)}"

    def _redo_request(self, step: int) -> str:
        tail = (
            'each on its own line as "Step N: ...", and end with a line "Answer: <final answer>" where '
            f"<final answer> is {self.answer_rule}."
        )
        if step <= 1:
            return f"Redo the solution from the start: write the steps again from Step 1, {tail}"
        kept = "step 1" if step == 2 else f"steps 1 to {step - 1}"
        return (
            f"Keep {kept} exactly as you wrote them and redo the solution from step {step} on: "
            f"write Step {step} and the steps after it, {tail}"
        )


def _step_number(error: VerdictError) -> int:
    """K of a "step K" location; 1 when the location names no step."""
    match = _STEP_WHERE_RE.search(error.where or "")
    return int(match.group(1)) if match else 1


def _error_line(error: VerdictError) -> str:
    if error.kind == "contradicted_step" and error.where:
        return f"{error.where[:1].upper()}{error.where[1:]}: {error.message}"
    return error.message


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
# A quantity: a number, a currency sign before it or up to three unit words after it
# ("14", "$14", "14 miles", "14.5 square feet"); words that make it a calculation
# ("3 times 4", "20 of 60") are not units.
_QUANTITY = r"([$€£]?)\s*(-?\d[\d,]*(?:\.\d+)?)((?:\s+[A-Za-z]{2,}){0,3})"
_QUANTITY_EQUALS_QUANTITY = re.compile(rf"^\s*{_QUANTITY}\s*=\s*{_QUANTITY}\s*$")
_NOT_UNITS = frozenset({"times", "plus", "minus", "of", "by", "divided", "multiplied", "per", "over", "into",
                        "less", "more", "than", "and", "add", "added", "subtract", "subtracted"})


def _unit(sign: str, words: str) -> str:
    return " ".join([sign, *(w.lower().removesuffix("s") for w in words.split())]).strip()


def _two_numbers(answer: str) -> str | None:
    """Why `answer` states two quantities as one ("14 = 12", "14 miles = 12"), or None: a
    false equation appended to a wrong number is no claim that the answer is the second
    one. A calculation shown before its result ("7 + 5 = 12", "3 times 4 = 12") is none,
    nor is a conversion between two units ("2 hours = 120 minutes")."""
    match = _QUANTITY_EQUALS_QUANTITY.match(answer)
    if match is None or _NOT_UNITS & set(re.findall(r"[a-z]+", answer.lower())):
        return None
    left_sign, left_number, left_words, right_sign, right_number, right_words = match.groups()
    left_unit, right_unit = _unit(left_sign, left_words), _unit(right_sign, right_words)
    if left_unit and right_unit and left_unit != right_unit:
        return None
    if mathcheck.numbers_match(left_number.replace(",", ""), right_number.replace(",", "")):
        return None
    left, right = (side.strip() for side in answer.split("=", 1))
    return f"states {left} = {right}, two different numbers"


class GSM8KSteps(_StepByStep):
    name = "gsm8k-cot"
    description = "Grade-school math word problems (GSM8K), solved in numbered steps ending in an answer line."
    answer_tokens = 400
    file_format = GSM8K_FORMAT
    answer_rule = "a number only, with no units"

    def _read(self, path: Path) -> list[Instance]:
        return read_gsm8k(path)

    def _stated(self, instance: Instance, text: str) -> str | None:
        """The stated answer; when it is plain text but not a bare number ("18
        dollars", "x = 18"), the last number in it, as GSM8K answers are one number."""
        stated = stated_answer(text)
        return None if stated is None else self._read_stated(stated)

    def _read_stated(self, stated: str) -> str | None:
        if "\\" in stated or mathcheck.parse_number(stated) is not None:
            return stated
        numbers = _NUMBER.findall(stated)
        return numbers[-1].replace(",", "") if numbers else stated

    def _hedge(self, instance: Instance, text: str, answer: str) -> str | None:
        """Besides `_StepByStep._hedge`: an answer line naming several different numbers
        ("12 or 14", "between 10 and 12") names no one answer; "7 + 5 = 12" shows its sum."""
        found = super()._hedge(instance, text, answer)
        stated = stated_answer(text)
        if found is not None or stated is None or "\\" in stated or mathcheck.parse_number(stated) is not None:
            return found
        if _two_numbers(stated) is not None:
            return _two_numbers(stated)
        if "=" in stated:
            stated = stated.rsplit("=", 1)[1]
        values = {mathcheck.canonical_answer(n.replace(",", "")) for n in _NUMBER.findall(stated)}
        return "names several numbers in its answer line" if len(values) > 1 else None

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return mathcheck.numbers_match(predicted, reference)


class Math500Steps(_StepByStep):
    name = "math500-cot"
    description = "Competition mathematics (MATH-500), solved in numbered steps ending in an answer line."
    answer_tokens = 600
    file_format = MATH500_FORMAT
    answer_rule = "the answer in LaTeX without dollar signs, e.g. \\frac{3}{4}"

    def _read(self, path: Path) -> list[Instance]:
        return read_math500(path)

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return mathcheck.equivalent(predicted, reference)


# --------------------------------------------------------------------------- MathQA

# "a )", "(b)", "C)" at the start of an answer: the letter of an option.
_LETTER_RES = (
    re.compile(r"^(?:option|choice)\s*\(?\s*([a-e])\b(?:\s*\))?.*$", re.IGNORECASE | re.DOTALL),
    re.compile(r"^\(\s*([a-e])\s*\).*$", re.IGNORECASE | re.DOTALL),
    re.compile(r"^([a-e])\s*\).*$", re.IGNORECASE | re.DOTALL),
    re.compile(r"^([a-e])\s*[.:]?$", re.IGNORECASE),
)
_RUPEES_RE = re.compile(r"^\s*rs\s*\.?\s*", re.IGNORECASE)
_TEXT_RE = re.compile(r"\\text(?:bf)?\{([^{}]*)\}")
_OPTION_ITEM_RE = re.compile(r"^\s*\(?\s*([a-e])\s*\)\s*(.*?)\s*,?\s*$", re.IGNORECASE | re.DOTALL)


def _marker(letter: str, first: bool) -> re.Pattern[str]:
    lead = r"^\s*" if first else r",\s*"
    return re.compile(lead + r"\(?\s*" + letter + r"\s*\)", re.IGNORECASE)


def _options_from_string(text: str) -> dict[str, str] | None:
    """"a ) 38 , b ) 27.675 , ..." as {"a": "38", "b": "27.675", ...}, split on the
    letter markers in order (values may hold commas, like "rs . 1 , 200")."""
    spans: list[tuple[str, int, int]] = []
    position = 0
    for letter in _LETTERS:
        match = _marker(letter, not spans).search(text, position)
        if match is None:
            break
        spans.append((letter, match.start(), match.end()))
        position = match.end()
    if len(spans) < 2:
        return None
    ends = [start for _, start, _ in spans[1:]] + [len(text)]
    options = {letter: text[end:stop].strip().rstrip(",").strip() for (letter, _, end), stop in zip(spans, ends)}
    return options if all(options.values()) else None


def _options_from_list(items: list[Any]) -> dict[str, str] | None:
    """["a ) 38", "b ) 27.675", ...] as {"a": "38", ...}; letters must run a, b, c..."""
    options: dict[str, str] = {}
    for expected, item in zip(_LETTERS, items):
        match = _OPTION_ITEM_RE.match(item) if isinstance(item, str) else None
        if match is None or match.group(1).lower() != expected or not match.group(2):
            return None
        options[expected] = match.group(2)
    return options if 2 <= len(options) == len(items) else None


def parse_options(raw: Any) -> dict[str, str] | None:
    """MathQA options (a string, a list of strings, or a letter -> value dict) as an
    ordered dict letter -> value, or None when they cannot be read."""
    if isinstance(raw, str):
        return _options_from_string(raw)
    if isinstance(raw, list):
        return _options_from_list(raw)
    if isinstance(raw, dict):
        options = {str(k).strip().lower(): str(v).strip() for k, v in raw.items()}
        letters = "".join(options)
        single = all(len(k) == 1 for k in options)
        return options if single and len(options) >= 2 and _LETTERS.startswith(letters) and all(options.values()) else None
    return None


def _mathqa_instance(path: Path, where: str, number: int, item: dict[str, Any], hint: str) -> Instance:
    problem = item.get("Problem")
    if not isinstance(problem, str) or not problem.strip():
        raise DataFileError(f"{path}, {where}: missing or empty field 'Problem'; {hint}")
    options = parse_options(item.get("options"))
    if options is None:
        raise DataFileError(f"{path}, {where}: cannot read the options {item.get('options')!r}; {hint}")
    correct = item.get("correct")
    letter = correct.strip().lower() if isinstance(correct, str) else None
    if letter not in options:
        raise DataFileError(
            f"{path}, {where}: field 'correct' must be one of the option letters {', '.join(options)}, "
            f"got {correct!r}; {hint}"
        )
    data: dict[str, Any] = {"question": problem.strip(), "options": options}
    if "category" in item:
        data["category"] = item["category"]
    return Instance(id=f"mathqa-{number}", data=data, reference=letter)


def read_mathqa(path: Path) -> list[Instance]:
    """A MathQA file (JSON list or JSONL): id mathqa-<item number>, counted from 1 in
    the order of the file, the reference being the correct option's letter."""
    hint = "expected " + MATHQA_FORMAT
    rows = json_list_or_lines(path, hint)
    return [_mathqa_instance(path, where, i, item, hint) for i, (where, item) in enumerate(rows, start=1)]


def _same_value(answer: str, option: str) -> bool:
    """Whether an answer states an option's value: the same text, or the same number
    (MathQA writes rupees as "rs . 1 , 200", which counts as 1200)."""
    if answer.casefold() == option.casefold():
        return True
    return mathcheck.numbers_match(_RUPEES_RE.sub("", answer), _RUPEES_RE.sub("", option))


def _options_line(options: dict[str, str]) -> str:
    return ", ".join(f"{letter}) {value}" for letter, value in options.items())


class MathQA(_StepByStep):
    name = "mathqa"
    description = "Multiple-choice math word problems (MathQA), solved in numbered steps ending in the option letter."
    answer_tokens = 400
    file_format = MATHQA_FORMAT
    answer_rule = "the letter of the correct option only (a, b, c, d or e)"

    def _read(self, path: Path) -> list[Instance]:
        return read_mathqa(path)

    def _instance_example(self) -> str:
        return 'a problem with options, like {"Problem": "...", "options": "a ) 38 , b ) 27 , ...", "correct": "a"}'

    def _parsed_extra(self, item: dict[str, Any], raw: Any) -> dict[str, Any]:
        options = parse_options(item.get("options"))
        if options is None:
            raise VeriloopError(f"a {self.name} instance needs readable options: {self._instance_example()}; got {raw!r}")
        return {"options": options}

    def _parsed_reference(self, item: dict[str, Any], data: dict[str, Any]) -> str | None:
        reference = item.get("reference", item.get("correct"))
        if reference is None:
            return None
        letter = str(reference).strip().lower()
        if letter not in data["options"]:
            raise VeriloopError(f"the {self.name} reference must be one of the option letters {', '.join(data['options'])}; got {reference!r}")
        return letter

    def question_text(self, instance: Instance) -> str:
        return f"{instance.data['question']}\nOptions: {_options_line(instance.data['options'])}"

    def _problem_block(self, instance: Instance) -> str:
        lines = "\n".join(f"{letter}) {value}" for letter, value in instance.data["options"].items())
        return f"Problem: {instance.data['question']}\nOptions:\n{lines}"

    def option_letter(self, instance: Instance, answer: str | None) -> str | None:
        """The option an answer names: by its letter ("c", "(c) 30", "option c"), or by
        a value equal to exactly one option's; None otherwise."""
        if answer is None:
            return None
        options: dict[str, str] = instance.data.get("options", {})
        answer = _TEXT_RE.sub(r"\1", answer).strip()
        for pattern in _LETTER_RES:
            match = pattern.match(answer)
            if match:
                letter = match.group(1).lower()
                return letter if not options or letter in options else None
        same = [k for k, v in options.items() if _same_value(answer, v)]
        return same[0] if len(same) == 1 else None

    def _stated(self, instance: Instance, text: str) -> str | None:
        return self.option_letter(instance, stated_answer(text))

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return self.option_letter(instance, answer)

    def matches(self, predicted: str | None, reference: str | None) -> bool:
        return predicted is not None and reference is not None and predicted.strip().lower() == str(reference).strip().lower()

    def _missing_answer_message(self, text: str) -> str:
        stated = stated_answer(text)
        if stated is None:
            return super()._missing_answer_message(text)
        return f"the answer {stated} is not one of the options; {self.format_rule()}"
