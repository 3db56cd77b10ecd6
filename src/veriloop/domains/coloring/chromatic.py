"""The exact chromatic number of a graph, by an incremental SAT search (glucose4), and a
k-colourability test used to cross-check it. Colours here are numbered from 0.

The search is deterministic, so its answer is kept per (n, edge list as given) for the
process: every load of a graph file asks again (a reproduction from the recorded runs
reads each graph three times), and the caller gets its own list each time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import networkx as nx
from pysat.solvers import Solver

from .dimacs import Edge


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
    k, colouring = _chromatic(n, tuple(_check_graph(n, edges)))
    return k, list(colouring)


@lru_cache(maxsize=1024)
def _chromatic(n: int, edge_list: tuple[Edge, ...]) -> tuple[int, tuple[int, ...]]:
    k, colouring = _search(n, edge_list)
    return k, tuple(colouring)


def _search(n: int, edge_list: Sequence[Edge]) -> tuple[int, list[int]]:
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
