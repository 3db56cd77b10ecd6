"""Reproduce the self-verification paper (Stechly, Valmeekam, Kambhampati): Table 1
(every prompting condition on four domains), Table 2 / A2 (the LLM as verifier, plain and
chain-of-thought), the critique tables (A3-A6) and Figure 2 (accuracy against the number
of backprompts), on any model, side by side with the paper's GPT-4 numbers.

The conditions, domains and sizes are the shipped experiment file
experiment_files/self-verification.toml; its cells run like any experiment's, then `REPORT`
(the file's `report = "self-verification"`) turns them into the paper's tables and runs
the verification study on the same model. Everything is resumable: trajectories and study
records are appended as they finish, and calls are cached, so re-running after an
interruption continues and a finished reproduction only rewrites the tables.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..domains.base import SupportsStudies
from ..errors import SpecError
from ..experiment.reports import Report
from ..experiment.schema import Experiment
from ..extras import can_draw, require
from ..models.base import Model
from ..records import Trajectory
from ..runs.jsonl import write_file
from ..stats.metrics import StrategySummary, summarise
from ..studies.verification import (
    JudgedItem,
    game24_evaluation_table,
    report_table,
    run_verification_study,
    verification_table,
    write_json,
)
from . import claim_study_dir, staged

if TYPE_CHECKING:
    from ..experiment.engine import CellPlan, DomainPlan, EvalResult, Progress

NAME = "self-verification"  # the shipped experiment file and its report
# Figure 2's lines: the conditions that loop (and the best sampling one, for comparison).
BACKPROMPT_LINES = ["LLM+LLM", "Sound B.F.", "Sound F.E.F.", "Sound A.E.F.", "Sampling k=25"]
FILES = ["table1.md", "table1.csv", "table2.md", "critique.md", "figure2.png", "reproduction.json"]

PAPER_TABLE1: dict[str, dict[str, str]] = {
    "game24": {"S.P.": "5%", "LLM+LLM": "3%", "Sound B.F.": "36%", "Sound F.E.F.": "38%", "Sound A.E.F.": "n/a",
               "Sampling k=15": "28%", "Sampling k=25": "42%", "S.C. k=15": "6%"},
    "coloring": {"S.P.": "16%", "LLM+LLM": "2%", "Sound B.F.": "38%", "Sound F.E.F.": "37%", "Sound A.E.F.": "34%",
                 "Sampling k=15": "40%", "Sampling k=25": "44%", "S.C. k=15": "14%"},
    "blocksworld": {"S.P.": "40%", "LLM+LLM": "55%", "Sound B.F.": "60%", "Sound F.E.F.": "87%", "Sound A.E.F.": "83%",
                    "Sampling k=15": "68%", "Sampling k=25": "72%", "S.C. k=15": "42%"},
    "mystery_blocksworld": {"S.P.": "4%", "LLM+LLM": "0%", "Sound B.F.": "10%", "Sound F.E.F.": "8%",
                            "Sound A.E.F.": "6%", "Sampling k=15": "9%", "Sampling k=25": "14%", "S.C. k=15": "4%"},
}
PAPER_TABLE2 = {  # accuracy, false positive rate, false negative rate (GPT-4, plain prompt)
    "game24": ("87.0%", "10.4%", "20.7%"),
    "coloring": ("72.4%", "6.5%", "95.8%"),
    "blocksworld": ("71.8%", "18.55%", "15.48%"),
    "mystery_blocksworld": ("79.6%", "0.5%", "97.09%"),
}


class Options(BaseModel):
    """The report's options (report_options in the file)."""

    model_config = ConfigDict(extra="forbid")

    # The study judges the first N Table 1 instances of each domain (default: all n).
    verification_instances: int | None = Field(None, ge=1)


def check(experiment: Experiment, options: BaseModel) -> None:
    generators, seeds = experiment.generator_names(), experiment.seeds
    if len(generators) != 1 or len(seeds) != 1:
        raise SpecError(("report",), f"the {NAME} report compares the conditions of one model at one seed, not of "
                        f"{len(generators)} model(s) ({', '.join(generators)}) at {len(seeds)} seed(s) "
                        f"({', '.join(map(str, seeds))}): run one at a time, e.g. with --set seeds=[1]")


def _source(dom: DomainPlan) -> str:
    offset = dom.config.get("offset")
    return f"{dom.data} (from #{int(offset) + 1 if isinstance(offset, int) else 1})" if dom.data else "generated"


async def report(
    experiment: Experiment, result: EvalResult, models: Mapping[str, Model], progress: Progress | None
) -> list[str]:
    """Table 1 from the cells (a condition is a strategy's label), the verification study
    on the generator, the critique tables, Figure 2 and reproduction.json."""
    from ..experiment.results import cell_trajectories

    options = Options.model_validate(experiment.report_options)
    generator, seed = experiment.generator_names()[0], experiment.seeds[0]
    model = models[generator]
    out_dir = result.out_dir
    by_domain: dict[str, list[CellPlan]] = {}
    for p in result.plans:
        if p.cell.model == generator:
            by_domain.setdefault(p.cell.domain, []).append(p)
    summaries: dict[str, dict[str, StrategySummary]] = {}
    trajectories: dict[str, list[Trajectory]] = {}
    provenance: dict[str, str] = {}
    canonical: dict[str, str] = {}
    for key, cells in by_domain.items():
        dom = cells[0].domain
        provenance[key] = f"{len(dom.instances)} instances, {_source(dom)}"
        summaries[key] = {p.cell.strategy: summarise(p.strategy.canonical, cell_trajectories(p)) for p in cells}
        trajectories[key] = [t for p in cells for t in cell_trajectories(p)]
        canonical.update({p.cell.strategy: p.strategy.canonical for p in cells})
    update = progress.update if progress else None
    items: list[JudgedItem] = []
    studied: list[str] = []
    for key, cells in by_domain.items():
        dom = cells[0].domain
        if not isinstance(dom.domain, SupportsStudies):
            continue  # no candidate answers of known correctness to judge
        study_dir = cells[0].run_dir.parent / f"verification-seed{seed}"
        claim_study_dir(study_dir, experiment, generator, model, dom, seed)
        chosen = dom.instances[: options.verification_instances or len(dom.instances)]
        items += await run_verification_study(model, dom.domain, chosen, study_dir, seed=seed,
                                              on_progress=staged(update, f"{key}: verification study"))
        studied.append(dom.domain.name)
    labels = [s.key for s in experiment.strategies]
    write_table1(out_dir, summaries, provenance, model.name, labels)
    write_file(out_dir / "table2.md", table2_markdown(items, studied, model.name))
    write_file(out_dir / "critique.md", critique_markdown(items, studied))
    curves = accuracy_by_round(trajectories, canonical, experiment.max_rounds)
    if can_draw("figure2.png"):
        plot_figure2(out_dir / "figure2.png", curves, model.name)
    payload = {
        "model": model.name, "instances_per_domain": experiment.n,
        "verification_instances": options.verification_instances or experiment.n,
        "max_rounds": experiment.max_rounds, "seed": seed, "provenance": provenance,
        "table1": {d: {label: s.model_dump() for label, s in row.items()} for d, row in summaries.items()},
        "figure2": curves,
    }
    write_json(out_dir / "reproduction.json", payload)
    return [name for name in FILES if (out_dir / name).exists()]


REPORT = Report(options=Options, run=report, check=check)


async def reproduce(
    model: Model,
    out_dir: Path,
    n: int,
    data_root: Path | None,
    verification_n: int,
    max_rounds: int = 15,
    seed: int = 0,
    domains: list[str] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, object]:
    """The reproduction from Python on a model already loaded: the shipped experiment file
    with these settings (data_root None: the file's), run in `out_dir` as `veriloop
    reproduce self-verification` runs it; returns what reproduction.json holds."""
    from ..experiment.engine import Progress, run_eval
    from ..experiment.matrix import only_domains
    from ..experiment.overrides import find_experiment, load_experiment, overrides

    experiment = load_experiment(find_experiment(NAME), overrides({
        "n": n, "max_rounds": max_rounds, "seeds": [seed], "data_root": data_root,
        "report_options.verification_instances": verification_n,
    }))
    if domains is not None:
        experiment = only_domains(experiment, domains)
    # The model is given, not loaded from the file's id (its identity is recorded all the same).
    experiment.models["main"] = experiment.models["main"].model_copy(update={"id": None})
    await run_eval(experiment, out_dir, {"main": model}, Progress(update=on_progress))
    payload: dict[str, object] = json.loads((out_dir / "reproduction.json").read_text())
    return payload


def _cell(s: StrategySummary) -> str:
    lo, hi = s.accuracy_ci95
    return f"{s.accuracy:.0%} ({lo:.0%}-{hi:.0%})"


def write_table1(
    out_dir: Path, summaries: dict[str, dict[str, StrategySummary]], provenance: dict[str, str], model: str,
    labels: list[str],
) -> None:
    """table1.md and table1.csv: a column per condition (label), a row per domain, with
    the paper's GPT-4 row under each domain it has."""
    lines = [
        f"# Table 1: accuracy by prompting scheme ({model})",
        "",
        "Accuracy with 95% Wilson interval; below each of our rows, the paper's GPT-4 result on 100 instances.",
        "",
        "| domain | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for domain, row in summaries.items():
        lines.append(f"| {domain} (ours) | " + " | ".join(_cell(row[l]) if l in row else "n/a" for l in labels) + " |")
        if domain in PAPER_TABLE1:
            lines.append(f"| {domain} (GPT-4, paper) | " + " | ".join(_paper(domain, l) for l in labels) + " |")
    lines += ["", "Cost (model calls / tokens, prompt + completion):", "",
              "| domain | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for domain, row in summaries.items():
        cells = [f"{row[l].model_calls} / {row[l].prompt_tokens + row[l].completion_tokens}" if l in row else "n/a" for l in labels]
        lines.append(f"| {domain} | " + " | ".join(cells) + " |")
    lines += ["", "Instances: " + "; ".join(f"{d}: {p}" for d, p in provenance.items()), ""]
    write_file(out_dir / "table1.md", "\n".join(lines))
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["domain", "condition", "strategy", "n", "correct", "accuracy", "ci95_low", "ci95_high",
                     "mean_rounds", "model_calls", "prompt_tokens", "completion_tokens", "seconds", "paper_gpt4"])
    for domain, row in summaries.items():
        for label in labels:
            if label not in row:
                continue
            s = row[label]
            writer.writerow([domain, label, s.strategy, s.n, s.correct, f"{s.accuracy:.4f}", f"{s.accuracy_ci95[0]:.4f}",
                             f"{s.accuracy_ci95[1]:.4f}", f"{s.mean_rounds:.2f}", s.model_calls, s.prompt_tokens,
                             s.completion_tokens, s.seconds, _paper(domain, label)])
    write_file(out_dir / "table1.csv", buf.getvalue())


def _paper(domain: str, label: str) -> str:
    """The paper's figure for a condition ("-" for a condition or domain it did not run)."""
    return PAPER_TABLE1.get(domain, {}).get(label, "-")


def table2_markdown(items: list[JudgedItem], domains: list[str], model: str) -> str:
    paper = ["| domain | accuracy | false positive rate | false negative rate |", "|---|---|---|---|"]
    paper += [f"| {d} | {' | '.join(PAPER_TABLE2[d])} |" for d in domains if d in PAPER_TABLE2]
    return (
        f"# Table 2 / A2: the LLM as verifier ({model})\n\n"
        "Candidates per instance: correct, one-error ablations, non-optimal (colouring), random, and the model's own "
        "greedy answer. `llm` is the plain JSON-verdict prompt (Table 2), `llm-cot` the chain-of-thought prompt (Table A2). "
        "False positive rate: judged correct among wrong candidates; false negative rate: judged wrong among correct ones.\n\n"
        + verification_table(items, domains)
        + "\nThe paper's GPT-4 results (Table 2):\n\n" + "\n".join(paper) + "\n"
    )


def critique_markdown(items: list[JudgedItem], domains: list[str]) -> str:
    parts = ["# Critique quality (Tables A3-A6)\n"]
    a3 = game24_evaluation_table(items)
    if a3:
        parts.append("## Game of 24: evaluation vs verification (Table A3)\n\nFrom the plain judge's replies, which state "
                     "what the expression evaluates to. GPT-4 in the paper: correct 81.6% / 79.1%, ablated operator "
                     "47.5% / 92.1%, ablated number 52.2% / 82.9%, random 48.8% / 95.5%, LLM 55% / 71%.\n\n" + a3)
    titles = {
        "coloring": "Graph colouring critiques (Table A4): edges and colours named vs the real answer",
        "blocksworld": "Blocksworld critiques (Table A5): is the failing action and precondition named?",
        "mystery_blocksworld": "Mystery Blocksworld critiques (Table A6)",
    }
    for domain in domains:
        if domain in titles:
            table = report_table(items, domain, "critique")
            if table:
                parts.append(f"## {titles[domain]}\n\nMeans per wrong candidate, over the model's free-text critiques.\n\n{table}")
    return "\n".join(parts)


def accuracy_by_round(trajectories: dict[str, list[Trajectory]], labels: dict[str, str], max_rounds: int) -> dict[str, dict[str, list[float]]]:
    """Accuracy as if the loop had timed out after n rounds (the paper's Figure 2): the
    output is the answer of round min(n, last round)."""
    curves: dict[str, dict[str, list[float]]] = {}
    for domain, ts in trajectories.items():
        curves[domain] = {}
        for label in BACKPROMPT_LINES:
            chosen = [t for t in ts if label in labels and t.strategy == labels[label]]
            if not chosen:
                continue
            curves[domain][label] = [
                sum(t.rounds[min(r, len(t.rounds)) - 1].correct for t in chosen if t.rounds) / len(chosen)
                for r in range(1, max_rounds + 1)
            ]
    return curves


def plot_figure2(path: Path, curves: dict[str, dict[str, list[float]]], model: str) -> None:
    require("plots", f"drawing {path.name}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    domains = list(curves)
    # One colour per condition in every panel (a panel without a condition would shift the
    # others' colours), and the legend lists them all.
    labels = list(dict.fromkeys(label for domain in domains for label in curves[domain]))
    colour = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    fig, axes = plt.subplots(1, max(1, len(domains)), figsize=(4.2 * max(1, len(domains)), 3.6), sharey=True, squeeze=False)
    for ax, domain in zip(axes[0], domains):
        for label, ys in curves[domain].items():
            ax.plot(range(1, len(ys) + 1), [100 * y for y in ys], marker="o", markersize=3, label=label,
                    color=colour[label])
        ax.set_title(domain)
        ax.set_xlabel("backprompts (rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("% solved")
    handles = [matplotlib.lines.Line2D([], [], color=colour[label], marker="o", markersize=3, label=label)
               for label in labels]
    # Below the panels: inside one it hides the lines that rise to its top left.
    rows = -(-len(handles) // 4) if handles else 0
    if handles:
        fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=min(4, len(handles)), frameon=False)
    fig.suptitle(f"Accuracy vs number of backprompts ({model})")
    fig.tight_layout(rect=(0, 0.06 * rows, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
