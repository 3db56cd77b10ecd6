"""Graph colouring as a veriloop domain, one module per concern:

    dimacs.py      reading `.col` files (DIMACS-like edges and a stated chromatic number)
    generator.py   random planar graphs, distinct up to isomorphism, from a seeded stream
    chromatic.py   the exact chromatic number by incremental SAT, and a k-colourability test
    answers.py     `vertex: colour` statements read out of replies, and their rendering
    critiques.py   the claims a free-text critique of a colouring makes
    domain.py      `Coloring`: prompts, the sound checker, feedback, the studies' hooks

Vertices are numbered from 0, as in the shared data and the paper's prompts. The names
below are this package's public ones; "veriloop.domains.coloring:Coloring" names the domain.
"""

from ...extras import require

# networkx and pysat are imported by the modules below: without them, importing the
# package is one line naming the extra (the registry checks before it gets here).
require("planning", "the domain 'coloring'")

from .answers import parse_assignment, render_assignment  # noqa: E402
from .chromatic import chromatic_number, is_k_colourable  # noqa: E402
from .dimacs import MAX_VERTICES, Edge, parse_col  # noqa: E402
from .domain import DEFAULT_COUNT, Coloring  # noqa: E402
from .generator import DEFAULT_P, DEFAULT_VERTICES, generate_graphs  # noqa: E402

__all__ = [
    "DEFAULT_COUNT", "DEFAULT_P", "DEFAULT_VERTICES", "MAX_VERTICES", "Coloring", "Edge", "chromatic_number",
    "generate_graphs", "is_k_colourable", "parse_assignment", "parse_col", "render_assignment",
]
