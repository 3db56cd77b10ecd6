"""Finding the expression in a model reply: the `Answer:` line when there is one, LaTeX
and Unicode operators read as + - * /, markdown and a closing full stop dropped, and of
the arithmetic runs left the longest (a side that is just "24" is not the answer).

The expression is a pure function of the reply: a short reply's is kept once found (a
recorded run reads each reply several times: to extract, verify and score it).
"""

from __future__ import annotations

import re
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
