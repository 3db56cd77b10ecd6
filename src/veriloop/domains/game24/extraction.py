"""Finding the expression in a model reply: the `Answer:` line when there is one, LaTeX
and Unicode operators read as + - * /, digits of any script (full-width ６, Arabic-Indic ٦)
read as 0-9, markdown and a closing full stop dropped, and of the arithmetic runs left the
longest (a side that is just "24" is not the answer).

A reply can offer more than one answer ("X or Y", a second `Answer:` line, "X = Y = 24"):
`rival_expressions` lists the other answer-sized expressions (as many numbers as a puzzle
has) the reply gives where it answers: on any `Answer:` line, beside the read expression
and after it. Lines before the read expression are working or a withdrawn try ("X is not
allowed. Let's try another one.\n\nY"): the authors' recorded GPT-4 replies are read so,
and the reproduction of their figures needs it. The verifier rejects a reply whose rival
is not itself a right answer.

The expression is a pure function of the reply: a short reply's is kept once found (a
recorded run reads each reply several times: to extract, verify and score it).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

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
        # Full-width operators, so that a hedge written in them is seen (and a plain
        # answer in them read): a reader blind to them would hide a second candidate.
        "＋": "+",
        "－": "-",
        "＊": "*",
        "／": "/",
        "（": "(",
        "）": ")",
        "＝": "=",
    }
)
# A Game of 24 answer uses four numbers: a shorter expression beside it is working (6 * 4 = 24).
ANSWER_NUMBERS = 4
_NUMBER_RE = re.compile(r"[0-9]+")


def _ascii_digits(segment: str) -> str:
    # Only decimal digits (category Nd) are mapped: a superscript ² is not a digit, and
    # reading it as 2 would turn 5² into 52.
    if segment.isascii():
        return segment
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch for ch in segment)


def _normalise(segment: str) -> str:
    for latex, plain in _LATEX.items():
        segment = segment.replace(latex, plain)
    segment = _ascii_digits(segment.translate(_UNICODE))
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


# Replies longer than this are read afresh each time, so the cache stays small whatever
# a model (or a hostile file) sends: at most 16 MiB of short replies and 16 MiB of long.
_KEPT_REPLY_CHARS = 4096
# Short replies (nine in ten of the authors' 10,392 distinct Game of 24 replies) are kept
# by the thousand: an import, each table and each rescoring of a recorded release read
# the same replies again, and a cache smaller than the release keeps none of them.
_SHORT_REPLY_CHARS = 1024


def extract_expression(text: str) -> str | None:
    """The expression a reply gives: the longest arithmetic run on its last `Answer:`
    line (or anywhere, without one), read through LaTeX and Unicode operators."""
    if len(text) <= _SHORT_REPLY_CHARS:
        return _extracted_short(text)
    return _extracted(text) if len(text) <= _KEPT_REPLY_CHARS else _extract(text)


@lru_cache(maxsize=16384)
def _extracted_short(text: str) -> str | None:
    return _extract(text)


@lru_cache(maxsize=4096)
def _extracted(text: str) -> str | None:
    return _extract(text)


def _extract(text: str) -> str | None:
    last: re.Match[str] | None = None
    for last in _ANSWER_RE.finditer(text):  # noqa: B007 - the loop keeps the last match
        pass
    segment = text if last is None else _first_line(text[last.end() :])
    # "=" is not part of a run, so the sides of "X = Y = 24" are separate runs, and a
    # side that is just a number ("24") holds no operator and is never a candidate.
    best: str | None = None
    for candidate in _candidates(_normalise(segment)):
        if best is None or len(candidate) > len(best):
            best = candidate
    return best


def _candidates(segment: str) -> list[str]:
    """The arithmetic runs of a normalised segment that hold a digit and an operator."""
    found = []
    for run in _RUN_RE.finditer(segment):
        candidate = _tidy(run.group())
        if _DIGIT_RE.search(candidate) and _OP_RE.search(candidate):
            found.append(candidate)
    return found


def rival_expressions(text: str) -> tuple[str, ...]:
    """The answer-sized expressions other than the read one that the reply gives where it
    answers (each `Answer:` line, the read expression's line and every line after it),
    in order, each once; empty when the reply gives one answer."""
    if len(text) <= _SHORT_REPLY_CHARS:
        return _rivals_short(text)
    return _rivals(text)


@lru_cache(maxsize=16384)
def _rivals_short(text: str) -> tuple[str, ...]:
    return _rivals(text)


def _rivals(text: str) -> tuple[str, ...]:
    chosen = _extract(text)
    if chosen is None:
        return ()
    answers = list(_ANSWER_RE.finditer(text))
    if answers:
        # Each Answer line is a stated answer; after the last one, every line is read.
        regions = [_first_line(text[m.end() :]) for m in answers[:-1]]
        regions.append(text[answers[-1].end() :])
    else:
        lines = text.splitlines()
        start = next((i for i, line in enumerate(lines) if chosen in _candidates(_normalise(line))), 0)
        regions = lines[start:]
    key = "".join(chosen.split())
    rivals: list[str] = []
    for region in regions:
        for line in region.splitlines():
            for candidate in _candidates(_normalise(line)):
                if "".join(candidate.split()) != key and len(_NUMBER_RE.findall(candidate)) >= ANSWER_NUMBERS:
                    if candidate not in rivals:
                        rivals.append(candidate)
    return tuple(rivals)


def _first_line(after: str) -> str:
    lines = [line for line in after.splitlines() if line.strip()]
    return lines[0] if lines else ""
