"""Game of 24 as a veriloop domain, one module per concern:

    solver.py       an exact solver over fractions, and the puzzles' ease scores
    expressions.py  the safe evaluator: `ast` with a whitelist and exact fractions, never eval
    extraction.py   the expression a reply gives
    domain.py       `Game24`: puzzles, prompts, the sound checker, feedback, the studies' hooks

The names below are this package's public ones; "veriloop.domains.game24:Game24" names
the domain.
"""

from .domain import PROMPT_EXAMPLES, Game24
from .expressions import MAX_EXPRESSION_CHARS, MAX_PAREN_DEPTH, MalformedExpression, evaluate_expression, format_value
from .extraction import extract_expression
from .solver import (
    MAX_NUMBER,
    MIN_NUMBER,
    TARGET,
    all_solvable_puzzles,
    core_operations,
    solution_count,
    solve,
)

__all__ = [
    "MAX_EXPRESSION_CHARS", "MAX_NUMBER", "MAX_PAREN_DEPTH", "MIN_NUMBER", "PROMPT_EXAMPLES", "TARGET", "Game24",
    "MalformedExpression", "all_solvable_puzzles", "core_operations", "evaluate_expression", "extract_expression",
    "format_value", "solution_count", "solve",
]
