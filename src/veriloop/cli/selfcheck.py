"""`veriloop selfcheck`: check one step-by-step solution with SelfCheck."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError
from .common import Session, out, run_on_model
from .options import TYPED, CacheFlags, ModelFlags, grouped

if TYPE_CHECKING:
    from ..selfcheck import SolutionCheck


def read_text_arg(value: str | None, path: Path | None, what: str) -> str:
    """The text given as --WHAT, or read from the file given as --WHAT-file (- for stdin)."""
    if (value is None) == (path is None):
        raise VeriloopError(
            f"give the {what} either as text (--{what}) or as a file (--{what}-file; - for standard input)"
        )
    if value is not None:
        return value
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    except (OSError, UnicodeDecodeError) as exc:
        raise VeriloopError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


@grouped
def selfcheck(
    question: Annotated[str | None, typer.Option(help="The question, as text.")] = None,
    question_file: Annotated[
        Path | None, typer.Option(help="The question, from a file (- for standard input).")
    ] = None,
    solution: Annotated[str | None, typer.Option(help="The step-by-step solution to check, as text.")] = None,
    solution_file: Annotated[
        Path | None, typer.Option(help="The solution, from a file (- for standard input).")
    ] = None,
    model: ModelFlags = TYPED,
    threshold: Annotated[
        float, typer.Option(help="Accept when the confidence is above this.", min=0.0, max=1.0)
    ] = 0.6,
    max_steps: Annotated[int, typer.Option(help="Steps checked (the first ones).", min=1)] = 20,
    lambda_contradict: Annotated[float, typer.Option(help="Weight of a contradicted step (λ₋₁).", min=0.0)] = 1.0,
    lambda_unrelated: Annotated[
        float, typer.Option(help="Weight of an unrelated or unreadable step (λ₀).", min=0.0)
    ] = 0.3,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole check as JSON.")] = False,
    cache: CacheFlags = TYPED,
) -> None:
    """Check any step-by-step solution with SelfCheck: for each step, what it aims at,
    what it uses, an independent redo, and whether the redo supports it; then the
    solution's confidence. Steps are "Step k:" lines (else numbered lines, paragraphs or
    lines). Exit status 0 if the confidence is above --threshold, 1 if not."""
    from ..selfcheck import CheckSettings, check_solution

    question_text = read_text_arg(question, question_file, "question")
    solution_text = read_text_arg(solution, solution_file, "solution")
    if not question_text.strip() or not solution_text.strip():
        raise VeriloopError("the question and the solution must not be empty")
    settings = CheckSettings(
        lambda_contradict=lambda_contradict, lambda_unrelated=lambda_unrelated, max_steps=max_steps
    )

    async def job(s: Session) -> SolutionCheck:
        return await check_solution(s.model, question_text, solution_text, settings, on_progress=s.progress.update)

    choice = model.choice(cache)
    check, _ = run_on_model(choice, job, progress="selfcheck: steps checked")
    accepted = check.confidence > threshold
    if as_json:
        print(json.dumps({**check.model_dump(), "accepted": accepted, "threshold": threshold}, ensure_ascii=False))
    else:
        show_check(check, model.model, threshold, accepted)
    raise typer.Exit(0 if accepted else 1)


def show_check(check: SolutionCheck, model: str, threshold: float, accepted: bool) -> None:
    """The check as a table of steps (fitted to the terminal) and a line with the confidence."""
    from ..tables import fit_table

    names = {1: "supports", 0: "not related", -1: "CONTRADICTS"}
    rows = []
    for st in check.steps:
        uses = ", ".join([f"info {i}" for i in st.facts_used] + [f"step {i}" for i in st.steps_used]) or "-"
        result = names[st.result] + (" (unreadable)" if st.unreadable else "")
        rows.append([f"{st.index}. {st.text[:160]}", st.target, uses, st.regenerated[:240], result])
    headers = ("step", "aims to", "uses", "independent redo", "result")
    out.print(fit_table(headers, rows, out.width, title=f"SelfCheck with {model}", right=[False] * 5))
    capped = (
        f"; {check.steps_total - check.steps_checked} later steps not checked (--max-steps)" if check.capped else ""
    )
    out.print(
        f"confidence {check.confidence:.3f} ({len(check.contradicted)} contradicted, {check.unrelated} unrelated "
        f"of {check.steps_checked} steps{capped}): {'accepted' if accepted else 'rejected'} at threshold {threshold}",
        highlight=False,
    )
