"""Evaluating a candidate answer safely: the text is parsed with `ast`, only whole
numbers, + - * /, unary minus and brackets are accepted, and the value is computed with
exact fractions. Model output is never handed to Python's evaluator, so an answer can
only ever be judged, never run. Size and nesting are capped before parsing. A text's value
and literals are kept once computed (immutable: a Fraction and a tuple), since a recorded
run judges the same answers many times over."""

from __future__ import annotations

import ast
from fractions import Fraction
from functools import lru_cache

MAX_EXPRESSION_CHARS = 200
MAX_PAREN_DEPTH = 50


class MalformedExpression(ValueError):
    """The candidate cannot be read as a + - * / expression over whole numbers."""


_BINOPS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BAD_BINOPS: dict[type[ast.operator], str] = {
    ast.Pow: "**",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}
_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Call: "a function call",
    ast.Name: "a name",
    ast.Attribute: "attribute access",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.Subscript: "indexing",
    ast.Compare: "a comparison",
    ast.BoolOp: "and/or",
    ast.Tuple: "a tuple (stray comma?)",
    ast.List: "a list",
}


def _paren_depth(expr: str) -> int:
    depth = deepest = 0
    for ch in expr:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.BinOp) and type(node.op) in _BAD_BINOPS:
        return f"uses `{_BAD_BINOPS[type(node.op)]}`, only + - * / are allowed"
    if isinstance(node, ast.UnaryOp):
        return "uses a unary operator other than minus"
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, float):
            return f"uses the decimal number {value!r}; only whole numbers are allowed"
        return f"uses the constant {value!r}; only whole numbers are allowed"
    name = _NODE_NAMES.get(type(node), type(node).__name__)
    return f"uses {name}, which is not allowed; only whole numbers, + - * / and brackets are"


def _eval(node: ast.AST, literals: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        literals.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _eval(node.operand, literals)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval(node.left, literals)
        right = _eval(node.right, literals)
        op = _BINOPS[type(node.op)]
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if right == 0:
            raise ZeroDivisionError
        return left / right
    raise MalformedExpression(f"The expression {_describe(node)}.")


def evaluate_expression(expr: str) -> tuple[Fraction, list[int]]:
    """The exact value of `expr` and its integer literals, or MalformedExpression.

    Size and nesting are capped before parsing so that neither the parser nor the
    recursive walk can be made to hang or overflow the stack.
    """
    value, literals = _evaluated(expr)
    return value, list(literals)


# A recorded run verifies the same answer many times over (the import, each table, each
# rescoring), and the value is a pure function of the text: a Fraction and a tuple, both
# immutable, so a cached result cannot be changed by its caller.
@lru_cache(maxsize=16384)  # keys of at most MAX_EXPRESSION_CHARS: a few MiB at most
def _evaluated(expr: str) -> tuple[Fraction, tuple[int, ...]]:
    if len(expr) > MAX_EXPRESSION_CHARS:
        raise MalformedExpression(
            f"The expression is {len(expr)} characters long; a Game of 24 answer needs far "
            f"fewer than {MAX_EXPRESSION_CHARS}."
        )
    if _paren_depth(expr) > MAX_PAREN_DEPTH:
        raise MalformedExpression(f"The expression nests brackets more than {MAX_PAREN_DEPTH} deep.")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise MalformedExpression(f"`{expr.strip()}` is not a well-formed arithmetic expression.") from None
    literals: list[int] = []
    try:
        value = _eval(tree.body, literals)
    except ZeroDivisionError:
        raise MalformedExpression(f"`{expr.strip()}` divides by zero.") from None
    except (RecursionError, MemoryError):
        raise MalformedExpression(f"`{expr.strip()}` is too deeply nested to check.") from None
    return value, tuple(literals)


def format_value(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
