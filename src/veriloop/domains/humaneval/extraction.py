"""The function a reply gives, as code that defines the entry point.

Read with regular expressions and `ast` (parsing only: nothing a model wrote is run
here). In order:

1. A fenced block (```python, ``` or an unterminated last one) that defines the entry
   point at the top level (`def NAME(`): the last such block, as written, with helpers
   and imports it holds. A block that does not parse is still taken: running it reports
   its syntax error, which is what the model should hear.
2. Without fences, bare code that defines it: from the imports or decorators just above
   its `def` to the end of the reply, trimmed from the end until it parses (prose after
   the code falls away).
3. A body alone (HumanEval's own completion format: the lines that follow the prompt),
   from the last python (or unlabelled) block, or a reply that is nothing but code: it
   must parse as a function body and return something (a body without `return` is far
   more often a usage example than a function). It is put under the prompt's own
   signature and docstring, indented as a body.

Anything else holds no function: None, which the domain reports as a malformed answer.
"""

from __future__ import annotations

import ast
import re
import textwrap

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("", "python", "py", "python3")
_PREAMBLE_RE = re.compile(r"^(import |from \S+ import |@)")
MAX_TRIM_LINES = 300


def defines(code: str, entry_point: str) -> bool:
    """Whether `code` has `def ENTRY_POINT(` at its top level (read as text, so a block
    cut off by a token limit still counts)."""
    return re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE) is not None


def function_from_reply(text: str, entry_point: str, prompt: str) -> str | None:
    """The code defining `entry_point` that `text` gives (see the module's docstring),
    or None when it gives none. `prompt` is the problem's prompt, whose signature and
    docstring a bare body is put under."""
    blocks = [(tag.lower(), textwrap.dedent(body).strip("\n")) for tag, body in _FENCE_RE.findall(text)]
    for _, body in reversed(blocks):
        if defines(body, entry_point):
            return body
    if not blocks:
        bare = _bare_function(textwrap.dedent(text).strip("\n"), entry_point)
        if bare is not None:
            return bare
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    body = python[-1] if python else (None if blocks else text.strip("\n"))
    if body is not None and _is_body(body):
        return under_signature(prompt, entry_point, body)
    return None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _bare_function(text: str, entry_point: str) -> str | None:
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if defines(line, entry_point)]
    if not starts:
        return None
    start = starts[0]
    while start > 0 and (_PREAMBLE_RE.match(lines[start - 1]) or (not lines[start - 1].strip() and start > 1
                                                                  and _PREAMBLE_RE.match(lines[start - 2]))):
        start -= 1
    chunk = lines[start:]
    if len(chunk) <= MAX_TRIM_LINES:
        for end in range(len(chunk), 0, -1):
            if _parses("\n".join(chunk[:end])) and defines("\n".join(chunk[:end]), entry_point):
                return "\n".join(chunk[:end]).strip("\n")
    # Nothing parses: the def and its indented lines, so its syntax error is reported.
    end = 1
    while end < len(chunk) and (not chunk[end].strip() or chunk[end][:1] in " \t"):
        end += 1
    return "\n".join(chunk[:end]).strip("\n")


def _is_body(code: str) -> bool:
    body = textwrap.dedent(code).strip("\n")
    if not body.strip():
        return False
    try:
        tree = ast.parse("def _body():\n" + textwrap.indent(body, "    ", lambda line: True))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    return any(isinstance(node, ast.Return) and node.value is not None for node in _own_nodes(function))


def _own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of `function`'s body, not those of functions or classes defined in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def signature(prompt: str, entry_point: str) -> str:
    """The prompt from the entry point's `def` to its end: signature and docstring."""
    match = re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", prompt, re.MULTILINE)
    return prompt[match.start():] if match else prompt


def under_signature(prompt: str, entry_point: str, body: str) -> str:
    """`body` as the body of the prompt's own function."""
    indented = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ", lambda line: True)
    return signature(prompt, entry_point).rstrip() + "\n" + indented
