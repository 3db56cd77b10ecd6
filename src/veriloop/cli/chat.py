"""`veriloop chat`: an interactive CRITIC agent in the terminal."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError
from .common import Opt, Session, out, run_on_model, tool_settings
from .options import TYPED, CacheFlags, ModelFlags, grouped

if TYPE_CHECKING:
    from ..agent import AgentStep

COLOURS = {"generator": "cyan", "verifier": "yellow", "tool": "magenta", "critic": "red", "corrector": "green"}


@grouped
def chat(
    model: ModelFlags = TYPED,
    question: Annotated[
        str | None, typer.Option("--question", "-q", help="Answer this one question and exit (no prompt).")
    ] = None,
    max_turns: Annotated[
        int, typer.Option(help="Verify-critique-correct turns per question (the blog: 5).", min=1)
    ] = 5,
    tools: Annotated[str, typer.Option(help="Comma-separated tools the agent may use.")] = "calculator,python,search",
    search_corpus: Opt.SearchCorpus = None,
    search_url: Opt.SearchUrl = None,
    allow_unisolated: Opt.Unisolated = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --question: print the answer and every step as JSON.")
    ] = False,
    cache: CacheFlags = TYPED,
) -> None:
    """An interactive CRITIC agent in the terminal.

    Each answer is checked claim by claim with tools (generator -> verifier -> tool ->
    critic -> corrector, at most --max-turns turns), every step shown as it happens.
    Type a question; an empty line, "exit" or Ctrl-D ends the session. The search tool
    is there only with --search-corpus or --search-url."""
    from ..agent import ask
    from ..tools import TOOLS
    from ..tools.config import build_toolbox

    names = [t.strip() for t in tools.split(",") if t.strip()]
    for name in names:
        if name not in TOOLS:
            raise VeriloopError(TOOLS.unknown(name))
    toolbox = build_toolbox(tool_settings(search_corpus, search_url, "offline", allow_unisolated, names=names))
    if not toolbox.names:
        raise VeriloopError("no tool is available (search needs --search-corpus or --search-url)")

    def show(step: AgentStep) -> None:
        if as_json:
            return
        head = f"[{step.turn}] {step.role}" + (f" ({step.observation.tool})" if step.observation else "")
        out.print(f"[bold {COLOURS.get(step.role, 'white')}]{head}[/]", highlight=False)
        out.print(step.text, markup=False, highlight=False)

    async def session(s: Session) -> None:
        history: list[tuple[str, str]] = []
        while True:
            if question is not None:
                q = question
            else:
                try:
                    q = await asyncio.to_thread(input, "question> ")
                except EOFError:
                    break
            q = q.strip()
            if not q or q.lower() in ("exit", "quit"):
                break
            result = await ask(s.model, q, toolbox, max_turns=max_turns, history=history, on_step=show)
            history.append((q, result.answer))
            if as_json:
                print(json.dumps({
                    "question": q, "answer": result.answer, "stop_reason": result.stop_reason,
                    "steps": [{"turn": s.turn, "role": s.role, "text": s.text, "claim": s.claim} for s in result.steps],
                }, indent=2, ensure_ascii=False))
            else:
                out.print(f"[bold]answer[/] ({result.stop_reason}):", highlight=False)
                out.print(result.answer, markup=False, highlight=False)
            if question is not None:
                break

    run_on_model(model.choice(cache), session)
