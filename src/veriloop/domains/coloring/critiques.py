"""What a free-text critique of a colouring claims: the vertex pairs it calls
same-coloured neighbours and the vertex colours it states, read sentence by sentence
(for the critique study's report).

Invariants:
- A colour number is never a vertex: "colored with color 0, color 2" states no colour of
  vertex 0, and "Vertex 9 of Color 2 and Vertex 16" names no pair 2-16.
- One colour said of a named pair ("both Color 2", "the same color (Color 1)", "are
  color 2", "both colored 0") is a colour stated for each of the two vertices, even where
  the reply gave each its own colour beside it; a clause that says the pair differs
  ("different colors", "not the same color") states no shared colour.
- A colour written beside a vertex of a named pair ("3 (Color 2)", "vertex 11 which is
  also color 2", "Vertex 0 of Color 0") is a colour the critique states for it.
"""

from __future__ import annotations

import re

from .answers import COLOUR_TOKEN, NUMBER, STRIP_MARKUP, colour_statements

_CLAUSE_SPLIT = re.compile(r"\.(?!\d)|[;\n!?]")
# A vertex with an optional colour beside it: "3", "vertex 3", "3 (Color 2)", "3: Color 2".
_VREF = (
    r"(?:vertex|node|v)?[ \t]*#?" + NUMBER
    + r"(?:[ \t]*(?:\(|:|,)?[ \t]*(?:(?:colou?red|with|is|of|which|also)[ \t]+)*" + COLOUR_TOKEN + r"\)?)?"
)
# Tried in this order; a later pattern never re-reads text an earlier one matched, so
# "5 is connected to 1 (Color 2) and 14" names 5-1 and not 1-14.
_PAIR_PATTERNS = [
    # "vertex 1: Color 2 is connected to vertex 2: Color 2", "3 is adjacent to 5"
    re.compile(
        r"(?<![\w.])" + _VREF + r"[ \t]+(?:and[ \t]+)?(?:is|are|was)?[ \t]*(?:also[ \t]+)?"
        r"(?:connected|adjacent|joined|linked)[ \t]+(?:to|with)[ \t]+" + _VREF,
        re.IGNORECASE,
    ),
    re.compile(r"(?<![\w.])" + _VREF + r"[ \t]+shares?[ \t]+an[ \t]+edge[ \t]+with[ \t]+" + _VREF, re.IGNORECASE),
    re.compile(r"between[ \t]+" + _VREF + r"[ \t]+and[ \t]+" + _VREF, re.IGNORECASE),
    # "vertices 3 and 5", "vertex 0 (Color 0) and vertex 3 (Color 0)", "0: Color 0 and 9: Color 0"
    re.compile(r"(?<![\w.])" + _VREF + r"[ \t]*(?:and|&)[ \t]*" + _VREF, re.IGNORECASE),
    # "edge (3, 5)", "(3,5)", "{3, 5}", "[3, 5]"
    re.compile(r"[(\[{][ \t]*" + NUMBER + r"[ \t]*,[ \t]*" + NUMBER + r"[ \t]*[)\]}]"),
    # "3-5", "3 - 5", "3–5"
    re.compile(r"(?<![\w.])" + NUMBER + r"[ \t]*(?:-|–|—|--)[ \t]*" + NUMBER + r"(?![\w.]\d)"),
]
_BARE_PATTERNS = 2  # the last two patterns: bare numbers, which must not sit inside "Color 1-3"
_COLOUR_RE = re.compile(COLOUR_TOKEN, re.IGNORECASE)
_SAME_CUE = re.compile(r"\b(?:same|both|identical)\b", re.IGNORECASE)
_FINE_CUE = re.compile(
    r"\b(?:different|differ|not[ \t]+(?:connected|adjacent|joined|share|the[ \t]+same)|"
    r"(?:is|are)n'?t[ \t]+(?:connected|adjacent|joined|the[ \t]+same)|correctly|no[ \t]+conflict)",
    re.IGNORECASE,
)
# One colour said of the clause's pair: "both (are) Color 2", "(have) the same color,
# Color 1", "are (colored with) Color 2", "both colored 0". No digit may come between
# the cue and the colour, so a vertex named in between ends the phrase.
_SHARED_COLOUR = re.compile(
    r"\b(?:both|same|are|have)\b[^0-9]{0,80}?(?:" + COLOUR_TOKEN + r"|\bcolou?red[ \t]+" + NUMBER + r")",
    re.IGNORECASE,
)
# A colour beside one vertex in words answers.py does not read: "11 which is also color 2",
# "Vertex 0 of Color 0".
_STATED_IN_WORDS = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?" + NUMBER + r"[ \t]+(?:(?:which|that|is|also|of)[ \t]+)+"
    + COLOUR_TOKEN,
    re.IGNORECASE,
)
_COLOURED_N = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?" + NUMBER + r"[ \t]*,?[ \t]*(?:is[ \t]+)?colou?red[ \t]+" + NUMBER + r"\b",
    re.IGNORECASE,
)


def _pairs_in(clause: str) -> list[tuple[int, int, int | None, int | None]]:
    """(u, v, colour stated for u, colour stated for v) for each vertex pair named."""
    found: list[tuple[int, int, int | None, int | None]] = []
    # Characters already read by a match, and those inside colour names; a byte map
    # keeps the overlap test linear however many pairs a long critique names.
    taken = bytearray(len(clause))
    in_colour = bytearray(len(clause))
    for m in _COLOUR_RE.finditer(clause):
        in_colour[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    for i, pattern in enumerate(_PAIR_PATTERNS):
        bare = i >= len(_PAIR_PATTERNS) - _BARE_PATTERNS
        for m in pattern.finditer(clause):
            if taken.find(1, m.start(), m.end()) >= 0 or (bare and in_colour.find(1, m.start(), m.end()) >= 0):
                continue
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            groups = list(m.groups())
            if len(groups) == 4:
                u, cu, v, cv = groups
            else:
                (u, v), cu, cv = groups, None, None
            found.append((int(u), int(v), None if cu is None else int(cu), None if cv is None else int(cv)))
    return found


def critique_claims(critique: str) -> tuple[set[frozenset[int]], set[tuple[int, int]]]:
    """Vertex pairs the critique calls same-coloured neighbours, and the vertex colours
    it states, read sentence by sentence."""
    named: set[frozenset[int]] = set()
    # "color 0" written "color0": a digit after a letter never starts a vertex reference,
    # and every pattern still reads it as a colour.
    text = _COLOUR_RE.sub(lambda m: "color" + m.group(1), critique.translate(STRIP_MARKUP))
    stated: set[tuple[int, int]] = set(colour_statements(text))
    stated.update((int(a), int(b)) for a, b in _COLOURED_N.findall(text))
    stated.update((int(a), int(b)) for a, b in _STATED_IN_WORDS.findall(text))
    for clause in _CLAUSE_SPLIT.split(text):
        pairs = _pairs_in(clause)
        if not pairs:
            continue
        fine = _FINE_CUE.search(clause) is not None
        same = _SAME_CUE.search(clause) is not None
        shared = None if fine else _SHARED_COLOUR.search(clause)
        for u, v, cu, cv in pairs:
            if u == v:
                continue
            stated.update((w, c) for w, c in ((u, cu), (v, cv)) if c is not None)
            if shared is not None:
                colour = int(shared.group(1) or shared.group(2))
                stated.update({(u, colour), (v, colour)})
                if cu is None and cv is None:
                    cu = cv = colour
            # A pair shown with two different colours, or in a sentence that calls it
            # fine, is the critic checking an edge, not accusing it.
            if fine or (cu is not None and cv is not None and cu != cv and not same):
                continue
            named.add(frozenset((u, v)))
    return named, stated
