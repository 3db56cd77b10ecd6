"""Errors meant for the person at the keyboard.

A `VeriloopError` carries one line that says what is wrong and how to fix it; the CLI
prints that line and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class VeriloopError(Exception):
    """A problem the user can fix (bad input, missing model, unreadable file).

    It carries one line that says what is wrong and how to fix it; the command line
    prints that line and exits non-zero instead of showing a traceback. Subclasses name
    some kinds of problem, e.g. `CheckError`: a user's check failed.

    Examples:
        ```python
        import veriloop

        try:
            veriloop.correct(lambda messages: "8", "Name an even number.")  # no check, no reference
        except veriloop.VeriloopError as error:
            assert "needs a check" in str(error)
            print(error)
        ```
    """


class ModelNotInstalled(VeriloopError):
    pass


class CorruptModelFile(VeriloopError):
    pass


class ModelTransportError(VeriloopError):
    """The backend could not be reached after retries; never shown to the model."""


class DataFileError(VeriloopError):
    pass


class MissingExtra(VeriloopError):
    """A feature whose optional extra is not installed (`veriloop.extras.require`): one
    line naming the feature, the extra, the modules not found and the pip command.
    `extra` and `missing` say the same for a program."""

    def __init__(self, message: str, extra: str, missing: tuple[str, ...]) -> None:
        super().__init__(message)
        self.extra = extra
        self.missing = missing

    def __reduce__(self) -> tuple[type[MissingExtra], tuple[str, str, tuple[str, ...]]]:
        # Pickled whole (a Ray worker's error reaches the driver so): Exception's own
        # reduce would call the class with the message alone.
        return type(self), (str(self), self.extra, self.missing)


class ContextOverflow(VeriloopError):
    """The conversation no longer fits the model's context window."""


class SpecError(ValueError):
    """A value of an experiment file that is wrong in the context of the whole file, with
    the key path it is at (so the message can point at its line). Raised inside the
    spec's validators (hence a ValueError), by the spec and by the reports' checks."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


# What a value of each pydantic error family must be, in words.
_WANTED = {"int": "a whole number", "float": "a number", "bool": "true or false", "string": "text",
           "list": "a list", "tuple": "a list", "set": "a list", "dict": "a mapping of fields",
           "model": "a mapping of fields"}
_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}


def invalid_options_text(exc: ValidationError, owner: str, options: Iterable[str], noun: str = "option") -> str:
    """One line in words for pydantic's report on options a user gave `owner` (a strategy,
    a record): which option is unknown and which it takes, or which value is wrong and
    what it must be. Pydantic's own wording is written for programmers, not users."""
    known = ", ".join(options)
    problems = []
    for error in exc.errors(include_url=False):
        key = ".".join(str(part) for part in error["loc"]) or owner
        kind, ctx = error["type"], error.get("ctx") or {}
        value = repr(error.get("input"))
        value = value if len(value) <= 60 else value[:57] + "..."
        if kind == "extra_forbidden":
            takes = f"its {noun}s are {known}" if known else f"it takes no {noun}s"
            problems.append(f"{owner} has no {noun} {key!r}; {takes}")
        elif kind == "missing":
            problems.append(f"{owner} needs the {noun} {key}")
        elif kind in _BOUNDS:
            words, bound = _BOUNDS[kind]
            problems.append(f"{owner}'s {noun} {key} must be {words} {ctx.get(bound)}, not {value}")
        elif kind in ("value_error", "assertion_error") and "error" in ctx:
            problems.append(f"{owner}'s {noun} {key}: {ctx['error']}")
        elif kind == "literal_error" and "expected" in ctx:
            problems.append(f"{owner}'s {noun} {key} must be {ctx['expected']}, not {value}")
        elif kind.split("_")[0] in _WANTED:
            problems.append(f"{owner}'s {noun} {key} needs {_WANTED[kind.split('_')[0]]}, not {value}")
        else:
            problems.append(f"{owner}'s {noun} {key} cannot be {value}")
    return "; ".join(problems)
