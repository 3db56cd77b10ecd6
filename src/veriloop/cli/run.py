"""`veriloop run`: strategies on a domain, a table of the results."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from ..errors import VeriloopError
from .common import out, slug, view_hint
from .options import TYPED, BatchFlags, CacheFlags, ExecutorFlags, ModelFlags, ToolFlags, grouped

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter  # typer's own copy of click

    from ..domains.base import Instance
    from ..experiment.schema import Experiment
    from ..runs.runner import RunResult
    from ..strategies.base import Strategy

DEFAULT_DOMAIN = "game24"
DEFAULT_STRATEGIES = [
    "standard",
    "backprompt:verifier=llm,feedback=llm",
    "backprompt:verifier=sound,feedback=first",
    "sampling",
]

STRATEGY_HELP = (
    "Strategy spec NAME or NAME:key=value,... (repeatable, or ';'-separated); the names and options are listed "
    "below. Default: the four of the main job."
)


def _names(registry: Iterable[str]) -> list[str]:
    """A registry's names, each plugin's followed by its distribution: "parity (my-plugin)",
    and a built-in whose extra is missing marked: "blocksworld (needs veriloop[planning])"."""
    from ..registry import BUILTIN, Registry

    if not isinstance(registry, Registry):
        return list(registry)
    return [registry.shown(name) if source == BUILTIN else f"{name} ({source})" for name, source in registry.sources()]


def _strategy_line(name: str) -> tuple[str, str]:
    from ..registry import BUILTIN
    from ..strategies import STRATEGIES

    try:
        cls = STRATEGIES[name]
    except VeriloopError as exc:  # a broken plugin: said here, and the help still shows
        return name, str(exc)
    source = STRATEGIES.source(name)
    origin = "" if source == BUILTIN else f" From {source}."
    return name, f"{cls.summary}. Options: {', '.join(cls.model_fields) or 'none'}.{origin}"


def registry_sections() -> list[tuple[str, list[tuple[str, str]] | str]]:
    """Every domain, strategy (its summary and options), verifier and feedback level, read
    from the registries when the help is shown, so a new entry (a plugin's too) needs no
    edit here."""
    from ..domains import DOMAINS
    from ..feedback import LEVELS
    from ..strategies import STRATEGIES
    from ..verifiers import THRESHOLDED, VERIFIERS

    strategies = [_strategy_line(name) for name in STRATEGIES]
    verifiers = ", ".join([*_names(VERIFIERS), *(f"{name}@T" for name in THRESHOLDED)]) + "."
    if THRESHOLDED:
        verifiers += f" With @T ({', '.join(THRESHOLDED)}): accept above the confidence T, e.g. {THRESHOLDED[0]}@0.8."
    return [
        ("Domains (--domain NAME; plugins name their package)", ", ".join(_names(DOMAINS)) + "."),
        ("Strategies (-s NAME or -s NAME:key=value,...)", strategies),
        ("Verifiers (a strategy's verifier=NAME)", verifiers),
        ("Feedback levels (feedback=LEVEL)", ", ".join(_names(LEVELS)) + "."),
        ("Example", "-s standard -s 'backprompt:verifier=sound,feedback=all' -s sampling:k=3"),
        ("Every name and where it comes from", "veriloop plugins"),
    ]


class RunCommand(TyperCommand):
    """`run`, whose help ends with the registries, listed when the help is shown."""

    def format_epilog(self, ctx: Context, formatter: HelpFormatter) -> None:
        for title, body in registry_sections():
            with formatter.section(title):
                if isinstance(body, str):
                    write_words(formatter, body)
                else:
                    formatter.write_dl(body)


def write_words(formatter: HelpFormatter, text: str) -> None:
    """`text` wrapped to the help's width at spaces only: click's own wrapping also breaks
    at hyphens, which would split names such as gsm8k-cot or a plugin's subset-sum."""
    import textwrap

    indent = formatter.current_indent
    for line in textwrap.wrap(text, max(formatter.width - indent, 11), break_on_hyphens=False,
                              break_long_words=False):
        formatter.write(f"{' ' * indent}{line}\n")


def domain_options(items: list[str]) -> dict[str, object]:
    """--domain-option KEY=VALUE items as keyword arguments (VALUE read as JSON when it parses)."""
    options: dict[str, object] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise VeriloopError(f"--domain-option {item!r} should look like KEY=VALUE")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def check_task_options(
    domain: str, task: Path | None, data: Path | None, domain_option: list[str] | None, with_task: dict[str, object]
) -> None:
    """--task and --domain exclude each other; the options of a task need --task."""
    if task is None:
        given = [name for name, value in with_task.items() if value is not None]
        if given:
            raise VeriloopError(f"{', '.join(given)} go{'es' if len(given) == 1 else ''} with --task FILE.jsonl")
        return
    if domain != DEFAULT_DOMAIN:
        raise VeriloopError(f"give either --domain ({domain}) or --task ({task}), not both")
    if data is not None or domain_option:
        raise VeriloopError(f"--data and --domain-option go with --domain; --task {task} holds its own records")
    if with_task["--prompt"] is None:
        raise VeriloopError('--task needs --prompt TEMPLATE, a template over the records\' fields such as "{question}"')


def run_spec(
    model: ModelFlags, tool: ToolFlags, batch: BatchFlags | None = None, *, domain: str, task: Path | None,
    prompt: str | None, check: str | None, reference_field: str | None, id_field: str | None, data: Path | None,
    offset: int, n: int, options: dict[str, object], strategies: list[str], seed: int, max_rounds: int, k: int,
    concurrency: int | None, check_timeout: float | None = None,
) -> Experiment:
    """`run`'s flags as the experiment spec `veriloop eval` reads from a file: one model,
    one domain or task, the strategies and one seed. A value the spec refuses is an
    error naming the flag."""
    from pydantic import ValidationError

    from ..experiment.schema import Experiment
    from ..models.llamacpp import thread_count

    tools = {"search_corpus": str(tool.search_corpus) if tool.search_corpus else None, "search_url": tool.search_url,
             "toxicity": tool.toxicity_backend, "allow_unisolated": tool.allow_unisolated}
    entry: dict[str, object] = (
        {"file": str(task), "prompt": prompt, "check": check, "reference_field": reference_field,
         "id_field": id_field, "offset": offset, "label": f"task-{task.stem}", "check_timeout": check_timeout}
        if task is not None else
        {"name": domain, "data": str(data) if data else None, "offset": offset, "options": options}
    )
    fields = {
        "name": f"run {task.stem if task else domain}",
        "models": {"main": {"id": model.model, **model.settings(),
                            "threads": None if model.threads is None else thread_count(model.threads, "--threads"),
                            **(batch.settings() if batch else {})}},
        "tasks" if task is not None else "domains": [entry],
        "strategies": strategies, "seeds": [seed], "n": n, "max_rounds": max_rounds, "k": k,
        "concurrency": concurrency, "tools": tools,
    }
    try:
        return Experiment.model_validate(fields)
    except ValidationError as exc:
        raise VeriloopError(_flag_error(exc)) from None


def _flag_error(exc: Any) -> str:
    """The spec's first error: its validators say what is wrong and which value (the
    domain, strategy, backend...), and typer has already checked the numbers."""
    return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")


def with_task(metavar: str, help: str, task_flag: bool = False) -> Any:
    """An option of a --task run; its help starts "With --task:" unless it is --task itself."""
    return typer.Option(metavar=metavar, help=help if task_flag else f"With --task: {help}")


@grouped
def run(
    domain: Annotated[str, typer.Option(
        help="Domain to run: a built-in or an installed plugin's (listed below)."
    )] = DEFAULT_DOMAIN,
    task: Annotated[Path | None, with_task("FILE.jsonl", "Your own task instead of a domain: one record (a JSON "
                                           "object) per line.", task_flag=True)] = None,
    prompt: Annotated[str | None, with_task("TEMPLATE", "the prompt, a template over a record's fields, "
                                            'e.g. "{question}".')] = None,
    check: Annotated[str | None, with_task("SPEC", "the check function that the sound verifier runs, "
                                           "package.module:function or python:path/to/file.py:function.")] = None,
    reference_field: Annotated[str | None, with_task("NAME", "the field holding the right answer (ground truth; "
                                                     "without it, the check).")] = None,
    id_field: Annotated[str | None, with_task("NAME", "the field naming each record (default: its number in the "
                                              "file).")] = None,
    check_timeout: Annotated[float | None, typer.Option(
        metavar="SECONDS",
        help="With --task: seconds the check may take on one answer; one that has not returned by then stops the "
        "run, as a check that raises does (default: 60).",
    )] = None,
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help=STRATEGY_HELP, metavar="SPEC")] = None,
    model: ModelFlags = TYPED,
    n: Annotated[int, typer.Option("-n", help="Number of instances.", min=1)] = 10,
    offset: Annotated[
        int, typer.Option(help="Skip this many instances first (e.g. 900 for 4nums ranks 901+).", min=0)
    ] = 0,
    data: Annotated[
        Path | None, typer.Option(help="Instance file (game24: the 4nums.com CSV). Default: generated, easiest first.")
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Run directory (resumable). Default: runs/DOMAIN-MODEL-seedSEED.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Base seed of every sampled call.")] = 0,
    max_rounds: Annotated[int, typer.Option(help="Rounds for strategies that loop (backprompt).", min=1)] = 5,
    k: Annotated[int, typer.Option(help="Samples for sampling and self-consistency.", min=1)] = 5,
    concurrency: Annotated[
        int | None, typer.Option(
            help="Trajectories at once (default: 16 in-process, decoded together in batches; 8 for servers); 1 runs "
            "a local model one call at a time. For a server also the requests in flight, every sample counted.",
            min=1)
    ] = None,
    cache: CacheFlags = TYPED,
    batch: BatchFlags = TYPED,
    tool: ToolFlags = TYPED,
    domain_option: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE",
        help="A domain setting KEY=VALUE, repeatable (VALUE read as JSON when it parses), "
        "e.g. toxicity's all_prompts=true, threshold=0.5, stop_below=0.1."
    )] = None,
    where: ExecutorFlags = TYPED,
) -> None:
    """Run strategies on a domain and print accuracy, rounds, calls, tokens and time.

    With no options this is the main job: four strategies on 10 Game of 24 puzzles, at most
    5 rounds, on the default model. Results go to --out and are resumed from there.

    Your own task: --task FILE.jsonl --prompt "...{field}..." --check SPEC (the sound
    verifier runs the check; a check that raises, or takes longer than --check-timeout,
    stops the run, and every trajectory finished before is kept).
    """
    from ..experiment.engine import ExecutorOptions, Progress, SingleRun, plan
    from ..progress import ProgressReporter
    from ..strategies import split_specs
    from .evaluate import through_the_door

    with_task: dict[str, object] = {
        "--prompt": prompt, "--check": check, "--reference-field": reference_field, "--id-field": id_field,
        "--check-timeout": check_timeout,
    }
    check_task_options(domain, task, data, domain_option, with_task)
    if check_timeout is not None and not (0 < check_timeout < float("inf")):
        raise VeriloopError(f"--check-timeout must be a positive number of seconds, not {check_timeout:g}")
    if batch.batch and where.where.ray:
        raise VeriloopError("--batch runs the trajectories here, in one process: drop --executor ray, or --batch")
    specs = split_specs(strategy or DEFAULT_STRATEGIES)
    spec = run_spec(
        model, tool, batch, domain=domain, task=task, prompt=prompt, check=check, reference_field=reference_field,
        id_field=id_field, data=data, offset=offset, n=n, options=domain_options(domain_option or []),
        strategies=specs, seed=seed, max_rounds=max_rounds, k=k, concurrency=concurrency, check_timeout=check_timeout,
    )
    (label,) = spec.domain_keys()
    run_dir = out_dir or Path("runs") / f"{label}-{slug(model.model)}-seed{seed}"
    # One run directory for every strategy, its config.json as `run` has always written it
    # (engine.run_config): checked before the model loads, its identity once it has.
    plans = plan(spec, run_dir, SingleRun())
    reporter = ProgressReporter(f"{label} x {len(plans)} strategies")
    progress = Progress(update=lambda _stage, done, total: reporter.update(done, total), tokens=reporter.tokens_done)
    options = ExecutorOptions(cache_path=cache.cache, use_cache=not cache.no_cache,
                              api_keys={"main": model.api_key} if model.api_key else None, address=where.address,
                              shard_size=where.shard_size)
    result = through_the_door(spec, run_dir, where.where, options, reporter, progress, plans=plans, single=SingleRun(),
                              loading="while the model was loading; nothing was run")
    assert result.run is not None  # no budget stops a single run of `run`
    print_run(result.run, [p.strategy for p in plans], specs, plans[0].domain.instances, label, model.model, seed,
              cache.no_cache, run_dir)


def print_run(result: RunResult, strategies: list[Strategy], specs: list[str], instances: list[Instance], label: str,
              model: str, seed: int, no_cache: bool, run_dir: Path) -> None:
    from ..tables import print_paired, print_summary

    first_id, last_id = instances[0].id, instances[-1].id
    title = f"{label} on {model}: {len(instances)} instances ({first_id} .. {last_id}), seed {seed}"
    labels = {s.canonical: spec for s, spec in zip(strategies, specs)}
    print_summary(out, result.summaries, title, labels=labels)
    print_paired(out, result.paired, labels)
    calls_note = f"{result.backend_calls} backend calls" + (" (cache off)" if no_cache else "")
    out.print(
        f"{result.new_trajectories} new and {result.reused_trajectories} resumed trajectories, {calls_note}, "
        f"{result.wall_seconds:.1f} s; records in {run_dir}/"
    )
    out.print(view_hint(run_dir), highlight=False, markup=False)
