"""Reproduce the self-verification paper (Stechly, Valmeekam, Kambhampati): Table 1
(every prompting condition on four domains), Table 2 / A2 (the LLM as verifier, plain and
chain-of-thought), the critique tables (A3-A6) and Figure 2 (accuracy against the number
of backprompts), on any model, side by side with the paper's GPT-4 numbers.

Everything is resumable: trajectories and study records are appended as they finish, and
calls are cached, so re-running the command after an interruption continues and a
finished reproduction only rewrites the tables.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..domains import get_domain
from ..domains.base import Domain, Instance
from ..experiment.metrics import StrategySummary
from ..experiment.runner import load_trajectories, run_experiment
from ..models.base import Model
from ..records import Trajectory
from ..strategies import parse_strategy
from ..studies.verification import (
    JudgedItem,
    game24_evaluation_table,
    report_table,
    run_verification_study,
    verification_table,
    write_json,
)
from . import staged

# (column label, strategy spec); the paper's Table 1 columns, in its order.
CONDITIONS: list[tuple[str, str]] = [
    ("S.P.", "standard"),
    ("LLM+LLM", "backprompt:verifier=llm,feedback=llm"),
    ("Sound B.F.", "backprompt:verifier=sound,feedback=binary"),
    ("Sound F.E.F.", "backprompt:verifier=sound,feedback=first"),
    ("Sound A.E.F.", "backprompt:verifier=sound,feedback=all"),
    ("Sampling k=15", "sampling:k=15"),
    ("Sampling k=25", "sampling:k=25"),
    ("S.C. k=15", "self-consistency:k=15"),
]
# The paper has no all-errors condition for Game of 24 ("due to the simplicity of the domain").
SKIP = {("game24", "Sound A.E.F.")}
BACKPROMPT_LINES = ["LLM+LLM", "Sound B.F.", "Sound F.E.F.", "Sound A.E.F.", "Sampling k=25"]


@dataclass(frozen=True)
class DomainSource:
    name: str
    data: str | None  # path below the data root; None: generated instances
    offset: int = 0


# The paper's instances: 4nums.com ranks 901-1000, the 320 graphs, PlanBench problems.
SOURCES = [
    DomainSource("game24", "game24/24.csv", 900),
    DomainSource("coloring", "graph_coloring"),
    DomainSource("blocksworld", "planbench/blocksworld"),
    DomainSource("mystery_blocksworld", "planbench/mystery_blocksworld"),
]

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


def load_domain_instances(source: DomainSource, data_root: Path | None, n: int) -> tuple[Domain, list[Instance], str]:
    domain = get_domain(source.name)
    path = data_root / source.data if data_root is not None and source.data else None
    if path is not None and path.exists():
        instances = domain.load_instances(str(path), n=n, offset=source.offset)
        where = f"{path} (from #{source.offset + 1})"
    else:
        instances = domain.load_instances(None, n=n)
        where = "generated"
    return domain, instances, where


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
    sources = [s for s in SOURCES if domains is None or s.name in domains]
    conditions = [(label, parse_strategy(spec, {"max_rounds": max_rounds})) for label, spec in CONDITIONS]
    summaries: dict[str, dict[str, StrategySummary]] = {}
    trajectories: dict[str, list[Trajectory]] = {}
    items: list[JudgedItem] = []
    provenance: dict[str, str] = {}
    for source in sources:
        domain, instances, where = load_domain_instances(source, data_root, n)
        provenance[source.name] = f"{len(instances)} instances, {where}"
        chosen = [(label, s) for label, s in conditions if (source.name, label) not in SKIP]
        result = await run_experiment(
            model, domain, [s for _, s in chosen], instances, out_dir / source.name, seed=seed,
            config={"reproduce": "self-verification"},
            on_progress=staged(on_progress, f"{source.name}: Table 1"),
        )
        summaries[source.name] = {label: s for (label, _), s in zip(chosen, result.summaries)}
        keys = {(s.canonical, i.id) for _, s in chosen for i in instances}
        trajectories[source.name] = [
            t for t in load_trajectories(out_dir / source.name / "trajectories.jsonl") if (t.strategy, t.instance_id) in keys
        ]
        study_instances = instances[:verification_n]
        items += await run_verification_study(
            model, domain, study_instances, out_dir / source.name, seed=seed,
            on_progress=staged(on_progress, f"{source.name}: verification study"),
        )
    names = [s.name for s in sources]
    labels = {label: s.canonical for label, s in conditions}
    write_table1(out_dir, summaries, provenance, model.name)
    (out_dir / "table2.md").write_text(table2_markdown(items, names, model.name))
    (out_dir / "critique.md").write_text(critique_markdown(items, names))
    curves = accuracy_by_round(trajectories, labels, max_rounds)
    plot_figure2(out_dir / "figure2.png", curves, model.name)
    payload = {
        "model": model.name, "instances_per_domain": n, "verification_instances": verification_n,
        "max_rounds": max_rounds, "seed": seed, "provenance": provenance,
        "table1": {d: {label: s.model_dump() for label, s in row.items()} for d, row in summaries.items()},
        "figure2": curves,
    }
    write_json(out_dir / "reproduction.json", payload)
    return payload


def _cell(s: StrategySummary) -> str:
    lo, hi = s.accuracy_ci95
    return f"{s.accuracy:.0%} ({lo:.0%}-{hi:.0%})"


def write_table1(out_dir: Path, summaries: dict[str, dict[str, StrategySummary]], provenance: dict[str, str], model: str) -> None:
    labels = [label for label, _ in CONDITIONS]
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
        lines.append(f"| {domain} (GPT-4, paper) | " + " | ".join(PAPER_TABLE1[domain][l] for l in labels) + " |")
    lines += ["", "Cost (model calls / tokens, prompt + completion):", "",
              "| domain | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for domain, row in summaries.items():
        cells = [f"{row[l].model_calls} / {row[l].prompt_tokens + row[l].completion_tokens}" if l in row else "n/a" for l in labels]
        lines.append(f"| {domain} | " + " | ".join(cells) + " |")
    lines += ["", "Instances: " + "; ".join(f"{d}: {p}" for d, p in provenance.items()), ""]
    (out_dir / "table1.md").write_text("\n".join(lines))
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
                             s.completion_tokens, s.seconds, PAPER_TABLE1[domain][label]])
    (out_dir / "table1.csv").write_text(buf.getvalue())


def table2_markdown(items: list[JudgedItem], domains: list[str], model: str) -> str:
    paper = ["| domain | accuracy | false positive rate | false negative rate |", "|---|---|---|---|"]
    paper += [f"| {d} | {' | '.join(PAPER_TABLE2[d])} |" for d in domains]
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
            chosen = [t for t in ts if t.strategy == labels[label]]
            if not chosen:
                continue
            curves[domain][label] = [
                sum(t.rounds[min(r, len(t.rounds)) - 1].correct for t in chosen if t.rounds) / len(chosen)
                for r in range(1, max_rounds + 1)
            ]
    return curves


def plot_figure2(path: Path, curves: dict[str, dict[str, list[float]]], model: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    domains = list(curves)
    fig, axes = plt.subplots(1, max(1, len(domains)), figsize=(4.2 * max(1, len(domains)), 3.6), sharey=True, squeeze=False)
    for ax, domain in zip(axes[0], domains):
        for label, ys in curves[domain].items():
            ax.plot(range(1, len(ys) + 1), [100 * y for y in ys], marker="o", markersize=3, label=label)
        ax.set_title(domain)
        ax.set_xlabel("backprompts (rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("% solved")
    axes[0][-1].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Accuracy vs number of backprompts ({model})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
