"""`veriloop verify`: check answers with a domain's sound verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError

if TYPE_CHECKING:
    from ..domains.base import Domain


def verify(
    domain: Annotated[
        str, typer.Argument(help="Domain whose sound verifier to use (game24, coloring, blocksworld, ...).")
    ],
    batch: Annotated[
        Path | None, typer.Option(help='JSONL file of {"instance": ..., "answer": ...}; writes one verdict per line.')
    ] = None,
    instance: Annotated[str | None, typer.Option(help='One instance (game24), e.g. "1 1 4 6".')] = None,
    graph: Annotated[Path | None, typer.Option(help="A .col graph file (coloring).")] = None,
    domain_file: Annotated[Path | None, typer.Option(help="A PDDL domain file (planning).")] = None,
    problem: Annotated[Path | None, typer.Option(help="A PDDL problem file (planning).")] = None,
    answer: Annotated[str | None, typer.Option(help="The answer to check.")] = None,
    plan_text: Annotated[str | None, typer.Option(help="The plan to check (planning; same as --answer).")] = None,
) -> None:
    """Check answers with a domain's sound verifier.

    One answer: prints the verdict as JSON; exit status 0 if it is correct, 1 if not.

    Batch: prints one JSON verdict per input line, in order; exit status 0 when every line was read.
    Batch lines hold the instance fields and "answer": {"instance": "1 1 4 6", ...} (game24),
    {"graph": "<.col text>", ...} (coloring), {"domain": "<pddl>", "problem": "<pddl>", ...} (planning).
    """
    from ..domains import get_domain

    dom = get_domain(domain)
    answer = answer if answer is not None else plan_text
    given = {
        key: str(value)
        for key, value in (
            ("instance", instance), ("graph_file", graph), ("domain_file", domain_file), ("problem", problem)
        )
        if value is not None
    }
    if batch is not None:
        if given or answer is not None:
            raise VeriloopError("give either --batch or one instance with --answer, not both")
        verify_batch(dom, batch)
        return
    if not given or answer is None:
        raise VeriloopError(
            "give the instance (--instance, --graph or --domain-file with --problem) and --answer, or --batch FILE"
        )
    verdict = dom.verify(dom.parse_instance(given), answer)
    print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))
    raise typer.Exit(0 if verdict.ok else 1)


def verify_batch(dom: Domain, batch: Path) -> None:
    """One JSON verdict per line of the batch file, in order."""
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise VeriloopError(f"cannot read {batch}: {exc.strerror}") from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text = row.pop("answer")
            inst = dom.parse_instance(row)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise VeriloopError(
                f'{batch}, line {lineno}: expected a JSON object with the instance fields and "answer" ({exc})'
            ) from None
        except VeriloopError as exc:
            raise VeriloopError(f"{batch}, line {lineno}: {exc}") from None
        verdict = dom.verify(inst, str(text))
        print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))
