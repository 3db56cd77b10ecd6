"""Random planar graphs for colouring: the first distinct (pairwise non-isomorphic)
planar graphs drawn from G(n, p) by one seeded stream, so a shorter list is always a
prefix of a longer one."""

from __future__ import annotations

import random

import networkx as nx

from ...errors import VeriloopError

# The shared data holds graphs of 5 to 17 vertices; the first 100 (the paper's
# evaluation size) average 14, which is also the size of the paper's worked example.
DEFAULT_VERTICES = 14
DEFAULT_P = 0.4
# Generation gives up after this many draws in a row that add no new graph: large
# vertex counts are almost never planar at p=0.4, tiny ones run out of distinct graphs.
MAX_FRUITLESS_DRAWS = 50_000


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
