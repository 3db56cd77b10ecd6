"""`veriloop import`: recorded answers into a run directory; `veriloop rescore`: a run's
recorded answers judged again by another verifier."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from ..errors import VeriloopError
from ..printable import printable
from .common import DEFAULT_MODEL, Session, out, run_on_model, slug, view_hint
from .options import TYPED, CacheFlags, ServerFlags, grouped

if TYPE_CHECKING:
    from ..models.base import Model
    from ..recorded.answers import AnswerLine, Problem

DEFAULT_JUDGE = DEFAULT_MODEL
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
    from ..recorded.importer import import_lines
    from ..runs.identity import content_sha256
    from ..tables import print_summary
    from .run import domain_options

    if fmt not in FORMATS:
        raise VeriloopError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "inspect":  # before the domain and its data are loaded for nothing
        from ..extras import require

        require("inspect", "veriloop import --format inspect")
    dom = get_domain(domain, **domain_options(domain_option or []))
    run_dir = out_dir or Path("runs") / f"import-{slug(source.stem or source.name)}-{slug(domain)}"
    # The source's hash is taken once the source has been checked (a device, a file over the
    # caps): hashing reads every byte of it.
    config: dict[str, object] = {
        "imported_from": str(source.resolve()), "format": fmt, "source_sha256": None,
        "data": str(data.resolve()) if data else None, "data_sha256": content_sha256(data),
        "domain_options": domain_options(domain_option or []),
    }
    if fmt == "self-verification":
        from ..recorded.selfverification import add_judgement, read_source

        recorded = read_source(source, dom, data)
        lines = recorded.lines
        config["source_sha256"] = content_sha256(source)
        config["model_name"] = recorded.model
        if recorded.graphs is not None:
            # The graphs read, also those found beside SOURCE: a config names its data, as a run's does.
            config["data"], config["data_sha256"] = str(recorded.graphs.resolve()), content_sha256(recorded.graphs)
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
        config["source_sha256"] = content_sha256(source)
        hint = f" ({data})" if data else f" (the {dom.name} domain's own instances; give --data FILE)"
        result = import_lines(lines_iter, dom, instances.get, run_dir, config, data_hint=hint)
    # Names, replies and paths come from the user's files: printed with control characters escaped.
    for problem in result.skipped:
        print(printable(problem), file=sys.stderr)
    for problem in result.unreadable[:SHOWN]:
        print(printable(problem), file=sys.stderr)
    if len(result.unreadable) > SHOWN:
        print(printable(f"... and {_unreadable(len(result.unreadable) - SHOWN, 'more ')}, each listed in "
                        f"{run_dir / 'import.json'}"), file=sys.stderr)
    print_summary(out, result.summaries, printable(f"imported from {source} ({fmt}, {dom.name})"),
                  _labels(result.summaries))
    skipped = f", {len(result.skipped)} skipped (listed above)" if result.skipped else ""
    out.print(printable(f"{result.imported} of {result.lines} recorded lines imported{skipped}; "
                        f"{_unreadable(len(result.unreadable))}; records in {run_dir}/"),
              highlight=False, markup=False)
    out.print(printable(view_hint(run_dir)), highlight=False, markup=False)
    if result.skipped:
        raise typer.Exit(1)


def _labels(summaries: Iterable[Any]) -> dict[str, str]:
    """Each condition's name as the tables print it (from a user's file: control characters escaped)."""
    return {s.strategy: printable(s.strategy) for s in summaries}


def _unreadable(count: int, more: str = "") -> str:
    if count == 1:
        return f"1 {more}reply not readable as an answer"
    return f"{count} {more}replies not readable as answers"


def _parsed(raw: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, AnswerLine | Problem]]:
    """(where, dict) pairs as (where, AnswerLine | Problem)."""
    from ..recorded.answers import parse_line

    for where, item in raw:
        yield where, parse_line(where, item)



@grouped
def rescore_command(
    source: Annotated[Path, typer.Argument(help="A run directory: one `veriloop import` or `veriloop run` wrote.")],
    verifier: Annotated[str, typer.Option(
        help="The verifier that judges every recorded answer: sound, llm, llm-cot, critic (with the domain's tools), "
        "critic-notool, selfcheck, global-check (with @T a threshold), visible, hidden, generated (code: tests run in "
        "the sandbox), or a plugin's (veriloop plugins).")] = "llm",
    check: Annotated[str | None, typer.Option(
        metavar="SPEC", help="A check function as the verifier instead: package.module:function or "
        "python:path/to/file.py:function.")] = None,
    model: Annotated[str, typer.Option(help="The judge: a model id as `veriloop run --model` takes it (not loaded "
                                            "for the sound, visible or hidden verifier or a check).")] = DEFAULT_JUDGE,
    task: Annotated[Path | None, typer.Option(
        metavar="FILE", help="For a SOURCE made with --task that recorded no instances.jsonl (an older run): the task's "
        "records. Rescore never reads a task file the SOURCE's config.json names.")] = None,
    task_check: Annotated[str | None, typer.Option(
        metavar="SPEC", help="For a SOURCE made with --task and --check: the task's check, as --check takes it (default: "
        "the --check verifier's). Rescore never imports a check the SOURCE's config.json names.")] = None,
    check_timeout: Annotated[float | None, typer.Option(
        metavar="SECONDS", help="With --check or --task-check: seconds a check may take on one answer; one that has not "
        "returned by then stops the rescore, as a check that raises does (default: 60).")] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Run directory to write (resumable). Default: SOURCE-rescored-VERIFIER.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Trajectories judged at once.", min=1)] = None,
    max_calls: Annotated[int | None, typer.Option(
        help="Stop once the judge has made this many calls (every recorded call counts, cached or not; run again "
        "with a higher cap to go on).", min=0)] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Stop once the judge's calls have used this many tokens.",
                                                   min=0)] = None,
    server: ServerFlags = TYPED,
    cache: CacheFlags = TYPED,
) -> None:
    """Judge a run's recorded answers again with another verifier, generating nothing.

    Writes a run directory whose trajectories hold the verifier's verdict of every
    recorded attempt and answer with the first attempt it accepts, and rescore.md /
    rescore.json: the verifier against ground truth (accuracy, false positive and false
    negative rates with 95% intervals, by condition) and counterfactual stopping (each
    loop or pool stopped where the verifier would have stopped it).
    """
    from ..checks import FunctionCheck, load_check
    from ..experiment.budget import BudgetReached
    from ..experiment.schema import Budget
    from ..models.function import FunctionModel
    from ..recorded.rescore import TaskChoice, check_out, rescore, source_run
    from ..strategies.base import verifier_calls
    from ..tables import print_markdown, print_summary
    from ..verifiers import get_verifier

    if check_timeout is not None and not (check or task_check):
        raise VeriloopError("--check-timeout goes with --check or --task-check")
    if check_timeout is not None and not (0 < check_timeout < float("inf")):
        raise VeriloopError(f"--check-timeout must be a positive number of seconds, not {check_timeout:g}")
    check_fn = load_check(check) if check else None
    chosen: Any = verifier
    if check_fn is not None:
        chosen = FunctionCheck(check_fn) if check_timeout is None else FunctionCheck(check_fn, timeout=check_timeout)
    task_choice = TaskChoice(task, load_check(task_check) if task_check else check_fn, check_timeout)
    if not check:
        get_verifier(verifier)  # a typo fails before any model loads
    label = getattr(chosen, "name", verifier) if check else verifier
    # The domain's own check and the code verifiers run no model; the rest judge with one.
    needs_model = not check and verifier_calls(verifier) != 0
    run_dir = out_dir or source.with_name(f"{source.name}-rescored-{slug(str(label))}")
    budget = Budget(max_calls=max_calls, max_tokens=max_tokens, max_usd=None)
    source_run(source)  # a source that is not one fails before any model loads
    check_out(source, run_dir)

    async def job(s: Session) -> Any:
        return await rescore(source, run_dir, chosen, s.model, config={"judge": model if needs_model else None},
                             concurrency=concurrency, budget=budget, on_progress=s.progress.update, task=task_choice)

    try:
        if needs_model:
            choice = server.choice_of(model, cache, concurrency=concurrency)
            result, _ = run_on_model(choice, job, progress=f"rescoring {source.name} with {label}", kept_in=run_dir)
        else:
            import asyncio

            def no_judge(messages: object) -> str:
                raise VeriloopError(f"the {label} verifier asked a model; give --model to judge with one")

            # Nothing waits on a model: many trajectories at once, so their records go to disk in batches.
            no_model = cast("Model", FunctionModel(no_judge, name="none", identity="none", concurrency=64))
            result = asyncio.run(rescore(source, run_dir, chosen, no_model, config={"judge": None},
                                         concurrency=concurrency, budget=budget, task=task_choice))
    except BudgetReached as exc:
        raise VeriloopError(f"{exc}: the answers judged so far are kept in {run_dir}; run again with a higher cap "
                            "to go on") from None
    print_summary(out, result.summaries, printable(f"{source} rescored by {label}"), _labels(result.summaries))
    print_markdown(out, printable((run_dir / "rescore.md").read_text(encoding="utf-8"), keep="\n"))
    out.print(printable(f"{result.new} trajectories judged now, {result.reused} resumed, {result.backend_calls} "
                        f"backend calls; records in {run_dir}/"), highlight=False, markup=False)
    out.print(printable(view_hint(run_dir)), highlight=False, markup=False)
