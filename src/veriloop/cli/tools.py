"""`veriloop tools ...`: the tools CRITIC's verifier can call."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated

import typer

from ..errors import VeriloopError
from .common import out
from .options import TYPED, ToolFlags, grouped


def tools_list() -> None:
    """Name and description of every tool (what the model is shown).

    A tool whose extra is not installed is marked "(needs veriloop[EXTRA])" instead."""
    from ..extras import install_command
    from ..tools import TOOLS
    from ..tools.config import ToolSettings, build_tools

    absent = {name: extra for name in TOOLS if (extra := TOOLS.needs(name))}
    for tool in build_tools(ToolSettings(names=tuple(n for n in TOOLS if n != "search" and n not in absent))):
        out.print(f"{tool.name}: {tool.description}", highlight=False)
    for name, extra in absent.items():
        if name != "search":
            out.print(f"{TOOLS.shown(name)}: {install_command(extra)}", highlight=False, markup=False)
    out.print(
        f"{TOOLS.shown('search')}: needs --search-corpus FILE|FOLDER or --search-url URL "
        "(see `veriloop tools run --help`)",
        highlight=False, markup=False,
    )


@grouped
def tools_run(
    name: Annotated[str, typer.Argument(help="Tool name: python, calculator, search, toxicity or a plugin's.")],
    tool: ToolFlags = TYPED,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the whole observation as JSON (text, ok, data, seconds)."
    )] = False,
) -> None:
    """Read the tool's input on stdin and print its observation, as the model would see it.

    Exit status 0 when the tool worked, 1 when it reported a failure (error, time-out, refusal).

    Examples:

    \b
    echo "sqrt(2)*3" | veriloop tools run calculator
    printf 'answer = 6*7' | veriloop tools run python
    echo "capital of France" | veriloop tools run search --search-corpus d.jsonl
    """
    from ..tools import TOOLS
    from ..tools.config import build_toolbox

    if name not in TOOLS:
        raise VeriloopError(TOOLS.unknown(name))
    if name == "search" and tool.search_corpus is None and not (tool.search_url or os.environ.get("VERILOOP_SEARCH_URL")):
        raise VeriloopError("the search tool needs --search-corpus FILE|FOLDER or --search-url URL")
    settings = tool.settings(names=[name])
    settings.use_cache = False
    text = sys.stdin.read()
    obs = asyncio.run(build_toolbox(settings).call(name, text))
    print(obs.model_dump_json(indent=2) if as_json else obs.text)
    raise typer.Exit(0 if obs.ok else 1)
