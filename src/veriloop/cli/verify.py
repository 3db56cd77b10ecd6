"""`veriloop verify`: check answers with a domain's sound verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VeriloopError

if TYPE_CHECKING:
    from ..domains.base import Domain, Instance


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

    Batch: prints one JSON verdict per input line, in order; exit status 0 when every line was read, 2 at
    the first bad line (named, with the fields it lacks) or when the file has no lines.
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
    numbered = [(lineno, line) for lineno, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise VeriloopError(f"{batch} has no lines to check")
    for lineno, line in numbered:
        inst, text = batch_line(dom, f"{batch}, line {lineno}", line)
        verdict = dom.verify(inst, text)
        print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))


# What a JSON value that is not an object is called, for errors about batch lines.
_JSON_KINDS = {list: "a JSON array", str: "a JSON string", int: "a JSON number", float: "a JSON number",
               bool: "a JSON boolean", type(None): "JSON null"}


def batch_line(dom: Domain, where: str, line: str) -> tuple[Instance, str]:
    """The instance and answer of one batch line; a VeriloopError naming `where`, what is
    wrong and the line the domain expects."""
    # A domain says which fields make its instance; without that, only "answer" is known.
    from ..datafiles import loads
    from ..domains.base import BaseDomain

    # A plain domain (the Domain protocol alone) names no fields, as BaseDomain's default.
    fields: dict[str, str] = dict(dom.instance_fields) if isinstance(dom, BaseDomain) else {}
    shape = json.dumps({**fields, "answer": "..."}) if fields else f'the instance fields of {dom.name} and "answer"'
    try:
        row = loads(line)
    except json.JSONDecodeError as exc:
        raise VeriloopError(f"{where} is not JSON ({exc.msg} at column {exc.colno}); expected {shape}") from None
    if not isinstance(row, dict):
        raise VeriloopError(f"{where} is {_JSON_KINDS[type(row)]}, not an object; expected {shape}")
    has_answer = "answer" in row
    text = row.pop("answer", None)
    try:
        inst: Instance | None = dom.parse_instance(row)
        problem = ""
    except VeriloopError as exc:
        inst, problem = None, str(exc)
    except (ValueError, KeyError, TypeError, AttributeError):
        inst, problem = None, f"its fields do not make a {dom.name} instance"
    missing = [name for name in fields if inst is None and name not in row] + ["answer"] * (not has_answer)
    if missing:
        quoted = [f'"{name}"' for name in missing]
        names = " and ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
        raise VeriloopError(f"{where} lacks the field{'s' * (len(missing) > 1)} {names}; expected {shape}")
    if inst is None:
        raise VeriloopError(f"{where}: {problem}")
    return inst, str(text)
