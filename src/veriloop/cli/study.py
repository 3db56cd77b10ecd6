"""`veriloop study ...`: one role of the LLM measured on its own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .common import Session, out, run_on_model, slug
from .options import TYPED, CacheFlags, ModelFlags, grouped

if TYPE_CHECKING:
    from ..studies.verification import JudgedItem


@grouped
def verification(
    domain: Annotated[
        str, typer.Option(help="Domain (game24, coloring, blocksworld, mystery_blocksworld).")
    ] = "game24",
    model: ModelFlags = TYPED,
    n: Annotated[int, typer.Option("-n", help="Instances.", min=1)] = 5,
    offset: Annotated[int, typer.Option(help="Skip this many instances first.", min=0)] = 0,
    data: Annotated[Path | None, typer.Option(help="Instance file or folder (default: generated).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Study directory (resumable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for candidate generation and calls.")] = 0,
    critiques: Annotated[bool, typer.Option(help="Also ask for a critique of every wrong candidate.")] = True,
    cache: CacheFlags = TYPED,
) -> None:
    """How good is the LLM as a verifier? Judge candidates of known correctness (correct,
    one-error, non-optimal, random, the model's own) with the plain and the chain-of-thought
    prompt; print accuracy, false positive and false negative rates (paper Tables 2, A2)."""
    from ..domains import get_domain
    from ..studies.verification import game24_evaluation_table, report_table, run_verification_study, verification_table
    from ..tables import print_markdown

    dom = get_domain(domain)
    instances = dom.load_instances(str(data) if data else None, n=n, offset=offset)
    study_dir = out_dir or Path("runs") / f"study-verification-{domain}-{slug(model.model)}-seed{seed}"

    async def job(s: Session) -> list[JudgedItem]:
        return await run_verification_study(
            s.model, dom, instances, study_dir, seed=seed, critiques=critiques, on_progress=s.progress.update
        )

    choice = model.choice(cache)
    items, calls = run_on_model(choice, job, progress=f"{domain}: verification study", kept_in=study_dir)
    table = verification_table(items, [domain])
    (study_dir / "table2.md").write_text(table)
    print_markdown(out, table)
    for table in (game24_evaluation_table(items), report_table(items, domain, "critique")):
        if table:
            print_markdown(out, table)
    out.print(f"{len(items)} judged items, {calls} backend calls; records in {study_dir}/", highlight=False)
