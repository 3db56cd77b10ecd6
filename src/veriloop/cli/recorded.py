"""`veriloop import`: recorded answers into a run directory; `veriloop rescore`: a run's
recorded answers judged again by another verifier."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import VeriloopError
from .common import out, slug, view_hint

if TYPE_CHECKING:
    from ..recorded.answers import AnswerLine, Problem

# Replies not readable as answers are listed on the terminal up to this many (all of them in
# import.json): a paper's release can hold hundreds.
SHOWN = 10
FORMATS = ("answers", "self-verification", "inspect")
FORMAT_HELP = (
    "answers: veriloop's interchange format, JSON lines of {instance_id, response or responses, condition, model, "
    "feedback, messages, final}; self-verification: the self-verification authors' released runs "
    "(self_verification_outputs or one of its folders); inspect: inspect_ai evaluation logs (.eval or .json, or a "
    "folder of them; needs the extra veriloop[inspect])."
)


def import_command(
    source: Annotated[Path, typer.Argument(help="The recorded answers: a file or folder, as --format reads it.")],
    domain: Annotated[str, typer.Option(help="The domain the answers are for (its verifier checks every one).")],
    data: Annotated[Path | None, typer.Option(
        help="The domain's instances the answers name (as `veriloop run --data` takes them; default: the domain's "
        "own). self-verification: the folder of DIMACS graphs (default: graph_coloring beside SOURCE).")] = None,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP, metavar="|".join(FORMATS))] = "answers",
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Run directory to write (default: runs/import-SOURCE-DOMAIN). Importing the same source "
        "again replaces what it wrote.")] = None,
    domain_option: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", help="A domain setting KEY=VALUE, repeatable (as `veriloop run` takes it).")] = None,
) -> None:
    """Import recorded answers into a run directory: each answer checked by the domain's
    verifier and scored against ground truth, so `veriloop view`, `rescore` and every
    metric read it like a run veriloop made.

    A line that cannot be imported (not JSON, no reply, an instance the data does not
    hold) is skipped and reported in one line naming file, line and reason; a reply the
    domain cannot read is a recorded wrong answer, reported the same way. Exit status 0
    when every line was imported, 1 when some were skipped, 2 when none could be.
    """
    from ..domains import get_domain
    from ..experiment.identity import content_sha256
    from ..recorded.importer import import_lines
    from ..report import print_summary
    from .run import domain_options

    if fmt not in FORMATS:
        raise VeriloopError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    dom = get_domain(domain, **domain_options(domain_option or []))
    run_dir = out_dir or Path("runs") / f"import-{slug(source.stem or source.name)}-{slug(domain)}"
    config: dict[str, object] = {
        "imported_from": str(source.resolve()), "format": fmt, "source_sha256": content_sha256(source),
        "data": str(data) if data else None, "data_sha256": content_sha256(data),
        "domain_options": domain_options(domain_option or []),
    }
    if fmt == "self-verification":
        from ..recorded.selfverification import add_judgement, read_source

        recorded = read_source(source, dom, data)
        lines = recorded.lines
        config["model_name"] = recorded.model
        result = import_lines(lines, dom, recorded.instances.get, run_dir, config,
                              amend=lambda t: add_judgement(t, recorded))
    else:
        instances = {i.id: i for i in dom.load_instances(str(data) if data else None)}
        if fmt == "answers":
            from ..recorded.answers import read_answers

            lines_iter = read_answers(source)
        else:
            from ..recorded.inspect_log import inspect_answers

            lines_iter = _parsed(inspect_answers(source))
        hint = f" ({data})" if data else f" (the {dom.name} domain's own instances; give --data FILE)"
        result = import_lines(lines_iter, dom, instances.get, run_dir, config, data_hint=hint)
    for problem in result.skipped:
        print(problem, file=sys.stderr)
    for problem in result.unreadable[:SHOWN]:
        print(problem, file=sys.stderr)
    if len(result.unreadable) > SHOWN:
        print(f"... and {len(result.unreadable) - SHOWN} more replies not readable as answers, each listed in "
              f"{run_dir / 'import.json'}", file=sys.stderr)
    print_summary(out, result.summaries, f"imported from {source} ({fmt}, {dom.name})")
    skipped = f", {len(result.skipped)} skipped (listed above)" if result.skipped else ""
    out.print(f"{result.imported} of {result.lines} recorded lines imported{skipped}; "
              f"{len(result.unreadable)} replies not readable as answers; records in {run_dir}/",
              highlight=False, markup=False)
    out.print(view_hint(run_dir), highlight=False, markup=False)
    if result.skipped:
        raise typer.Exit(1)


def _parsed(raw: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, AnswerLine | Problem]]:
    """(where, dict) pairs as (where, AnswerLine | Problem)."""
    from ..recorded.answers import parse_line

    for where, item in raw:
        yield where, parse_line(where, item)

