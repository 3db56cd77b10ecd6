"""Reading an experiment file: TOML in, `--set` overrides applied, errors that name the
file's line and key; and the experiment files shipped with veriloop, by name.

Invariants: an override is applied to the parsed file before validation, so a value
`--set` gives is checked like one the file holds, and its errors say `--set` instead of a
line; reading a file never runs code from it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..datafiles import deepest_line
from ..errors import SpecError, VeriloopError
from .schema import Experiment

# One key of the file set to a value: a dotted key path (`domains.0.n`, list items by
# index) and the value, as a command's option gives it or `--set KEY=VALUE` reads.
Override = tuple[str, Any]


def load_experiment(source: str | Path, sets: Sequence[str | Override] = ()) -> Experiment:
    """The experiment in a TOML file, with overrides applied in order.

    Relative paths in the file (`data`, `file`, `check` files, `data_root`) are read from
    the directory veriloop runs in, not the file's. To find a shipped experiment by name,
    `veriloop.eval_experiment` takes its name too.

    Args:
        source: The TOML file's path.
        sets: Overrides (default: none), as `--set` items typed `KEY=VALUE` (VALUE read
            as TOML when it parses, e.g. `seeds=[0,1]`, else as text) or `(KEY, VALUE)`
            pairs. KEY is a dotted key path; list items go by index (`domains.0.n=5`).

    Returns:
        The experiment, validated.

    Raises:
        VeriloopError: When the file does not exist, cannot be read, is not UTF-8 or not
            valid TOML; when an override is malformed or sets a key inside a value; or
            when the experiment is not valid. Each message names the file, the line and
            the key (or `--set`, for a key an override set).

    Examples:
        ```python
        from pathlib import Path

        import veriloop

        Path("demo.toml").write_text('''name = "demo"
        strategies = ["standard", "backprompt:max_rounds=3"]
        [models.small]
        id = "smollm2-135m"
        [[domains]]
        name = "game24"
        ''')
        experiment = veriloop.load_experiment("demo.toml", ["n=3", ("seeds", [0, 1])])
        assert (experiment.n, experiment.seeds, len(experiment.cells())) == (3, [0, 1], 4)
        try:
            veriloop.load_experiment("demo.toml", ["n=0"])
        except veriloop.VeriloopError as error:
            print(error)  # demo.toml, --set: n: Input should be greater than or equal to 1
        ```
    """
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VeriloopError(f"{path}: no such experiment file (veriloop eval --list shows the shipped ones)") from None
    except OSError as exc:
        raise VeriloopError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise VeriloopError(f"{path}, line {line}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); save the file "
                            "as UTF-8") from None
    return parse_experiment(text, str(path), sets)


def parse_experiment(text: str, where: str = "<experiment>", sets: Sequence[str | Override] = ()) -> Experiment:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise VeriloopError(f"{where}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise VeriloopError(f"{where}, line {deepest_line(text)}: arrays or tables nested too deeply to read") from None
    return _validated(data, where, sets, key_lines(text))


def experiment_from_data(data: Mapping[str, Any], where: str = "experiment",
                         sets: Sequence[str | Override] = ()) -> Experiment:
    """The experiment in `data`, shaped like the file (what tomllib gives for it), with
    overrides as load_experiment applies them. Values as a file has them: None is a key
    left out, a tuple a list, any other value (a Path) its text. Errors read as a file's
    whose top-level keys stand one to a line, in `data`'s order."""
    plain = _plain(data)
    lines: dict[tuple[str | int, ...], int] = {(key,): number for number, key in enumerate(plain, start=1)}
    return _validated(plain, where, sets, lines)


def _validated(data: dict[str, Any], where: str, sets: Sequence[str | Override],
               lines: Mapping[tuple[str | int, ...], int]) -> Experiment:
    overridden = [apply_set(data, item) for item in sets]
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        raise VeriloopError(_explain(exc, lines, where, overridden)) from None


def _plain(value: Any) -> Any:
    """`value` as TOML data: mappings with text keys and no None values, lists, text,
    numbers and booleans."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def parse_set(item: str) -> Override:
    """A `--set KEY=VALUE` item as its key and value: VALUE read as TOML when it parses
    (`seeds=[0,1]`, `n=5`, `name="5"`), else as text."""
    key, eq, raw = item.partition("=")
    if not eq or not all(part.strip() for part in key.split(".")):
        raise VeriloopError(f"--set {item!r} should look like KEY=VALUE, e.g. n=5 or models.main.id=smollm2-135m")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:
        raise VeriloopError(f"--set {key.strip()}=...: the value is nested too deeply to read") from None
    return key.strip(), value


def apply_set(data: dict[str, Any], item: str | Override) -> tuple[str | int, ...]:
    """Put one override into the parsed file, `--set` text (parse_set) or a (KEY, VALUE)
    pair; list items are addressed by index (`domains.0.n=5`). Returns the key path as
    validation errors locate keys (list items by number)."""
    key, value = parse_set(item) if isinstance(item, str) else item
    shown = item if isinstance(item, str) else f"{key}={value!r}"
    path = tuple(part.strip() for part in key.split("."))
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        node = _child(node, part, path[: depth + 1], shown)
    last = path[-1]
    if isinstance(node, list):
        node[_index(node, last, path, shown)] = _plain(value)
    elif isinstance(node, dict):
        node[last] = _plain(value)
    else:
        raise VeriloopError(f"--set {shown!r}: {'.'.join(path[:-1])} is a value, not a table")
    return tuple(int(p) if p.isdigit() else p for p in path)


def overrides(values: Mapping[str, Any]) -> list[Override]:
    """A command's options as overrides of the file: (KEY, VALUE) for each one given (None:
    not given, the file's value stays)."""
    return [(key, value) for key, value in values.items() if value is not None]


def _child(node: Any, part: str, so_far: tuple[str, ...], item: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, so_far, item)]
    if isinstance(node, dict):
        return node.setdefault(part, {})
    raise VeriloopError(f"--set {item!r}: {'.'.join(so_far[:-1])} is a value, not a table")


def _index(node: list[Any], part: str, so_far: tuple[str, ...], item: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise VeriloopError(
            f"--set {item!r}: {'.'.join(so_far[:-1]) or 'the list'} has {len(node)} entries, "
            f"numbered 0 to {len(node) - 1}; {part!r} is not one of them"
        )
    return int(part)


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """The line (1-based) where each key path of a TOML text is written, tables included:
    `[models.judge]` -> ("models", "judge"), the second `[[domains]]` -> ("domains", 1),
    `n = 3` under it -> ("domains", 1, "n"). Enough of TOML for pointing at errors."""
    lines: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    arrays: dict[tuple[str | int, ...], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("[["):
            name = _key_path(line.strip("[] "))
            arrays[name] = arrays.get(name, -1) + 1
            table = (*name, arrays[name])
            lines.setdefault(table, number)
        elif line.startswith("["):
            table = _key_path(line.split("]")[0].strip("[ "))
            lines.setdefault(table, number)
        elif "=" in line and not line.startswith("#"):
            key = line.split("=", 1)[0].strip()
            if re.fullmatch(r"[A-Za-z0-9_\-.\"' ]+", key):
                lines.setdefault((*table, *_key_path(key)), number)
    return lines


def _key_path(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in text.split("."))


def _explain(exc: ValidationError, lines: Mapping[tuple[str | int, ...], int], where: str,
             overridden: list[tuple[str | int, ...]]) -> str:
    """The first few errors of a validation in words: where (line and key), what is wrong."""
    parts = []
    for error in exc.errors()[:5]:
        cause = (error.get("ctx") or {}).get("error")
        loc = tuple(error["loc"]) + (cause.path if isinstance(cause, SpecError) else ())
        # A union's member names ("str", "list[str]") are not part of the key.
        loc = tuple(p for p in loc if not (isinstance(p, str) and (p in ("str", "int") or "[" in p)))
        key = ".".join(str(p) for p in loc)
        line = _line_of(loc, lines)
        set_by = any(loc[: len(o)] == o or o[: len(loc)] == loc for o in overridden if loc)
        place = "--set" if set_by else f"line {line}" if line else "top level"
        parts.append(f"{where}, {place}: {key + ': ' if key else ''}{_message(error, loc)}")
    more = len(exc.errors()) - 5
    return "\n".join(parts) + (f"\n(and {more} more)" if more > 0 else "")


def _line_of(loc: tuple[Any, ...], lines: Mapping[tuple[Any, ...], int]) -> int | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _message(error: Mapping[str, Any], loc: tuple[Any, ...]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        known = _fields_at(loc[:-1])
        return "unknown key" + (f"; the keys here are: {', '.join(known)}" if known else "")
    if kind == "missing":
        return "required, but missing"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The keys a table at `loc` may hold, following the spec's field types."""
    import typing

    cls: Any = Experiment
    for part in loc:
        if isinstance(part, int) or not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            continue
        if part not in cls.model_fields:
            if cls is Experiment and part not in cls.model_fields:
                return []
            continue
        annotation = cls.model_fields[part].annotation
        while typing.get_origin(annotation) is not None:
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = args[-1]
        cls = annotation
    return list(cls.model_fields) if isinstance(cls, type) and issubclass(cls, BaseModel) else []


# ---- the experiment files shipped with veriloop ------------------------------------------

SHIPPED = Path(__file__).resolve().parent.parent / "experiment_files"


def shipped_experiments() -> dict[str, Path]:
    """The experiment files in the package, by name (the file's stem)."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.toml"))}


def find_experiment(name: str | Path) -> Path:
    """An experiment file by path, or a shipped one by name."""
    path = Path(name)
    if path.exists() or path.suffix == ".toml" or len(path.parts) > 1:
        return path
    shipped = shipped_experiments()
    if str(name) in shipped:
        return shipped[str(name)]
    raise VeriloopError(
        f"no experiment file {name!r}: give a path to a .toml file or one of the shipped experiments: "
        f"{', '.join(shipped)}"
    )


def describe(path: Path) -> tuple[str, str]:
    """A shipped file's name and the first line of its description."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    lines = str(data.get("description", "")).strip().splitlines()
    return str(data.get("name", path.stem)), lines[0] if lines else ""
