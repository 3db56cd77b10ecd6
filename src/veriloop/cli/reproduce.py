"""`veriloop reproduce ...`: a paper's tables and figures on any model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import VeriloopError
from .common import DEFAULT_MODEL, SEARCH_URL_HELP, ModelChoice, Opt, Session, out, run_on_model, slug, tool_settings


def _subset(value: str | None, known: list[str], what: str, where: str = "") -> list[str] | None:
    """A comma-separated choice among `known` (None: all of them)."""
    chosen = [v.strip() for v in value.split(",")] if value else None
    for v in chosen or []:
        if v not in known:
            raise VeriloopError(f"unknown {what} {v!r}{where}; choose from: {', '.join(known)}")
    return chosen


def _show(target: Path, table: str, calls: int, what: str, note: str = "") -> None:
    """Print the reproduction's main table (fitted to the terminal) and where its files are."""
    from ..report import print_markdown

    print_markdown(out, (target / table).read_text())
    out.print(f"{calls} backend calls; {what} in {target}/{note}", highlight=False)


def self_verification(
    model: Opt.Model = DEFAULT_MODEL,
    # Each instance per domain costs about 21 minutes cold on the default model here (8
    # conditions x up to 15 rounds x 4 domains, plus the study); 2 keeps the whole
    # reproduction under an hour. Raise it on faster hardware or a server.
    instances: Annotated[int, typer.Option(help="Instances per domain for Table 1.", min=1)] = 2,
    verification_instances: Annotated[int | None, typer.Option(
        help="Instances per domain for the verification study (default: --instances).", min=1
    )] = None,
    data_root: Annotated[
        Path, typer.Option(help="Folder with game24/, graph_coloring/, planbench/ (missing: generated instances).")
    ] = Path("../shared/data"),
    out_dir: Opt.Out = None,
    max_rounds: Annotated[int, typer.Option(help="Backprompt rounds (the paper: 15).", min=1)] = 15,
    domains: Annotated[str | None, typer.Option(help="Comma-separated subset of the four domains.")] = None,
    seed: Opt.Seed = 0,
    base_url: Opt.BaseUrl = None,
    api_key: Opt.ApiKey = None,
    cache: Opt.Cache = None,
    threads: Opt.Threads = None,
) -> None:
    """Every condition of the self-verification paper's Table 1 on Game of 24, graph
    colouring, Blocksworld and Mystery Blocksworld, its verification study (Tables 2, A2),
    critique tables (A3-A6) and Figure 2. Writes table1.md/.csv, table2.md, critique.md,
    figure2.png and reproduction.json; resumes if interrupted."""
    from ..reproduce.self_verification import SOURCES, reproduce

    chosen = _subset(domains, [s.name for s in SOURCES], "domain", " for this reproduction")
    target = out_dir or Path("runs") / f"reproduce-self-verification-{slug(model)}-n{instances}-seed{seed}"

    async def job(s: Session) -> dict[str, Any]:
        return await reproduce(
            s.model, target, instances, data_root if data_root.exists() else None,
            verification_instances or instances, max_rounds=max_rounds, seed=seed, domains=chosen,
            on_progress=s.progress.update_stage,
        )

    choice = ModelChoice(model, base_url, api_key, cache, threads=threads)
    payload, calls = run_on_model(choice, job, progress="self-verification", kept_in=target)
    _show(target, "table1.md", calls, "tables and figure", f" ({', '.join(payload['provenance'])})")


def critic(
    model: Opt.Model = DEFAULT_MODEL,
    # A CRITIC trajectory on the default model takes about a minute here (a CoT or program,
    # up to 7 tool-using verification steps and a correction, several rounds); 3 per task
    # keeps the whole reproduction near an hour. Raise it on a server.
    instances: Annotated[int, typer.Option(help="Questions / problems / prompts per task.", min=1)] = 3,
    data_root: Annotated[
        Path, typer.Option(help="Folder with hotpotqa/, gsm8k/, math500/, toxicity/ (the shared reference data).")
    ] = Path("../shared/data"),
    svamp: Annotated[
        Path | None, typer.Option(help="A SVAMP JSON file (Body, Question, Answer); skipped without it.")
    ] = None,
    tasks: Annotated[str | None, typer.Option(
        help="Comma-separated subset of: hotpotqa, gsm8k, math500, svamp, toxicity, table5."
    )] = None,
    k: Annotated[int, typer.Option(help="Samples for self-consistency and rejection sampling.", min=1)] = 5,
    generations: Annotated[int, typer.Option(help="Generations per toxicity prompt (the paper: 25).", min=1)] = 3,
    hallucination_samples: Annotated[int, typer.Option(
        help="Samples for the self-consistency confidence of Table 5 (the paper: 20).", min=2
    )] = 10,
    max_corrections: Annotated[int | None, typer.Option(
        help="Corrections per CRITIC run (default: the paper's, QA 3, math 4, toxicity 4).", min=0
    )] = None,
    out_dir: Opt.Out = None,
    seed: Opt.Seed = 0,
    search_url: Annotated[
        str | None, typer.Option(help=SEARCH_URL_HELP + " Default: BM25 over the HotpotQA paragraphs.")
    ] = None,
    toxicity_backend: Opt.Toxicity = "offline",
    allow_unisolated: Opt.Unisolated = False,
    base_url: Opt.BaseUrl = None,
    api_key: Opt.ApiKey = None,
    cache: Opt.Cache = None,
    threads: Opt.Threads = None,
) -> None:
    """CRITIC's Tables 1 (HotpotQA), 2 (GSM8K, MATH-500, SVAMP), 3 (toxicity) and 5
    (hallucination detection) and its iteration plots, every condition on the same model
    and cache. Writes critic.md, critic.csv, iterations.png and reproduction.json;
    resumes if interrupted."""
    from ..models.counting import innermost
    from ..reproduce.critic import TASK_NAMES, reproduce_critic
    from ..tools.config import build_toolbox

    chosen = _subset(tasks, list(TASK_NAMES), "task")
    settings = tool_settings(None, search_url, toxicity_backend, allow_unisolated)
    target = out_dir or Path("runs") / f"reproduce-critic-{slug(model)}-n{instances}-seed{seed}"

    async def job(s: Session) -> dict[str, object]:
        inner: Any = innermost(s.model)  # the llama.cpp backend under the counter and the cache scores text

        async def perplexity_logprobs(messages: list[dict[str, str]], text: str) -> list[float]:
            return [t.logprob for t in await inner.score(messages, text)]

        return await reproduce_critic(
            s.model, target, instances, data_root if data_root.exists() else None,
            tools=lambda dom, source: build_toolbox(settings, dom, source),
            seed=seed, k=k, toxicity_generations=generations, hallucination_samples=hallucination_samples,
            max_corrections=max_corrections,
            tasks=chosen, extra_files={"svamp": svamp} if svamp else {},
            perplexity=perplexity_logprobs if hasattr(inner, "score") else None,
            on_progress=s.progress.update_stage,
        )

    choice = ModelChoice(model, base_url, api_key, cache, threads=threads)
    _, calls = run_on_model(choice, job, progress="critic", kept_in=target)
    _show(target, "critic.md", calls, "tables and figure")


def selfcheck(
    model: Opt.Model = DEFAULT_MODEL,
    # A GSM8K solution of about six steps costs about a minute of checking on the default
    # model here (4 calls a step); 10 questions x 4 solutions is near an hour with the
    # baselines. Raise both on a server.
    questions: Annotated[int, typer.Option(help="Questions (the first ones of the file).", min=1)] = 10,
    solutions: Annotated[int, typer.Option(help="Sampled solutions per question (N): curves run 1..N.", min=1)] = 4,
    dataset: Annotated[str, typer.Option(help="gsm8k, math500 or mathqa.")] = "gsm8k",
    data: Annotated[
        Path | None, typer.Option(help="The dataset file (default: under --data-root; mathqa needs it).")
    ] = None,
    data_root: Annotated[
        Path, typer.Option(help="Folder with gsm8k/ and math500/ (the shared reference data).")
    ] = Path("../shared/data"),
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the solutions.", min=0.0)] = 0.7,
    max_steps: Annotated[int, typer.Option(help="Steps checked per solution (the first ones); recorded.", min=1)] = 8,
    lambda_contradict: Annotated[float, typer.Option(
        help="Weight of a contradicted step in the confidence (λ₋₁).", min=0.0
    )] = 1.0,
    lambda_unrelated: Annotated[
        float, typer.Option(help="Weight of an unrelated or unreadable step (λ₀).", min=0.0)
    ] = 0.3,
    global_ablation: Annotated[bool, typer.Option(
        "--global/--no-global", help="Also run the single-call global checker on the same solutions."
    )] = True,
    majority_cap: Annotated[int, typer.Option(
        help="Most samples majority voting may draw to match SelfCheck's token budget.", min=1
    )] = 16,
    out_dir: Opt.Out = None,
    seed: Annotated[int, typer.Option(help="Seed of the samples and of the orderings.")] = 0,
    base_url: Opt.BaseUrl = None,
    api_key: Opt.ApiKey = None,
    cache: Opt.Cache = None,
    threads: Opt.Threads = None,
) -> None:
    """SelfCheck's evaluation on one dataset: accuracy against the number of solutions
    for weighted and majority voting (same solutions, ± standard error), TPR/FPR at
    thresholds, AUROC, balanced accuracy, step-level agreement, token cost, accuracy
    against total tokens (majority voting with SelfCheck's budget) and the global-checker
    ablation. Writes selfcheck.md, selfcheck.csv, reproduction.json and three PNG plots;
    resumes if interrupted."""
    from ..reproduce.selfcheck import DATASETS, reproduce_selfcheck

    if dataset not in DATASETS:
        raise VeriloopError(f"unknown dataset {dataset!r}; choose from: {', '.join(DATASETS)}")
    default = DATASETS[dataset][1]
    path = data or (data_root / default if default else None)
    if path is None:
        raise VeriloopError(f"{dataset} has no copy in the shared data: give the file with --data PATH")
    if not path.is_file():
        raise VeriloopError(f"{path}: no such file; give the {dataset} file with --data PATH")
    target = out_dir or Path("runs") / (
        f"reproduce-selfcheck-{slug(model)}-{dataset}-q{questions}-n{solutions}-seed{seed}"
    )

    async def job(s: Session) -> dict[str, object]:
        return await reproduce_selfcheck(
            s.model, target, dataset, path, questions, solutions, seed=seed, temperature=temperature,
            max_steps=max_steps, lambda_contradict=lambda_contradict, lambda_unrelated=lambda_unrelated,
            global_ablation=global_ablation, majority_cap=majority_cap,
            on_progress=s.progress.update_stage,
        )

    choice = ModelChoice(model, base_url, api_key, cache, threads=threads)
    _, calls = run_on_model(choice, job, progress="selfcheck", kept_in=target)
    _show(target, "selfcheck.md", calls, "tables and figures")
