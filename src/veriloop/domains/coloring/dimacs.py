"""Reading graphs in the DIMACS-like `.col` format of the shared data: `e U V` edge
lines, an optional `p edge N M` header and a `c OPTIMAL CHROMATIC NUMBER === K` comment.

Vertices are numbered from 0. Every error is a DataFileError naming the source and the
line, and ends with `COL_HINT`, the format in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import DataFileError

# Guards against a vertex id like 10**9 turning into a billion SAT variables.
MAX_VERTICES = 10_000

COL_HINT = "expected lines 'e U V' and 'c OPTIMAL CHROMATIC NUMBER === K'"
_CHROMATIC_RE = re.compile(r"OPTIMAL\s+CHROMATIC\s+NUMBER\s*=+\s*(\S*)", re.IGNORECASE)
_INT_RE = re.compile(r"\d{1,7}")
_DIGITS_RE = re.compile(r"[0-9]+")

Edge = tuple[int, int]


@dataclass
class ColFile:
    """A parsed file plus the line an error about its chromatic number must name."""

    n: int
    edges: list[Edge]
    chromatic: int | None
    chromatic_line: int | None


def _bad(source: str, line: int, what: str) -> DataFileError:
    return DataFileError(f"{source}, line {line}: {what}; {COL_HINT}")


def _vertex_id(source: str, line: int, token: str) -> int:
    if not _DIGITS_RE.fullmatch(token):
        raise _bad(source, line, f"vertex {token[:20]!r} is not a whole number")
    if len(token) > 7 or int(token) >= MAX_VERTICES:
        raise _bad(source, line, f"vertex {token[:20]} is too large (at most {MAX_VERTICES - 1})")
    return int(token)


def read_col(text: str, source: str) -> ColFile:
    """The graph of `.col` text and the line its chromatic number is stated on."""
    header_n: int | None = None
    header_line = 0
    chromatic: int | None = None
    chromatic_line: int | None = None
    edges: list[Edge] = []
    edge_lines: list[int] = []
    seen: set[frozenset[int]] = set()
    # Split on \r\n, \r and \n only: str.splitlines also breaks at form feeds and other
    # separators, which would make the line numbers in messages disagree with editors.
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for k, raw in enumerate(lines, start=1):
        parts = raw.split()
        if not parts:
            continue
        tag = parts[0]
        if tag == "c":
            match = _CHROMATIC_RE.search(raw)
            if match is None:
                continue
            value = match.group(1)
            if not _INT_RE.fullmatch(value) or int(value) < 1:
                raise _bad(source, k, f"chromatic number {value[:20]!r} is not a positive whole number")
            if chromatic is not None and int(value) != chromatic:
                earlier = f"line {chromatic_line} says {chromatic}"
                raise _bad(source, k, f"a second, different chromatic number {value} ({earlier})")
            chromatic, chromatic_line = int(value), k
        elif tag == "p":
            if header_n is not None:
                raise _bad(source, k, f"a second 'p' header (the first is on line {header_line})")
            if len(parts) not in (3, 4) or not all(_INT_RE.fullmatch(t) for t in parts[2:]):
                raise _bad(source, k, f"header {raw.strip()[:40]!r} is not of the form 'p edge N M'")
            header_n, header_line = int(parts[2]), k
            if header_n < 1:
                raise _bad(source, k, "the header declares no vertices")
            if header_n > MAX_VERTICES:
                raise _bad(source, k, f"{header_n} vertices are too many (at most {MAX_VERTICES})")
        elif tag == "e":
            if len(parts) != 3:
                raise _bad(source, k, f"edge line {raw.strip()[:40]!r} does not name exactly two vertices")
            u, v = _vertex_id(source, k, parts[1]), _vertex_id(source, k, parts[2])
            if u == v:
                raise _bad(source, k, f"edge {u}-{v} joins vertex {u} to itself, which no colouring can satisfy")
            key = frozenset((u, v))
            # Some DIMACS writers list each edge in both directions; one copy is enough.
            if key not in seen:
                seen.add(key)
                edges.append((u, v))
                edge_lines.append(k)
        else:
            raise _bad(source, k, f"unrecognised line {raw.strip()[:40]!r}")
    if header_n is not None:
        for (u, v), k in zip(edges, edge_lines):
            if max(u, v) >= header_n:
                raise _bad(
                    source, k, f"vertex {max(u, v)} is out of range: the header on line {header_line} declares "
                    f"{header_n} vertices, numbered 0 to {header_n - 1}"
                )
        n = header_n
    elif edges:
        n = max(max(e) for e in edges) + 1
    else:
        raise DataFileError(f"{source}: no edges and no 'p edge N M' header, so there is no graph; {COL_HINT}")
    return ColFile(n, edges, chromatic, chromatic_line)


def parse_col(text: str, source: str = "<text>") -> tuple[int, list[Edge], int | None]:
    """(vertex count, edges in file order, stated chromatic number or None) of `.col` text.

    The vertex count is the `p edge N M` header's N when there is one, otherwise the
    largest vertex id plus one: ids start at 0, and an isolated vertex above the last
    edge's ids cannot be seen without a header. Repeated edges are kept once.
    """
    parsed = read_col(text, source)
    return parsed.n, parsed.edges, parsed.chromatic
