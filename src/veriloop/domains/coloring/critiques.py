"""What a free-text critique of a colouring claims: the vertex pairs it calls
same-coloured neighbours and the vertex colours it states, read sentence by sentence
(for the critique study's report)."""

from __future__ import annotations

import re

from .answers import COLOUR_TOKEN, NUMBER, STRIP_MARKUP, colour_statements

_CLAUSE_SPLIT = re.compile(r"\.(?!\d)|[;\n!?]")
# A vertex with an optional colour beside it: "3", "vertex 3", "3 (Color 2)", "3: Color 2".
_VREF = (
    r"(?:vertex|node|v)?[ \t]*#?" + NUMBER
    + r"(?:[ \t]*(?:\(|:|,)?[ \t]*(?:(?:colou?red|with|is)[ \t]+)*" + COLOUR_TOKEN + r"\)?)?"
)
# Tried in this order; a later pattern never re-reads text an earlier one matched, so
# "5 is connected to 1 (Color 2) and 14" names 5-1 and not 1-14.
_PAIR_PATTERNS = [
    # "vertex 1: Color 2 is connected to vertex 2: Color 2", "3 is adjacent to 5"
    re.compile(
        r"(?<![\w.])" + _VREF + r"[ \t]+(?:is|are|was)?[ \t]*(?:also[ \t]+)?"
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
    r"\b(?:different|differ|not[ \t]+(?:connected|adjacent|joined|share)|"
    r"(?:is|are)n'?t[ \t]+(?:connected|adjacent|joined)|correctly|no[ \t]+conflict)",
    re.IGNORECASE,
)
_BOTH_COLOUR = re.compile(r"\bboth\b[^0-9]{0,80}?" + COLOUR_TOKEN, re.IGNORECASE)
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
    stated: set[tuple[int, int]] = set(colour_statements(critique))
    text = critique.translate(STRIP_MARKUP)
    stated.update((int(a), int(b)) for a, b in _COLOURED_N.findall(text))
    for clause in _CLAUSE_SPLIT.split(text):
        pairs = _pairs_in(clause)
        if not pairs:
            continue
        both = _BOTH_COLOUR.search(clause)
        fine = _FINE_CUE.search(clause) is not None
        same = _SAME_CUE.search(clause) is not None
        for u, v, cu, cv in pairs:
            if u == v:
                continue
            if both is not None and cu is None and cv is None:
                cu = cv = int(both.group(1))
                stated.update({(u, cu), (v, cv)})
            # A pair shown with two different colours, or in a sentence that calls it
            # fine, is the critic checking an edge, not accusing it.
            if fine or (cu is not None and cv is not None and cu != cv and not same):
                continue
            named.add(frozenset((u, v)))
    return named, stated
