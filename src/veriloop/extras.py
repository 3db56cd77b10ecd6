"""veriloop's optional extras: which modules each one brings and what needs it.

The core install (`pip install veriloop`) runs the loops on server models and the domains
without heavy solvers; the rest comes with an extra (`pip install 'veriloop[planning]'`).

Invariants:
- Asking whether an extra is installed (`missing`, `needs`) imports none of its modules:
  `importlib.util.find_spec` looks for them, so a listing or `--help` stays as light as
  the core, and a module that is broken on import is found here and fails where it is used.
- A feature whose extra is missing fails with `MissingExtra`, one line naming the
  feature, the extra, the missing modules and the pip command; never an ImportError.
- `EXTRAS` names the modules each extra of pyproject.toml installs, no more, no fewer
  (tests/test_extras.py compares them with pyproject's optional-dependencies).
- Figures are the one feature that is skipped rather than refused: where tables are
  written beside them, `can_draw` says in one line that they were not drawn and how to
  get them; a function whose whole job is a figure raises MissingExtra.
- It sits on a row of its own just above the ground floor: it imports only errors.py.
"""

from __future__ import annotations

import importlib.util
import sys

from .errors import MissingExtra

# extra -> (the top-level modules its distributions install, what needs it).
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "local": (("llama_cpp",), "local models in this process: model packs, .gguf files, llamacpp/ ids"),
    "planning": (
        ("pysat", "pddl", "pyperplan", "up_fast_downward", "networkx"),
        "the planning domains (blocksworld, mystery_blocksworld, planning) and graph colouring (coloring)",
    ),
    "critic": (("bm25s", "profanity_check"), "CRITIC's search and toxicity tools and the toxicity domain"),
    "plots": (("matplotlib",), "figures: the reproductions' plots and frontier charts"),
    "ray": (("ray",), "--executor ray: an experiment's shards on a Ray cluster"),
    "inspect": (("inspect_ai",), "veriloop import --format inspect: inspect_ai's evaluation logs"),
}


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a parent that is not a package; a module whose __spec__ is None
        return False


def missing(extra: str) -> tuple[str, ...]:
    """The modules of `extra` that cannot be found, in the table's order (none imported)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; veriloop's extras are {', '.join(EXTRAS)}")
    return tuple(module for module in EXTRAS[extra][0] if not _found(module))


def install_command(extra: str) -> str:
    """The pip command that installs `extra`."""
    return f"pip install 'veriloop[{extra}]'"


def message(extra: str, feature: str, absent: tuple[str, ...]) -> str:
    """The one line for `feature` without `extra` (`absent`: the modules not found)."""
    return (f"{feature} needs veriloop's extra '{extra}', which is not installed (missing: {', '.join(absent)}); "
            f"install it with: {install_command(extra)}")


def require(extra: str, feature: str) -> None:
    """Raise MissingExtra when a module of `extra` cannot be found. `feature` is the
    thing that needs it, as the line starts: "the domain 'blocksworld'"."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(message(extra, feature, absent), extra, absent)


def can_draw(figures: str) -> bool:
    """Whether figures can be drawn. When the extra 'plots' is missing, one line on stderr
    says that `figures` (e.g. "frontier.png") were skipped and how to get them: the
    tables of a run or a reproduction do not need it, so they are written all the same."""
    absent = missing("plots")
    if absent:
        print(f"note: {figures} not drawn: figures need veriloop's extra 'plots' (missing: {', '.join(absent)}); "
              f"{install_command('plots')} and run the command again to draw them", file=sys.stderr)
    return not absent


def marked(name: str, extra: str | None) -> str:
    """`name` as a listing shows it: with the extra it needs when that is missing."""
    return f"{name} (needs veriloop[{extra}])" if extra else name


__all__ = ["EXTRAS", "MissingExtra", "can_draw", "install_command", "marked", "message", "missing", "require"]
