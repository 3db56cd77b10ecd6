"""Graph colouring: DIMACS-like `.col` files, planar random graphs, an exact SAT
chromatic number, answer extraction, a sound checker and the critique study.

Vertices are numbered from 0, as in the shared data and the paper's prompts. Text the
model reads says "color", matching the colour names `Color1`..`ColorK` it must write;
code and error kinds say "colour".
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
from pysat.solvers import Solver

from ..errors import DataFileError, VeriloopError
from .base import Candidate, Instance, Message, SoundlyScored, Verdict, VerdictError, shown_errors

# The shared data holds graphs of 5 to 17 vertices; the first 100 (the paper's
# evaluation size) average 14, which is also the size of the paper's worked example.
DEFAULT_VERTICES = 14
DEFAULT_P = 0.4
DEFAULT_COUNT = 100
# Guards against a vertex id like 10**9 turning into a billion SAT variables.
MAX_VERTICES = 10_000
# Generation gives up after this many draws in a row that add no new graph: large
# vertex counts are almost never planar at p=0.4, tiny ones run out of distinct graphs.
MAX_FRUITLESS_DRAWS = 50_000
TOKENS_PER_VERTEX = 8
TOKEN_MARGIN = 64

_HINT = "expected lines 'e U V' and 'c OPTIMAL CHROMATIC NUMBER === K'"
_WHERE_FROM = "give a .col file or a folder of them, or omit it to generate graphs"
_CHROMATIC_RE = re.compile(r"OPTIMAL\s+CHROMATIC\s+NUMBER\s*=+\s*(\S*)", re.IGNORECASE)
_INT_RE = re.compile(r"\d{1,7}")
_DIGITS_RE = re.compile(r"[0-9]+")

Edge = tuple[int, int]


# ------------------------------------------------------------------------ parsing


@dataclass
class _Parsed:
    """A parsed file plus the line an error about its chromatic number must name."""

    n: int
    edges: list[Edge]
    chromatic: int | None
    chromatic_line: int | None


def _bad(source: str, line: int, what: str) -> DataFileError:
    return DataFileError(f"{source}, line {line}: {what}; {_HINT}")


def _vertex_id(source: str, line: int, token: str) -> int:
    if not _DIGITS_RE.fullmatch(token):
        raise _bad(source, line, f"vertex {token[:20]!r} is not a whole number")
    if len(token) > 7 or int(token) >= MAX_VERTICES:
        raise _bad(source, line, f"vertex {token[:20]} is too large (at most {MAX_VERTICES - 1})")
    return int(token)


def _parse(text: str, source: str) -> _Parsed:
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
        raise DataFileError(f"{source}: no edges and no 'p edge N M' header, so there is no graph; {_HINT}")
    return _Parsed(n, edges, chromatic, chromatic_line)


def parse_col(text: str, source: str = "<text>") -> tuple[int, list[Edge], int | None]:
    """(vertex count, edges in file order, stated chromatic number or None) of `.col` text.

    The vertex count is the `p edge N M` header's N when there is one, otherwise the
    largest vertex id plus one: ids start at 0, and an isolated vertex above the last
    edge's ids cannot be seen without a header. Repeated edges are kept once.
    """
    parsed = _parse(text, source)
    return parsed.n, parsed.edges, parsed.chromatic


# --------------------------------------------------------------------- the solver


def _check_graph(n: int, edges: Iterable[Sequence[int]]) -> list[Edge]:
    out: list[Edge] = []
    for e in edges:
        u, v = int(e[0]), int(e[1])
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ValueError(f"edge {u}-{v} is not an edge between two different vertices of 0..{n - 1}")
        out.append((u, v))
    return out


def _greedy_clique(n: int, adj: list[set[int]]) -> list[int]:
    """A large clique found greedily: a lower bound and a safe symmetry break."""
    best: list[int] = []
    for start in sorted(range(n), key=lambda v: -len(adj[v])):
        clique = [start]
        candidates = set(adj[start])
        while candidates:
            nxt = max(candidates, key=lambda v: (len(adj[v] & candidates), -v))
            clique.append(nxt)
            candidates &= adj[nxt]
        if len(clique) > len(best):
            best = clique
    return best


def chromatic_number(n: int, edges: Iterable[Sequence[int]]) -> tuple[int, list[int]]:
    """The chromatic number of the graph and one colouring with that many colours
    (colour ids 0..k-1, one per vertex), found exactly with an incremental SAT solver.
    """
    edge_list = _check_graph(n, edges)
    if n == 0:
        return 0, []
    if not edge_list:
        return 1, [0] * n
    adj: list[set[int]] = [set() for _ in range(n)]
    for u, v in edge_list:
        adj[u].add(v)
        adj[v].add(u)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edge_list)
    greedy = nx.greedy_color(graph, strategy="largest_first")
    upper = max(greedy.values()) + 1
    clique = _greedy_clique(n, adj)
    # Any k below the clique size is unsatisfiable, so the search starts there rather
    # than at 1; the answer is the same and the trivially-UNSAT calls are skipped.
    if len(clique) == upper:
        return upper, [greedy[v] for v in range(n)]
    palette = upper - 1  # only fewer colours than the greedy colouring are worth asking for

    def x(v: int, c: int) -> int:
        return v * palette + c + 1

    def used(c: int) -> int:
        return n * palette + c + 1

    with Solver(name="glucose4") as solver:
        for v in range(n):
            solver.add_clause([x(v, c) for c in range(palette)])
            for c in range(palette):
                solver.add_clause([-x(v, c), used(c)])
                for d in range(c + 1, palette):
                    solver.add_clause([-x(v, c), -x(v, d)])
        for u, v in edge_list:
            for c in range(palette):
                solver.add_clause([-x(u, c), -x(v, c)])
        # Symmetry breaking: any colouring can be renamed so the clique takes colours
        # 0, 1, ... in order, and so that the colours in use have no gaps.
        for c, v in enumerate(clique):
            solver.add_clause([x(v, c)])
        for c in range(palette - 1):
            solver.add_clause([-used(c + 1), used(c)])
        for k in range(len(clique), palette + 1):
            if solver.solve(assumptions=[-used(c) for c in range(k, palette)]):
                true = {lit for lit in solver.get_model() or [] if lit > 0}
                return k, [next(c for c in range(palette) if x(v, c) in true) for v in range(n)]
    return upper, [greedy[v] for v in range(n)]


def is_k_colourable(n: int, edges: Iterable[Sequence[int]], k: int) -> bool:
    """Whether k colours suffice, asked of the SAT solver directly (used to cross-check)."""
    edge_list = _check_graph(n, edges)
    if n == 0:
        return True
    if k <= 0:
        return False
    with Solver(name="glucose4") as solver:
        for v in range(n):
            solver.add_clause([v * k + c + 1 for c in range(k)])
        for u, v in edge_list:
            for c in range(k):
                solver.add_clause([-(u * k + c + 1), -(v * k + c + 1)])
        return bool(solver.solve())


# ----------------------------------------------------------------- generation


def generate_graphs(
    count: int,
    vertices: int = DEFAULT_VERTICES,
    p: float = DEFAULT_P,
    seed: int = 0,
    max_fruitless_draws: int = MAX_FRUITLESS_DRAWS,
) -> list[nx.Graph]:
    """The first `count` distinct (pairwise non-isomorphic) planar graphs drawn from
    G(vertices, p), from one seeded random stream, so a shorter list is a prefix of a
    longer one. Graphs need not be connected: a tenth of the shared graphs are not.
    """
    if count < 0 or vertices < 1 or not 0.0 <= p <= 1.0:
        raise VeriloopError(f"cannot generate {count} graphs with {vertices} vertices and p={p}")
    rng = random.Random(seed)
    kept: list[nx.Graph] = []
    buckets: dict[tuple[int, ...], list[nx.Graph]] = {}
    max_planar_edges = max(3 * vertices - 6, vertices - 1)
    fruitless = draws = 0
    while len(kept) < count:
        if fruitless >= max_fruitless_draws:
            raise VeriloopError(
                f"found only {len(kept)} distinct planar graphs in {draws} draws of G({vertices}, {p}); "
                "ask for fewer graphs or choose another vertex count"
            )
        draws += 1
        fruitless += 1
        graph = nx.gnp_random_graph(vertices, p, seed=rng)
        # Euler's bound rejects most dense draws far faster than a planarity test.
        if graph.number_of_edges() > max_planar_edges or not nx.check_planarity(graph)[0]:
            continue
        # Isomorphic graphs share a degree sequence, so only same-bucket pairs are compared.
        key = tuple(sorted(d for _, d in graph.degree()))
        bucket = buckets.setdefault(key, [])
        if any(nx.is_isomorphic(graph, other) for other in bucket):
            continue
        bucket.append(graph)
        kept.append(graph)
        fruitless = 0
    return kept


# ------------------------------------------------------------ answer extraction

_STRIP_MARKUP = str.maketrans({"*": None, "`": None, "_": None})
_NUM = r"(\d{1,6})(?!\d)"
_COLOUR_TOKEN = r"\b(?:colou?r|c)[ \t]*#?[ \t]*" + _NUM
# One "vertex: colour" statement, e.g. `3: Color2`, `Vertex 3 -> color 2`, `3 = C2`,
# `3 (Color 2)`, `vertex 3 is colored with Colour 2`. Kept to one line ([ \t], not \s)
# so a line without a colour can never borrow the next line's.
_PAIR_RE = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?" + _NUM + r"[ \t]*"
    r"(?:[:=(,]|->|=>|→|-|–|—)?[ \t]*"
    r"(?:(?:is|gets|has|was|should[ \t]+be|colou?red|assigned|with|to|as|=)[ \t]+)*"
    + _COLOUR_TOKEN + r"\b",
    re.IGNORECASE,
)


def _statements(text: str) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for m in _PAIR_RE.finditer(text.translate(_STRIP_MARKUP))]


def parse_assignment(text: str) -> dict[int, int]:
    """Vertex -> colour number of every `vertex: colour` statement in `text`.

    When a vertex is coloured twice the LAST statement wins: models that think aloud
    try colours first and write their final list at the end.
    """
    out: dict[int, int] = {}
    for vertex, colour in _statements(text):
        out[vertex] = colour
    return out


def render_assignment(assignment: dict[int, int]) -> str:
    return "\n".join(f"{v}: Color{c}" for v, c in sorted(assignment.items()))


# ------------------------------------------------------------------- helpers


def _n(instance: Instance) -> int:
    return int(instance.data["n"])


def _edges(instance: Instance) -> list[Edge]:
    return [(int(u), int(v)) for u, v in instance.data["edges"]]


def _k(instance: Instance) -> int:
    return int(instance.data["chromatic"])


def _edge_lines(instance: Instance) -> str:
    return "\n".join(f"Vertex {u} shares an edge with vertex {v}." for u, v in _edges(instance))


def _vertex_range(n: int) -> str:
    return "vertex 0" if n == 1 else f"vertices 0 to {n - 1}"


def _format_rules(instance: Instance) -> str:
    k = _k(instance)
    names = "Color1" if k == 1 else f"Color1 to Color{k}"
    return (
        f"Give a color to every one of the {_n(instance)} vertices ({_vertex_range(_n(instance))}), "
        f"including any vertex without edges, and use at most {k} colors, named {names}. "
        "Write one line per vertex of the form `V: ColorJ`, for example `0: Color1`, and nothing else."
    )


def _tokens_for(n: int) -> int:
    return TOKENS_PER_VERTEX * n + TOKEN_MARGIN


def _make_instance(
    instance_id: str, n: int, edges: Sequence[Edge], chromatic: int, colouring: Sequence[int], **extra: Any
) -> Instance:
    data: dict[str, Any] = {"n": n, "edges": [[u, v] for u, v in edges], "chromatic": chromatic, **extra}
    reference = render_assignment({v: c + 1 for v, c in enumerate(colouring)})
    return Instance(id=instance_id, data=data, reference=reference)


def _natural_key(path: Path) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.stem)) + (path.name,)


def _conflicts(edges: Sequence[Edge], assignment: dict[int, int]) -> list[Edge]:
    return [(u, v) for u, v in edges if u in assignment and v in assignment and assignment[u] == assignment[v]]


# ---------------------------------------------------------------- critique parsing

_CLAUSE_SPLIT = re.compile(r"\.(?!\d)|[;\n!?]")
# A vertex with an optional colour beside it: "3", "vertex 3", "3 (Color 2)", "3: Color 2".
_VREF = (
    r"(?:vertex|node|v)?[ \t]*#?" + _NUM
    + r"(?:[ \t]*(?:\(|:|,)?[ \t]*(?:(?:colou?red|with|is)[ \t]+)*" + _COLOUR_TOKEN + r"\)?)?"
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
    re.compile(r"[(\[{][ \t]*" + _NUM + r"[ \t]*,[ \t]*" + _NUM + r"[ \t]*[)\]}]"),
    # "3-5", "3 - 5", "3–5"
    re.compile(r"(?<![\w.])" + _NUM + r"[ \t]*(?:-|–|—|--)[ \t]*" + _NUM + r"(?![\w.]\d)"),
]
_BARE_PATTERNS = 2  # the last two patterns: bare numbers, which must not sit inside "Color 1-3"
_COLOUR_RE = re.compile(_COLOUR_TOKEN, re.IGNORECASE)
_SAME_CUE = re.compile(r"\b(?:same|both|identical)\b", re.IGNORECASE)
_FINE_CUE = re.compile(
    r"\b(?:different|differ|not[ \t]+(?:connected|adjacent|joined|share)|"
    r"(?:is|are)n'?t[ \t]+(?:connected|adjacent|joined)|correctly|no[ \t]+conflict)",
    re.IGNORECASE,
)
_BOTH_COLOUR = re.compile(r"\bboth\b[^0-9]{0,80}?" + _COLOUR_TOKEN, re.IGNORECASE)
_COLOURED_N = re.compile(
    r"(?<![\w.])(?:(?:vertex|node|v)[ \t]*)?#?" + _NUM + r"[ \t]*,?[ \t]*(?:is[ \t]+)?colou?red[ \t]+" + _NUM + r"\b",
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


def _claims(critique: str) -> tuple[set[frozenset[int]], set[tuple[int, int]]]:
    """Vertex pairs the critique calls same-coloured neighbours, and the vertex colours
    it states, read sentence by sentence."""
    named: set[frozenset[int]] = set()
    stated: set[tuple[int, int]] = set(_statements(critique))
    text = critique.translate(_STRIP_MARKUP)
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


# ------------------------------------------------------------------ the domain

_SYSTEM = "You color graphs. Answer with the coloring only, in exactly the requested format."


class Coloring(SoundlyScored):
    """Graph colouring as a veriloop domain: colour a planar graph with as few colours
    as its chromatic number allows."""

    name: str = "coloring"
    description: str = (
        "Color the vertices of a planar graph so that no edge joins two vertices of the same color, "
        "using at most its chromatic number of colors."
    )
    answer_tokens: int = TOKENS_PER_VERTEX * 24 + TOKEN_MARGIN
    # The fields of a batch line (`veriloop verify --batch`) besides "answer", with an example.
    instance_fields: dict[str, str] = {"graph": "<.col text>"}

    def __init__(self, vertices: int = DEFAULT_VERTICES, p: float = DEFAULT_P, seed: int = 0) -> None:
        if vertices < 1:
            raise VeriloopError(f"vertices must be at least 1 (got {vertices})")
        self.vertices = vertices
        self.p = p
        self.seed = seed
        # One reply is a line per vertex; the shared files go up to 17 vertices. The cap
        # grows when a larger graph is loaded, so a long colouring is never cut short.
        self.answer_tokens = _tokens_for(max(vertices, 24))

    def _fit(self, n: int) -> None:
        self.answer_tokens = max(self.answer_tokens, _tokens_for(n))

    # ---------------------------------------------------------------- loading

    def parse_instance(self, raw: Any) -> Instance:
        """An instance from {"graph": "<.col text>"} or {"graph_file": path}; the CLI's
        {"instance": ...} is read as a path when it names a file, else as `.col` text."""
        if isinstance(raw, dict):
            graph, graph_file = raw.get("graph"), raw.get("graph_file")
            if isinstance(graph, str):
                return self._from_text(graph, "<graph>")
            # A Path is a file whichever key it came under: the CLI hands over Path options.
            if isinstance(graph, os.PathLike):
                return self._from_file(Path(graph))
            if isinstance(graph_file, (str, os.PathLike)):
                return self._from_file(Path(graph_file))
            if isinstance(raw.get("instance"), str):
                value = raw["instance"]
                if "\n" not in value and _is_file(value):
                    return self._from_file(Path(value))
                return self._from_text(value, "<instance>")
        raise VeriloopError(
            'a coloring instance is {"graph": "<.col text with lines e U V>"} or {"graph_file": "path/to/graph.col"}; '
            f"got {str(raw)[:80]!r}"
        )

    def _from_text(self, text: str, source: str) -> Instance:
        parsed = _parse(text, source)
        shape = repr((parsed.n, sorted(tuple(sorted(e)) for e in parsed.edges)))
        digest = hashlib.sha1(shape.encode()).hexdigest()[:10]
        return self._checked(parsed, source, f"coloring-{digest}", None)

    def _from_file(self, path: Path) -> Instance:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DataFileError(f"{path}: file not found; {_WHERE_FROM}") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise DataFileError(f"{path}: cannot read the file ({reason}); {_HINT}") from None
        return self._checked(_parse(text, str(path)), str(path), f"coloring-{path.stem}", path.name)

    def _checked(self, parsed: _Parsed, source: str, instance_id: str, name: str | None) -> Instance:
        k, colouring = chromatic_number(parsed.n, parsed.edges)
        # A wrong stated optimum would make every answer fail (too low) or let
        # non-optimal ones pass (too high), so the file must agree with the solver.
        if parsed.chromatic is not None and parsed.chromatic != k:
            raise DataFileError(
                f"{source}, line {parsed.chromatic_line}: the file gives chromatic number {parsed.chromatic} "
                f"but the graph's is {k}; correct or delete that line"
            )
        self._fit(parsed.n)
        return _make_instance(instance_id, parsed.n, parsed.edges, k, colouring, source=name or source)

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        end = None if n is None else offset + n
        if source is None:
            count = DEFAULT_COUNT if end is None else end
            return self._generated(count)[offset:]
        path = Path(source)
        if path.is_dir():
            files = sorted(path.glob("*.col"), key=_natural_key)
            if not files:
                raise DataFileError(f"{path}: no .col files in this folder; {_HINT}")
            # Slicing before parsing: solving graphs outside the requested range is wasted work.
            return [self._from_file(f) for f in files[offset:end]]
        if not path.exists():
            raise DataFileError(f"{path}: no such file or folder; {_WHERE_FROM}")
        return [self._from_file(path)][offset:end]

    def _generated(self, count: int) -> list[Instance]:
        out: list[Instance] = []
        for i, graph in enumerate(generate_graphs(count, self.vertices, self.p, self.seed)):
            edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges())
            k, colouring = chromatic_number(self.vertices, edges)
            out.append(
                _make_instance(
                    f"coloring-g{i + 1}", self.vertices, edges, k, colouring,
                    source=f"G({self.vertices}, {self.p}) seed {self.seed}",
                )
            )
        self._fit(self.vertices)
        return out

    # ----------------------------------------------------------------- prompts

    def prompt(self, instance: Instance) -> list[Message]:
        user = (
            "Color the graph below so that the two vertices of every edge get different colors.\n\n"
            f"You may use at most {_k(instance)} colors.\n\n"
            f"{_edge_lines(instance)}\n\n"
            f"{_format_rules(instance)}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def judge_task(self, instance: Instance) -> str:
        n, k = _n(instance), _k(instance)
        return (
            f"Graph coloring. The graph has {n} vertices ({_vertex_range(n)}) and these edges:\n"
            f"{_edge_lines(instance)}\n"
            f"Its chromatic number (the fewest colors that can work) is {k}. A correct coloring gives each of "
            f"the {n} vertices exactly one color, including vertices without edges, never gives the two vertices "
            f"of an edge the same color, and uses no more than {k} different colors."
        )

    # ---------------------------------------------------------------- answers

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        assignment = parse_assignment(text)
        return render_assignment(assignment) if assignment else None

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        # Colour names are kept: two colourings that differ only by renaming colours
        # vote apart, which is harmless for self-consistency over small graphs.
        if answer is None:
            return None
        assignment = parse_assignment(answer)
        return render_assignment(assignment) if assignment else None

    def verify(self, instance: Instance, text: str) -> Verdict:
        n, k = _n(instance), _k(instance)
        assignment = parse_assignment(text)
        if not assignment:
            return _malformed(f"No coloring was found. {_format_rules(instance)}")
        outside = sorted(v for v in assignment if v >= n)
        if outside:
            listed = ", ".join(map(str, outside))
            noun = "Vertex" if len(outside) == 1 else "Vertices"
            verb = "does" if len(outside) == 1 else "do"
            message = f"{noun} {listed} {verb} not exist: the graph's vertices are numbered 0 to {n - 1}."
            return _malformed(message, listed)
        errors: list[VerdictError] = [
            VerdictError(kind="missing_vertex", message=f"Vertex {v} was not given a color.", where=str(v))
            for v in range(n)
            if v not in assignment
        ]
        for u, v in _conflicts(_edges(instance), assignment):
            errors.append(
                VerdictError(
                    kind="edge_conflict",
                    message=f"Vertices {u} and {v} are joined by an edge but both are Color{assignment[u]}.",
                    where=f"{u}-{v}",
                )
            )
        colours = sorted(set(assignment.values()))
        if len(colours) > k:
            names = ", ".join(f"Color{c}" for c in colours)
            errors.append(
                VerdictError(
                    kind="too_many_colours",
                    message=f"The coloring uses {len(colours)} colors ({names}) but at most {k} are allowed.",
                )
            )
        return Verdict(ok=not errors, errors=errors)

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        shown = shown_errors(verdict, level)
        reask = _format_rules(instance)
        if not shown:
            return f"That coloring is not correct. Using the same graph, give a correct coloring. {reask}"
        problems = "\n".join(e.message for e in shown)
        return f"{problems}\nThat coloring is wrong; please fix it. {reask}"

    # ---------------------------------------------------------------- studies

    def candidates(self, instance: Instance, rng: Any) -> list[Candidate]:
        n, k, edges = _n(instance), _k(instance), _edges(instance)
        base = parse_assignment(instance.reference) if isinstance(instance.reference, str) else {}
        if set(base) != set(range(n)) or _conflicts(edges, base) or len(set(base.values())) > k:
            _, colouring = chromatic_number(n, edges)
            base = {v: c + 1 for v, c in enumerate(colouring)}
        # Renaming the colours at random keeps "0: Color1" from marking the right answer.
        names = list(range(1, k + 1))
        rng.shuffle(names)
        rename = {old: names[i] for i, old in enumerate(sorted(set(base.values())))}
        correct = {v: rename[c] for v, c in base.items()}
        text = render_assignment(correct)
        out = [Candidate(kind="correct", text=text, correct=True, note="optimal coloring from the SAT solver")]

        ablated = _ablate(correct, edges, rng)
        if ablated is not None:
            text, note = ablated
            out.append(Candidate(kind="ablated", text=text, correct=self.score(instance, text), note=note))

        classes: dict[int, list[int]] = {}
        for v, c in correct.items():
            classes.setdefault(c, []).append(v)
        # Moving a vertex out of a colour class of two or more adds a colour without
        # removing one; when every class is a single vertex (a complete graph) there is
        # no proper colouring with K+1 colours at all.
        movable = sorted(v for members in classes.values() if len(members) > 1 for v in members)
        if movable:
            v = rng.choice(movable)
            extra = dict(correct)
            extra[v] = k + 1
            text = render_assignment(extra)
            out.append(
                Candidate(
                    kind="non_optimal", text=text, correct=self.score(instance, text),
                    note=f"vertex {v} recoloured Color{k + 1} (was Color{correct[v]}): {k + 1} colors",
                )
            )

        random_colouring = {v: rng.randint(1, max(k, 1)) for v in range(n)}
        text = render_assignment(random_colouring)
        out.append(Candidate(kind="random", text=text, correct=self.score(instance, text), note="uniform random colours"))
        return out

    def critique_report(self, instance: Instance, answer_text: str, critique: str) -> dict[str, float]:
        edges = {frozenset(e) for e in _edges(instance)}
        answer = parse_assignment(answer_text)
        real = {frozenset(e) for e in _conflicts(_edges(instance), answer)}
        named, stated = _claims(critique)
        wrong_colours = {(v, c) for v, c in stated if answer.get(v) != c}
        return {
            "edges_named": float(len(named)),
            "hallucinated_edges": float(len(named - edges)),
            "wrong_vertex_colours": float(len(wrong_colours)),
            "real_conflicts": float(len(real)),
            "real_conflicts_found": float(len(named & real)),
            "non_conflicts_named": float(len((named & edges) - real)),
        }


def _is_file(value: str) -> bool:
    try:
        return Path(value).is_file()
    except (OSError, ValueError):  # a name too long for the OS, or with a NUL byte
        return False


def _malformed(message: str, where: str | None = None) -> Verdict:
    return Verdict(ok=False, malformed=True, errors=[VerdictError(kind="malformed", message=message, where=where)])


def _ablate(correct: dict[int, int], edges: Sequence[Edge], rng: Any) -> tuple[str, str] | None:
    """The correct colouring with one vertex given a neighbour's colour, preferring a
    change that breaks exactly one edge (the paper's "exactly one edge is wrong")."""
    options = sorted({(u, v) for a, b in edges for u, v in ((a, b), (b, a))})
    if not options:
        return None
    rng.shuffle(options)
    best: tuple[dict[int, int], int, int, list[Edge]] | None = None
    for v, neighbour in options:
        changed = dict(correct)
        changed[v] = correct[neighbour]
        broken = _conflicts(edges, changed)
        if best is None or len(broken) < len(best[3]):
            best = (changed, v, neighbour, broken)
        if len(broken) == 1:
            break
    assert best is not None
    changed, v, neighbour, broken = best
    where = ", ".join(f"{a}-{b}" for a, b in broken)
    note = (
        f"vertex {v} recoloured Color{changed[v]} (was Color{correct[v]}) like neighbour {neighbour}; "
        f"{len(broken)} conflicting edge{'s' if len(broken) != 1 else ''}: {where}"
    )
    return render_assignment(changed), note
