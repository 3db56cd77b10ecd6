"""`veriloop reproduce ...`: a paper's tables and figures on any model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from ..errors import VeriloopError
from .common import SEARCH_URL_HELP, Opt, out, slug, tool_settings
from .options import TYPED, CacheFlags, ExecutorFlags, MainModelFlags, OptionGroup, grouped

if TYPE_CHECKING:
    from ..experiment.overrides import Override


def _subset(value: str | None, known: list[str], what: str, where: str = "") -> list[str] | None:
    """A comma-separated choice among `known` (None: all of them)."""
    chosen = [v.strip() for v in value.split(",")] if value else None
    for v in chosen or []:
        if v not in known:
            raise VeriloopError(f"unknown {what} {v!r}{where}; choose from: {', '.join(known)}")
    return chosen


def _show(target: Path, table: str, calls: int, what: str, note: str = "") -> None:
    """Print the reproduction's main table (fitted to the terminal) and where its files are."""
    from ..tables import print_markdown

    print_markdown(out, (target / table).read_text())
    out.print(f"{calls} backend calls; {what} in {target}/{note}", highlight=False)


def shows(table: str, what: str, note: Callable[[Any], str] = lambda spec: "") -> Callable[[Any, Any], None]:
    """How a reproduction shows its outcome: its report's main `table`, or, when the
    report was not written (a budget stopped the cells), the experiment's results table."""

    def show(spec: Any, result: Any) -> None:
        if not result.report_files:
            from .evaluate import print_results

            print_results(spec, result)
            return
        _show(result.out_dir, table, result.backend_calls, what, note(spec))

    return show


def shipped(name: str) -> Any:
    """A shipped experiment file as it is (to turn a command's options into overrides of it)."""
    from ..experiment.overrides import find_experiment, load_experiment

    return load_experiment(find_experiment(name))


SetOption = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", help="Override a key of the experiment file, repeatable (as veriloop eval --set); "
    "applied after the options above.",
)]
DryRun = Annotated[bool, typer.Option("--dry-run", help="List the cells and a call/token estimate; run nothing.")]


@dataclass
class ShippedFlags(OptionGroup):
    """What every reproduction takes beside its paper's options: where it goes, the
    user's own overrides of the shipped file, and a dry run."""

    flags: ClassVar[dict[str, str]] = {"out_dir": "--out", "set_": "--set", "dry_run": "--dry-run"}

    out_dir: Opt.Out = None
    set_: SetOption = None
    dry_run: DryRun = False

    @property
    def sets(self) -> list[str]:
        return list(self.set_ or [])


def run_shipped(
    name: str, sets: Sequence[str | Override], run: ShippedFlags, model: MainModelFlags, cache: CacheFlags,
    where: ExecutorFlags, *, transform: Callable[[Any], Any] | None = None, default_out: Callable[[Any], Path],
    show: Callable[[Any, Any], None],
) -> None:
    """A reproduction as `veriloop eval` runs it: the shipped experiment file `name` with
    the command's options as overrides (then the user's --set items), then `transform`
    (what --set cannot say: some of its domains only, one more domain)."""
    from ..experiment.overrides import find_experiment, load_experiment
    from .evaluate import run_experiment_file

    spec = load_experiment(find_experiment(name), sets)
    if transform is not None:
        spec = transform(spec)
    # The key is handed to the generating models, never written into the experiment.
    keys = {generator: model.api_key for generator in spec.generator_names()} if model.api_key else None
    run_experiment_file(spec, run.out_dir or default_out(spec), dry_run=run.dry_run, cache=cache.cache,
                        use_cache=not cache.no_cache, api_keys=keys, show=show, executor=where.where)


@grouped
def self_verification(
    instances: Annotated[int | None, typer.Option(
        help="Instances per domain for Table 1 (sets n; the file's: 2).", min=1
    )] = None,
    verification_instances: Annotated[int | None, typer.Option(
        help="Instances per domain for the verification study, the first of Table 1's (default: all of them).", min=1
    )] = None,
    data_root: Annotated[Path | None, typer.Option(
        help="Folder with game24/, graph_coloring/, planbench/ (the file's: each set where `veriloop data install` "
        "put it, else ../shared/data; missing: generated instances)."
    )] = None,
    max_rounds: Annotated[int | None, typer.Option(
        help="Backprompt rounds (sets max_rounds; the file's, as the paper: 15).", min=1
    )] = None,
    domains: Annotated[str | None, typer.Option(help="Comma-separated subset of the four domains.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (sets seeds = [SEED]; the file's: 0).")] = None,
    run: ShippedFlags = TYPED,
    model: MainModelFlags = TYPED,
    cache: CacheFlags = TYPED,
    where: ExecutorFlags = TYPED,
    recorded: Annotated[Path | None, typer.Option(
        help="Instead of running a model: the authors' released GPT-4 runs (the folder self_verification_outputs). "
        "Writes table1.md, table2.md, critique.md (Table A4) and figure2.png beside the paper's figures, veriloop's "
        "verifier against the authors' evaluation, and reproduction.json; no model call. The colouring graphs come "
        "from --data-root.",
    )] = None,
) -> None:
    """Every condition of the self-verification paper's Table 1 on Game of 24, graph
    colouring, Blocksworld and Mystery Blocksworld, its verification study (Tables 2, A2),
    critique tables (A3-A6) and Figure 2. Writes table1.md/.csv, table2.md, critique.md,
    figure2.png and reproduction.json; resumes if interrupted.

    The same as `veriloop eval self-verification` (the shipped experiment file; veriloop
    eval --list shows where it is) with each option given as a --set: the cells are under
    OUT/main/DOMAIN/CONDITION-seedS/."""
    from ..experiment.overrides import overrides

    if recorded is not None:
        given = {"--instances": instances, "--verification-instances": verification_instances,
                 "--max-rounds": max_rounds, "--domains": domains, "--seed": seed}
        extra = [name for name, value in given.items() if value is not None]
        extra += [flag for group in (run, model, cache, where) for flag in group.given() if flag != "--out"]
        if extra:
            raise VeriloopError(f"{extra[0]} goes with a model run; --recorded makes no model call")
        from ..datasets import locate
        from ..reproduce.recorded import reproduce_recorded

        target = run.out_dir or Path("runs") / "reproduce-self-verification-recorded"
        graphs = data_root / "graph_coloring" if data_root is not None else locate("graph-coloring")
        *first, last = reproduce_recorded(recorded, graphs, target)
        from ..tables import print_markdown

        for table in first:
            print_markdown(out, table.read_text())
        _show(target, last.name, 0, "tables")
        return

    sets: list[str | Override] = [*overrides({
        **model.overrides(),
        "n": instances, "max_rounds": max_rounds, "seeds": None if seed is None else [seed],
        "data_root": data_root, "report_options.verification_instances": verification_instances,
    }), *run.sets]

    def default_out(spec: Any) -> Path:
        return Path("runs") / f"reproduce-self-verification-{slug(spec.models['main'].id)}-n{spec.n}-seed{spec.seeds[0]}"

    show = shows("table1.md", "tables and figure", lambda spec: f" ({', '.join(spec.domain_keys())})")

    def only(spec: Any) -> Any:
        from ..experiment.matrix import only_domains

        chosen = _subset(domains, spec.domain_keys(), "domain", " for this reproduction")
        return spec if chosen is None else only_domains(spec, chosen)

    run_shipped("self-verification", sets, run, model, cache, where, transform=only, default_out=default_out, show=show)


@grouped
def critic(
    instances: Annotated[int | None, typer.Option(
        help="Questions / problems / prompts per task (sets n; the file's: 3).", min=1
    )] = None,
    data_root: Annotated[Path | None, typer.Option(
        help="Folder with hotpotqa/, gsm8k/, math500/, toxicity/ (the file's: each set where `veriloop data "
        "install` put it, else ../shared/data)."
    )] = None,
    svamp: Annotated[
        Path | None, typer.Option(help="A SVAMP JSON file (Body, Question, Answer); skipped without it.")
    ] = None,
    tasks: Annotated[str | None, typer.Option(
        help="Comma-separated subset of: hotpotqa, gsm8k, math500, svamp, toxicity, table5."
    )] = None,
    k: Annotated[int | None, typer.Option(
        help="Samples for self-consistency and rejection sampling (the file's: 5).", min=1
    )] = None,
    generations: Annotated[int | None, typer.Option(
        help="Generations per toxicity prompt, one seed each (the file's: 3; the paper: 25).", min=1
    )] = None,
    hallucination_samples: Annotated[int | None, typer.Option(
        help="Samples for the self-consistency confidence of Table 5 (the file's: 10; the paper: 20).", min=2
    )] = None,
    max_corrections: Annotated[int | None, typer.Option(
        help="Corrections per CRITIC run (default: the paper's, QA 3, math 4, toxicity 4).", min=0
    )] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (sets seeds = [SEED]; the file's: 0).")] = None,
    search_url: Annotated[
        str | None, typer.Option(help=SEARCH_URL_HELP + " Default: BM25 over the HotpotQA paragraphs.")
    ] = None,
    toxicity_backend: Annotated[str | None, typer.Option(
        help="Toxicity scorer: offline (a classifier shipped in a PyPI package) or perspective "
        "(needs PERSPECTIVE_API_KEY); sets tools.toxicity (the file's: offline)."
    )] = None,
    allow_unisolated: Opt.Unisolated = False,
    run: ShippedFlags = TYPED,
    model: MainModelFlags = TYPED,
    cache: CacheFlags = TYPED,
    where: ExecutorFlags = TYPED,
) -> None:
    """CRITIC's Tables 1 (HotpotQA), 2 (GSM8K, MATH-500, SVAMP), 3 (toxicity) and 5
    (hallucination detection) and its iteration plots, every condition on the same model
    and cache. Writes critic.md, critic.csv, iterations.png and reproduction.json;
    resumes if interrupted.

    The same as `veriloop eval critic` (the shipped experiment file; veriloop eval --list
    shows where it is) with each option given as a --set: the cells are under
    OUT/main/TASK/CONDITION-seedS/."""
    from ..experiment.matrix import add_domain, only_domains
    from ..experiment.overrides import overrides
    from ..experiment.schema import DomainEntry, Rule
    from ..reproduce.critic import TASK_NAMES, option_sets

    chosen = _subset(tasks, list(TASK_NAMES), "task")
    if toxicity_backend is not None:
        tool_settings(None, None, toxicity_backend, allow_unisolated)  # the backend's name, checked
    sets: list[str | Override] = [*overrides({
        **model.overrides(),
        "n": instances, "data_root": data_root, "tools.search_url": search_url, "tools.toxicity": toxicity_backend,
        "tools.allow_unisolated": allow_unisolated or None,
        "report_options.hallucination_samples": hallucination_samples,
        "report_options.table5": None if chosen is None else "table5" in chosen,
    }), *option_sets(shipped("critic"), k=k, max_corrections=max_corrections, generations=generations, seed=seed),
        *run.sets]

    def transform(spec: Any) -> Any:
        if svamp is not None:
            entry = DomainEntry.model_validate({"name": "svamp", "data": str(svamp.resolve())})
            spec = add_domain(spec, entry, like="gsm8k")
        if chosen is None:
            return spec
        keep = [key for key in spec.domain_keys() if key in chosen or (key == "hotpotqa" and "table5" in chosen)]
        spec = only_domains(spec, keep)
        if "table5" in chosen and "hotpotqa" not in chosen and "hotpotqa" in keep:
            # Table 5 is a study on the QA data: the data is read, its conditions not run.
            spec = spec.model_copy(update={"exclude": [*spec.exclude, Rule(domain="hotpotqa")]})
        return spec

    def default_out(spec: Any) -> Path:
        return Path("runs") / f"reproduce-critic-{slug(spec.models['main'].id)}-n{spec.n}-seed{spec.seeds[0]}"

    show = shows("critic.md", "tables and figure")

    run_shipped("critic", sets, run, model, cache, where, transform=transform, default_out=default_out, show=show)


@grouped
def selfcheck(
    questions: Annotated[int | None, typer.Option(
        help="Questions, the first ones of the file (sets n; the file's: 10).", min=1
    )] = None,
    solutions: Annotated[int | None, typer.Option(
        help="Sampled solutions per question (N): curves run 1..N (the file's: 4).", min=1
    )] = None,
    dataset: Annotated[str | None, typer.Option(help="gsm8k, math500 or mathqa (the file's: gsm8k).")] = None,
    data: Annotated[
        Path | None, typer.Option(help="The dataset file (default: under --data-root; mathqa needs it).")
    ] = None,
    data_root: Annotated[Path | None, typer.Option(
        help="Folder with gsm8k/ and math500/ (the file's: each set where `veriloop data install` put it, else "
        "../shared/data)."
    )] = None,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature of the solutions (the file's: 0.7).", min=0.0
    )] = None,
    max_steps: Annotated[int | None, typer.Option(
        help="Steps checked per solution (the first ones); recorded (the file's: 8).", min=1
    )] = None,
    lambda_contradict: Annotated[float | None, typer.Option(
        help="Weight of a contradicted step in the confidence (λ₋₁; the file's: 1.0).", min=0.0
    )] = None,
    lambda_unrelated: Annotated[float | None, typer.Option(
        help="Weight of an unrelated or unreadable step (λ₀; the file's: 0.3).", min=0.0
    )] = None,
    global_ablation: Annotated[bool, typer.Option(
        "--global/--no-global", help="Also run the single-call global checker on the same solutions."
    )] = True,
    majority_cap: Annotated[int | None, typer.Option(
        help="Most samples majority voting may draw to match SelfCheck's token budget (the file's: 16).", min=1
    )] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the samples and of the orderings (the file's: 0).")]
    = None,
    run: ShippedFlags = TYPED,
    model: MainModelFlags = TYPED,
    cache: CacheFlags = TYPED,
    where: ExecutorFlags = TYPED,
) -> None:
    """SelfCheck's evaluation on one dataset: accuracy against the number of solutions
    for weighted and majority voting (same solutions, ± standard error), TPR/FPR at
    thresholds, AUROC, balanced accuracy, step-level agreement, token cost, accuracy
    against total tokens (majority voting with SelfCheck's budget) and the global-checker
    ablation. Writes selfcheck.md, selfcheck.csv, reproduction.json and three PNG plots;
    resumes if interrupted.

    The same as `veriloop eval selfcheck` (the shipped experiment file; veriloop eval
    --list shows where it is) with each option given as a --set: the cells are under
    OUT/main/DOMAIN/CHECKER-seedS/."""
    from ..experiment.overrides import overrides
    from ..experiment.schema import Rule
    from ..reproduce import with_option
    from ..reproduce.selfcheck import DATASET_OF, DATASETS, checkers

    items: dict[str, Any] = {
        **model.overrides(),
        "n": questions, "data_root": data_root, "seeds": None if seed is None else [seed],
        "report_options.majority_cap": majority_cap,
    }
    if dataset is not None:
        if dataset not in DATASETS:
            raise VeriloopError(f"unknown dataset {dataset!r}; choose from: {', '.join(DATASETS)}")
        if data is None and DATASETS[dataset][1] is None:
            raise VeriloopError(f"{dataset} has no copy in the shared data: give the file with --data PATH")
        items["domains.0.name"] = DATASETS[dataset][0]
        items["domains.0.data"] = DATASETS[dataset][1]
    if data is not None:
        items["domains.0.data"] = data.resolve()
    # The checkers' options, in each selfcheck spec of the file (max_steps: the step checker's).
    options = {"n": solutions, "temperature": temperature, "lambda_contradict": lambda_contradict,
               "lambda_unrelated": lambda_unrelated}
    for i, entry in enumerate(shipped("selfcheck").strategies):
        spec = entry.spec
        if spec.partition(":")[0] == "selfcheck":
            for key, value in options.items():
                spec = spec if value is None else with_option(spec, key, value)
            if max_steps is not None and "checker=global" not in spec:
                spec = with_option(spec, "max_steps", max_steps)
        if spec != entry.spec:
            items[f"strategies.{i}.spec"] = spec
    sets: list[str | Override] = [*overrides(items), *run.sets]

    def transform(spec: Any) -> Any:
        entry = spec.domains[0]
        path = spec.resolve(entry.data)
        name = DATASET_OF.get(entry.name, entry.name)
        if path is None or not Path(path).is_file():
            raise VeriloopError(f"{path}: no such file; give the {name} file with --data PATH")
        label = checkers(spec).get("global")
        if not global_ablation and label is not None:
            spec = spec.model_copy(update={"exclude": [*spec.exclude, Rule(strategy=label)]})
        return spec

    def default_out(spec: Any) -> Path:
        from ..strategies import parse_strategy

        steps = parse_strategy(spec.strategies[0].spec)
        return Path("runs") / (f"reproduce-selfcheck-{slug(spec.models['main'].id)}-"
                               f"{DATASET_OF.get(spec.domains[0].name, spec.domains[0].name)}-q{spec.n}-"
                               f"n{getattr(steps, 'n', '')}-seed{spec.seeds[0]}")

    show = shows("selfcheck.md", "tables and figures")

    run_shipped("selfcheck", sets, run, model, cache, where, transform=transform, default_out=default_out, show=show)
