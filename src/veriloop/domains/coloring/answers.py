"""Colourings in replies: every `vertex: colour` statement, read tolerantly (`3: Color2`,
`Vertex 3 -> color 2`, `3 = C2`, markdown around them), and the one rendering veriloop
writes (`V: ColorJ` lines). The patterns are shared with the critique reader.

Invariants (a careful human grader's reading, so an answer cannot game the checker):
- Numbers are ASCII or full-width digits only: a digit of another script ("৪" is four but
  looks like eight) is not read, so the vertex it stands for counts as uncoloured.
- A minus sign before a vertex is kept: "-1: Color2" colours vertex -1 (which does not
  exist), never vertex 1.
- `several_colours` names every vertex a reply gives more than one distinct colour, by
  two statements (a first attempt and a corrected one, two alternatives) or by a hedge
  after one ("3: Color1 or Color2", "3: Color1/Color2"); the checker rejects such a reply
  as ambiguous. The same colour stated twice is one reading and is not ambiguous.
"""

from __future__ import annotations

import re
from functools import lru_cache

STRIP_MARKUP = str.maketrans({"*": None, "`": None, "_": None})
NUMBER = r"([0-9\uff10-\uff19]{1,6})(?!\d)"
COLOUR_TOKEN = r"\b(?:colou?r|c)[ \t]*#?[ \t]*" + NUMBER
# One "vertex: colour" statement, e.g. `3: Color2`, `Vertex 3 -> color 2`, `3 = C2`,
# `3 (Color 2)`, `vertex 3 is colored with Colour 2`. Kept to one line ([ \t], not \s)
# so a line without a colour can never borrow the next line's.
_PAIR_RE = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?([-−]?)" + NUMBER + r"[ \t]*"
    r"(?:[:=(,]|->|=>|→|-|–|—)?[ \t]*"
    r"(?:(?:is|gets|has|was|should[ \t]+be|colou?red|assigned|with|to|as|=)[ \t]+)*"
    + COLOUR_TOKEN + r"\b",
    re.IGNORECASE,
)
# A second colour offered right after a statement's: "or Color1", "/Color1", ", C1", "(or colour 1)".
_HEDGE_RE = re.compile(
    r"[ \t]*\(?[ \t]*(?:or|and|/|\||,)[ \t]*(?:(?:maybe|perhaps|possibly)[ \t]+)?" + COLOUR_TOKEN + r"\b", re.IGNORECASE
)


# Replies up to this long are kept by the thousand: the authors' 7,011 distinct colouring
# replies are all but seven at most 512 characters, and an import, each table and each
# rescoring of the release read them again (a smaller cache than the release keeps none).
# Bounded by length, the kept ones stay within some tens of MiB whatever a file holds.
_SHORT_REPLY_CHARS = 512


Readings = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]


def colour_statements(text: str) -> list[tuple[int, int]]:
    return list(_readings(text)[0])


def several_colours(text: str) -> dict[int, list[int]]:
    """Vertex -> its distinct colours, in the order the reply gives them, for every vertex
    given more than one (by statements or a hedge after one)."""
    statements, hedges = _readings(text)
    colours: dict[int, list[int]] = {}
    for vertex, colour in statements + hedges:
        seen = colours.setdefault(vertex, [])
        if colour not in seen:
            seen.append(colour)
    return {v: cs for v, cs in sorted(colours.items()) if len(cs) > 1}


def _readings(text: str) -> Readings:
    return _short_statements(text) if len(text) <= _SHORT_REPLY_CHARS else _statements(text)


@lru_cache(maxsize=8192)
def _short_statements(text: str) -> Readings:
    return _read_statements(text)


@lru_cache(maxsize=64)
def _statements(text: str) -> Readings:
    # Cached: one reply is read by extract_answer, verify and score in turn (an import of
    # the authors' colouring runs read each of its replies three times).
    return _read_statements(text)


def _read_statements(text: str) -> Readings:
    plain = text.translate(STRIP_MARKUP)
    statements, hedges = [], []
    for m in _PAIR_RE.finditer(plain):
        vertex = -int(m.group(2)) if m.group(1) else int(m.group(2))
        statements.append((vertex, int(m.group(3))))
        hedge = _HEDGE_RE.match(plain, m.end())
        if hedge:
            hedges.append((vertex, int(hedge.group(1))))
    return tuple(statements), tuple(hedges)


def parse_assignment(text: str) -> dict[int, int]:
    """Vertex -> colour number of every `vertex: colour` statement in `text`.

    When a vertex is coloured twice the LAST statement wins (the checker rejects a reply
    that gives a vertex two colours: see `several_colours`).
    """
    out: dict[int, int] = {}
    for vertex, colour in colour_statements(text):
        out[vertex] = colour
    return out


def render_assignment(assignment: dict[int, int]) -> str:
    return "\n".join(f"{v}: Color{c}" for v, c in sorted(assignment.items()))
