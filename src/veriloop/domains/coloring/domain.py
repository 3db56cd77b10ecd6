"""The graph colouring domain: prompts, the sound checker, feedback, and the candidates
and critique report of the studies. Reading `.col` files, generating graphs, the exact
chromatic number and reading colourings and critiques are the package's other modules.

Text the model reads says "color", matching the colour names `Color1`..`ColorK` it must
write; code and error kinds say "colour".
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import DataFileError, VeriloopError
from ..base import Candidate, Instance, Message, SoundlyScored, Verdict, VerdictError, shown_errors
from .answers import parse_assignment, render_assignment, several_colours
from .chromatic import chromatic_number
from .critiques import critique_claims
from .dimacs import COL_HINT, ColFile, Edge, read_col
from .generator import DEFAULT_P, DEFAULT_VERTICES, generate_graphs

DEFAULT_COUNT = 100
TOKENS_PER_VERTEX = 8
TOKEN_MARGIN = 64

_WHERE_FROM = "give a .col file or a folder of them, or omit it to generate graphs"


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
        parsed = read_col(text, source)
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
            raise DataFileError(f"{path}: cannot read the file ({reason}); {COL_HINT}") from None
        return self._checked(read_col(text, str(path)), str(path), f"coloring-{path.stem}", path.name)

    def _checked(self, parsed: ColFile, source: str, instance_id: str, name: str | None) -> Instance:
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
                raise DataFileError(f"{path}: no .col files in this folder; {COL_HINT}")
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
        # A reply that gives a vertex two colours holds no one answer to vote for.
        assignment = {} if several_colours(text) else parse_assignment(text)
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
        # Not malformed: the reply is read, and what it says gives a vertex two colours (the
        # authors' import counts two such replies as wrong, not as unreadable).
        ambiguous = several_colours(text)
        if ambiguous:
            return Verdict(ok=False, errors=[
                VerdictError(
                    kind="several_colours",
                    message=f"Vertex {v} was given more than one color ({' and '.join(f'Color{c}' for c in cs)}): "
                    "give each vertex exactly one color and write only your final coloring.",
                    where=str(v),
                )
                for v, cs in ambiguous.items()
            ])
        outside = sorted(v for v in assignment if v < 0 or v >= n)
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
        named, stated = critique_claims(critique)
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
