"""Colourings in replies: every `vertex: colour` statement, read tolerantly (`3: Color2`,
`Vertex 3 -> color 2`, `3 = C2`, markdown around them), and the one rendering veriloop
writes (`V: ColorJ` lines). The patterns are shared with the critique reader."""

from __future__ import annotations

import re
from functools import lru_cache

STRIP_MARKUP = str.maketrans({"*": None, "`": None, "_": None})
NUMBER = r"(\d{1,6})(?!\d)"
COLOUR_TOKEN = r"\b(?:colou?r|c)[ \t]*#?[ \t]*" + NUMBER
# One "vertex: colour" statement, e.g. `3: Color2`, `Vertex 3 -> color 2`, `3 = C2`,
# `3 (Color 2)`, `vertex 3 is colored with Colour 2`. Kept to one line ([ \t], not \s)
# so a line without a colour can never borrow the next line's.
_PAIR_RE = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?" + NUMBER + r"[ \t]*"
    r"(?:[:=(,]|->|=>|→|-|–|—)?[ \t]*"
    r"(?:(?:is|gets|has|was|should[ \t]+be|colou?red|assigned|with|to|as|=)[ \t]+)*"
    + COLOUR_TOKEN + r"\b",
    re.IGNORECASE,
)


# Replies up to this long are kept by the thousand: the authors' 7,011 distinct colouring
# replies are all but seven at most 512 characters, and an import, each table and each
# rescoring of the release read them again (a smaller cache than the release keeps none).
# Bounded by length, the kept ones stay within some tens of MiB whatever a file holds.
_SHORT_REPLY_CHARS = 512


def colour_statements(text: str) -> list[tuple[int, int]]:
    return list(_short_statements(text) if len(text) <= _SHORT_REPLY_CHARS else _statements(text))


@lru_cache(maxsize=8192)
def _short_statements(text: str) -> tuple[tuple[int, int], ...]:
    return _read_statements(text)


@lru_cache(maxsize=64)
def _statements(text: str) -> tuple[tuple[int, int], ...]:
    # Cached: one reply is read by extract_answer, verify and score in turn (an import of
    # the authors' colouring runs read each of its replies three times).
    return _read_statements(text)


def _read_statements(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((int(m.group(1)), int(m.group(2))) for m in _PAIR_RE.finditer(text.translate(STRIP_MARKUP)))


def parse_assignment(text: str) -> dict[int, int]:
    """Vertex -> colour number of every `vertex: colour` statement in `text`.

    When a vertex is coloured twice the LAST statement wins: models that think aloud
    try colours first and write their final list at the end.
    """
    out: dict[int, int] = {}
    for vertex, colour in colour_statements(text):
        out[vertex] = colour
    return out


def render_assignment(assignment: dict[int, int]) -> str:
    return "\n".join(f"{v}: Color{c}" for v, c in sorted(assignment.items()))
