"""Reproduce CRITIC (Gou et al.): Table 1 (free-form QA on HotpotQA), Table 2 (math
program synthesis on GSM8K, MATH-500 and, given a file, SVAMP), Table 3 (toxicity
reduction on RealToxicityPrompts), Table 5 (hallucination detection) and the iteration
plots (task metric against correction round, with and without the oracle), on one model
with one cache, beside the paper's ChatGPT numbers.

Every condition is a labelled strategy of the shipped experiment file
experiment_files/critic.toml, whose include/exclude rules give each task its own; the
experiment engine runs the cells (resumable like any run) and `REPORT` writes the tables
from them and runs the hallucination study, so a finished reproduction only rewrites them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..domains.base import CriticDomain, Instance
from ..errors import SpecError, VeriloopError
from ..experiment.matrix import Cell
from ..experiment.overrides import Override, overrides
from ..experiment.reports import Report
from ..experiment.schema import Experiment
from ..extras import can_draw, require
from ..models.base import Model
from ..records import Trajectory
from ..runs.jsonl import write_file
from ..stats.metrics import wilson_interval
from ..strategies import Strategy
from ..studies.hallucination import DetectionRecord, run_hallucination_study, summarise_detection
from ..verifiers.critic import as_critic_task
from . import claim_study_dir, staged, with_option

if TYPE_CHECKING:
    from ..experiment.engine import CellPlan, EvalResult, Progress

NAME = "critic"  # the shipped experiment file and its report
# The tasks the report knows, by domain name: which of the paper's tables each is in.
KINDS = {"hotpotqa": "qa", "gsm8k": "math", "math500": "math", "svamp": "math", "toxicity": "toxicity"}
TASK_NAMES = (*KINDS, "table5")
ITERATION_LINES = ("CRITIC", "CRITIC*", "CRITIC w/o Tool")
LINE_STYLES = {
    "CRITIC": {"marker": "o", "linestyle": "-", "linewidth": 2.5, "color": "tab:blue"},
    "CRITIC*": {"marker": "s", "linestyle": "--", "linewidth": 1.5, "color": "tab:orange"},
    "CRITIC w/o Tool": {"marker": "^", "linestyle": ":", "linewidth": 1.5, "color": "tab:green"},
}


# ChatGPT (gpt-3.5-turbo) in the paper.
PAPER_QA = {  # HotpotQA EM, F1
    "CoT": ("32.7", "42.8"), "Self-Consistency": ("35.8", "47.0"), "ReAct": ("39.1", "50.2"),
    "ReAct → CRITIC": ("37.9", "50.0"), "CRITIC": ("40.3", "52.9"), "CRITIC w/o Tool": ("33.1", "46.1"),
    "CRITIC*": ("44.3", "56.9"), "Rejection Sampling": ("42.0", "55.6"),
}
PAPER_MATH = {  # GSM8K, SVAMP accuracy (MATH-500 is not in the paper)
    "PoT": {"gsm8k": "72.5", "svamp": "82.0"}, "CRITIC": {"gsm8k": "78.2", "svamp": "83.3"},
    "CRITIC w/o Tool": {"gsm8k": "77.0", "svamp": "82.0"}, "CRITIC*": {"gsm8k": "83.9", "svamp": "89.0"},
}
PAPER_TOXICITY = {  # expected max toxicity, toxic probability, perplexity, dist-2, dist-3
    "CRITIC": ("0.173", "0.040", "15.66", "0.78", "0.77"),
    "CRITIC w/o Tool": ("0.339", "0.223", "17.33", "0.77", "0.76"),
}
PAPER_TABLE5 = {  # HotpotQA accuracy, AUROC
    "lm-prob": ("-", "0.731"), "norm-entropy": ("-", "0.693"), "max-entropy": ("-", "0.749"),
    "self-consistency": ("-", "0.831"), "always-true": ("0.409", "-"), "p-true": ("0.540", "0.713"),
    "critic": ("0.765", "0.831"), "critic-notool": ("-", "-"),
}


def _mean_ci(values: list[float], low: float = 0.0, high: float = 1.0) -> tuple[float, float, float]:
    """Mean with a normal-approximation 95% interval, clipped to the metric's range [low,
    high] (F1, toxicity and dist-n live in [0, 1]; with few items the raw interval would
    leave it)."""
    if not values:
        return (0.0, 0.0, 0.0)
    mean = statistics.fmean(values)
    if len(values) < 2:
        return (mean, mean, mean)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values))
    return (mean, max(low, mean - half), min(high, mean + half))


def _pct(p: float) -> str:
    return f"{100 * p:.1f}"


def _prop_cell(successes: int, n: int) -> str:
    lo, hi = wilson_interval(successes, n)
    return f"{_pct(successes / n if n else 0)} ({_pct(lo)}-{_pct(hi)})"


def _fraction_cell(successes: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = wilson_interval(successes, n)
    return f"{successes / n:.3f} ({lo:.2f}-{hi:.2f})"


def _mean_cell(values: list[float], scale: float = 100.0, digits: int = 1) -> str:
    m, lo, hi = _mean_ci(values)
    return f"{m * scale:.{digits}f} ({lo * scale:.{digits}f}-{hi * scale:.{digits}f})"


def metric_at_round(domain: CriticDomain, instances: dict[str, Instance], t: Trajectory, round: int, key: str) -> float:
    """The task metric of the answer the loop would have returned had it stopped after
    `round` rounds (a finished loop keeps its last answer)."""
    if not t.rounds:
        return 0.0
    text = t.rounds[min(round, len(t.rounds)) - 1].text
    return float(domain.metrics(instances[t.instance_id], text).get(key, 0.0))


class Options(BaseModel):
    """The report's options (report_options in the file)."""

    model_config = ConfigDict(extra="forbid")

    table5: bool = True  # the hallucination study on the HotpotQA questions
    hallucination_n: int | None = Field(None, ge=1)  # its questions, the first of Table 1's (default: all n)
    hallucination_samples: int = Field(10, ge=2)  # samples for the self-consistency confidence


def check(experiment: Experiment, options: BaseModel) -> None:
    generators = experiment.generator_names()
    if len(generators) != 1:
        raise SpecError(("report",), f"the {NAME} report compares the conditions of one model, not of "
                        f"{len(generators)} ({', '.join(generators)}): run one at a time")
    if experiment.tasks:
        raise SpecError(("tasks",), f"the {NAME} report reads the tasks {', '.join(KINDS)}, not tasks of your own")
    for i, entry in enumerate(experiment.domains):
        if entry.name not in KINDS:
            raise SpecError(("domains", i, "name"), f"the {NAME} report reads the tasks {', '.join(KINDS)}, "
                            f"not {entry.name!r}")


@runtime_checkable
class _ScoresText(Protocol):
    """A backend that gives the log-probabilities of a continuation (llama.cpp's)."""

    async def score(self, messages: list[dict[str, str]], continuation: str) -> list[Any]: ...


def _perplexity(model: Model) -> Any:
    """Log-probabilities of a text after a prompt, where the backend can score text (a
    llama.cpp model, found under the counting and cache wrappers); None elsewhere."""
    from ..models.counting import innermost

    inner = innermost(model)
    if not isinstance(inner, _ScoresText):
        return None

    async def logprobs(messages: list[dict[str, str]], text: str) -> list[float]:
        return [t.logprob for t in await inner.score(messages, text)]

    return logprobs


async def report(
    experiment: Experiment, result: EvalResult, models: Mapping[str, Model], progress: Progress | None
) -> list[str]:
    """critic.md (Tables 1, 2, 3 and 5 in the paper's order), critic.csv, iterations.png
    and reproduction.json from the cells, after the hallucination study (Table 5)."""
    from ..experiment.engine import build_domain, tools_for
    from ..experiment.results import cell_trajectories

    options = Options.model_validate(experiment.report_options)
    generator, seed = experiment.generator_names()[0], experiment.seeds[0]
    model = models[generator]
    out_dir = result.out_dir
    update = progress.update if progress else None
    cells_of: dict[str, list[CellPlan]] = {}
    for p in result.plans:
        if p.cell.model == generator:
            cells_of.setdefault(p.cell.domain, []).append(p)
    corrections = {getattr(p.strategy, "max_corrections", None) for p in result.plans if p.strategy.kind == "critic"}
    max_corrections = corrections.pop() if len(corrections) == 1 else None
    payload: dict[str, Any] = {
        "model": model.name, "instances": experiment.n, "seed": seed, "k": experiment.k,
        "max_corrections": "task default" if max_corrections is None else max_corrections, "tasks": {},
    }
    header: list[str] = [f"# CRITIC reproduction ({model.name})", ""]
    # Sections are gathered by table and written in the paper's order at the end.
    qa_md: list[str] = []
    tox_md: list[str] = []
    table5_md: list[str] = []
    notes: list[str] = []
    curves: dict[str, dict[str, list[float]]] = {}
    math_rows: dict[str, dict[str, str]] = {}
    math_provenance: list[str] = []
    for entry in experiment.domains:
        key, kind = entry.key, KINDS[entry.name]
        cells = cells_of.get(key, [])
        if not cells and not (kind == "qa" and options.table5):
            continue
        dom = cells[0].domain if cells else build_domain(experiment, entry)
        # check() admits the CRITIC tasks only, so this never refuses.
        domain, instances, where = as_critic_task(dom.domain), dom.instances, dom.data
        by_id = {i.id: i for i in instances}
        specs = task_specs(cells)
        trajectories = [t for p in cells for t in cell_trajectories(p)]
        if cells:
            label_of = {st.canonical: label for label, st in specs}
            metric_key = {"qa": "f1", "math": "accuracy", "toxicity": "toxicity"}[kind]
            curves[key] = iteration_curve(domain, by_id, trajectories, label_of, metric_key)
        if kind == "qa":
            if cells:
                table, rows = qa_table(domain, by_id, trajectories, specs)
                qa_md += [f"## Table 1: free-form QA, {key} ({len(instances)} questions from {where})", "", table, ""]
                payload["tasks"][key] = rows
            if options.table5:
                h_instances = instances[: options.hallucination_n or len(instances)]
                study_dir = out_dir / Cell(generator, key, "-", seed).directory().parent / f"hallucination-seed{seed}"
                claim_study_dir(study_dir, experiment, generator, model, dom, seed)
                records = await run_hallucination_study(
                    model, domain, h_instances, study_dir, tools_for(experiment, dom), seed=seed,
                    samples=options.hallucination_samples, on_progress=staged(update, "table 5"),
                )
                table5, rows5 = table5_markdown(records)
                table5_md += [f"## Table 5: hallucination detection on {key} ({len(records)} questions, "
                              f"{options.hallucination_samples} samples for self-consistency)", "", table5, ""]
                payload["table5"] = rows5
        elif kind == "math":
            rows = math_rows_for(domain, trajectories, specs)
            for label, cell in rows.items():
                math_rows.setdefault(label, {})[key] = cell
            math_provenance.append(f"{key}: {len(instances)} problems from {where}")
            payload["tasks"][key] = rows
        else:
            generations = len({p.cell.seed for p in cells})
            table, rows = await toxicity_table(domain, by_id, trajectories, specs, _perplexity(model))
            tox_md += [f"## Table 3: toxicity reduction ({len(instances)} prompts from {where}, "
                       f"{generations} generations each)", "", table, ""]
            payload["tasks"][key] = rows
    math_md: list[str] = []
    if math_rows:
        math_md += ["## Table 2: mathematical program synthesis", "", math_table(math_rows), "",
                    "Problems: " + "; ".join(math_provenance), ""]
        if "svamp" not in [d.name for d in experiment.domains]:
            notes.append("svamp: no data file given (reproduce critic --svamp FILE); not run.")
    files = ["critic.md", "critic.csv", "reproduction.json"]
    if curves and can_draw("iterations.png"):
        plot_iterations(out_dir / "iterations.png", curves, model.name)
        files.insert(2, "iterations.png")
        notes.append("The task metric after each correction round (round 1 = the initial answer) for CRITIC, CRITIC* "
                     "and CRITIC w/o Tool is plotted in `iterations.png`; the values are in `reproduction.json`.")
    payload["iterations"] = curves
    tail = ["## Notes", "", *(f"- {n}" for n in notes), ""] if notes else []
    write_file(out_dir / "critic.md", "\n".join(header + qa_md + math_md + tox_md + table5_md + tail))
    write_file(out_dir / "reproduction.json", json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    write_csv(out_dir / "critic.csv", payload)
    return files


REPORT = Report(options=Options, run=report, check=check)


def task_specs(cells: list[CellPlan]) -> list[tuple[str, Strategy]]:
    """A task's conditions (label, strategy) in the file's order, once each (toxicity has
    a cell per generation)."""
    found: dict[str, Strategy] = {}
    for p in cells:
        found.setdefault(p.cell.strategy, p.strategy)
    return list(found.items())


def task_conditions(experiment: Experiment, task: str) -> list[tuple[str, str]]:
    """A task's conditions in the experiment, (label, spec), in the file's order."""
    labels = dict.fromkeys(c.strategy for c in experiment.cells() if c.domain == task)
    return [(label, entry.spec) for label in labels if (entry := experiment.strategy_by_name(label))]


def option_sets(
    experiment: Experiment, *, k: int | None = None, max_corrections: int | None = None,
    generations: int | None = None, seed: int | None = None,
) -> list[Override]:
    """Overrides of the file for the reproduction's options, over the file as it is: `k` is
    self-consistency's samples and rejection sampling's n, `max_corrections` every CRITIC
    spec's, `generations` the toxicity cells' seeds (from `seed`, one each)."""
    items: dict[str, object] = {"k": k, "seeds": None if seed is None else [seed]}
    for i, entry in enumerate(experiment.strategies):
        spec = entry.spec
        if k is not None and spec.partition(":")[0] == "rejection-sampling":
            spec = with_option(spec, "n", k)
        if max_corrections is not None and spec.partition(":")[0] == "critic":
            spec = with_option(spec, "max_corrections", max_corrections)
        if spec != entry.spec:
            items[f"strategies.{i}.spec"] = spec
    if generations is not None or seed is not None:
        index = next((i for i, rule in enumerate(experiment.include)
                      if rule.values("domain") == ["toxicity"] and rule.seed is not None), None)
        if index is None:
            raise VeriloopError(f"{experiment.name}: no [[include]] rule with the toxicity generations' seeds")
        first = experiment.seeds[0] if seed is None else seed
        count = generations if generations is not None else 1 + len(experiment.include[index].values("seed") or [])
        items[f"include.{index}.seed"] = list(range(first + 1, first + count))
    return overrides(items)


def iteration_curve(
    domain: CriticDomain, by_id: dict[str, Instance], ts: list[Trajectory], label_of: dict[str, str], key: str, rounds: int = 5
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for label in ITERATION_LINES:
        chosen = [t for t in ts if label_of.get(t.strategy) == label]
        if chosen:
            out[label] = [
                statistics.fmean(metric_at_round(domain, by_id, t, r, key) for t in chosen) for r in range(1, rounds + 1)
            ]
    return out


def _cost(ts: list[Trajectory]) -> str:
    calls = sum(len(t.calls) for t in ts)
    tokens = sum(c.prompt_tokens + c.completion_tokens for t in ts for c in t.calls)
    tool_calls = sum(len(t.tool_calls) for t in ts)
    return f"{calls} / {tool_calls} / {tokens}"


def qa_table(domain: CriticDomain, by_id: dict[str, Instance], ts: list[Trajectory], specs: list) -> tuple[str, dict]:
    lines = ["| method | EM (95% CI) | F1 (95% CI) | paper EM | paper F1 | model calls / tool calls / tokens |",
             "|---|---|---|---|---|---|"]
    rows = {}
    for label, st in specs:
        chosen = [t for t in ts if t.strategy == st.canonical]
        metrics = [domain.metrics(by_id[t.instance_id], t.final_text) for t in chosen]
        em = [m.get("em", 0.0) for m in metrics]
        f1 = [m.get("f1", 0.0) for m in metrics]
        rows[label] = {"n": len(chosen), "em": statistics.fmean(em) if em else None, "f1": statistics.fmean(f1) if f1 else None}
        paper = PAPER_QA.get(label, ("-", "-"))
        lines.append(f"| {label} | {_prop_cell(int(sum(em)), len(em))} | {_mean_cell(f1)} | {paper[0]} | {paper[1]} | {_cost(chosen)} |")
    return "\n".join(lines), rows


def math_rows_for(domain: CriticDomain, ts: list[Trajectory], specs: list) -> dict[str, str]:
    rows = {}
    for label, st in specs:
        chosen = [t for t in ts if t.strategy == st.canonical]
        rows[label] = f"{_prop_cell(sum(t.correct for t in chosen), len(chosen))} [{_cost(chosen)}]"
    return rows


def math_table(rows: dict[str, dict[str, str]]) -> str:
    datasets = sorted({d for r in rows.values() for d in r})
    head = "| method | " + " | ".join(f"{d} (95% CI) [calls / tool calls / tokens] | {d} paper" for d in datasets) + " |"
    lines = [head, "|---|" + "---|---|" * len(datasets)]
    for label, row in rows.items():
        cells = [f"{row.get(d, '-')} | {PAPER_MATH.get(label, {}).get(d, '-')}" for d in datasets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def toxicity_table(domain: CriticDomain, by_id: dict[str, Instance], ts: list[Trajectory], specs: list, perplexity) -> tuple[str, dict]:
    from ..domains.toxicity import distinct_n, expected_max_toxicity, toxic_probability

    lines = ["| method | exp. max toxicity (95% CI) | P(toxic ≥ once) (95% CI) | perplexity | dist-2 (95% CI) | dist-3 (95% CI) | paper (max / prob / ppl / dist-2 / dist-3) |",
             "|---|---|---|---|---|---|---|"]
    rows = {}
    for label, st in specs:
        chosen = [t for t in ts if t.strategy == st.canonical]
        by_prompt: dict[str, list[Trajectory]] = {}
        for t in chosen:
            by_prompt.setdefault(t.instance_id, []).append(t)
        scores = [[domain.metrics(by_id[i], t.final_text).get("toxicity", 0.0) for t in group] for i, group in by_prompt.items()]
        texts = {i: [domain.extract_answer(by_id[i], t.final_text or "") or "" for t in group] for i, group in by_prompt.items()}
        ppl = None
        if perplexity is not None:
            logprobs = []
            for i, group in texts.items():
                for text in group:
                    if text:
                        logprobs.append(await perplexity(domain.prompt(by_id[i]), text))  # type: ignore[misc]
            from ..domains.toxicity import perplexity as ppl_of

            ppl = ppl_of(logprobs) if logprobs else None
        d2s = [distinct_n(g, 2) for g in texts.values()]
        d3s = [distinct_n(g, 3) for g in texts.values()]
        d2 = statistics.fmean(d2s) if d2s else 0.0
        d3 = statistics.fmean(d3s) if d3s else 0.0
        emt = expected_max_toxicity(scores) if scores else 0.0
        prob = toxic_probability(scores) if scores else 0.0
        maxima = [max(g) for g in scores]
        toxic_prompts = sum(m > 0.5 for m in maxima)
        rows[label] = {"expected_max_toxicity": emt, "toxic_probability": prob, "perplexity": ppl, "dist2": d2, "dist3": d3,
                       "prompts": len(by_prompt)}
        paper = " / ".join(PAPER_TOXICITY.get(label, ("-",) * 5))
        ppl_s = f"{ppl:.2f}" if ppl is not None else "n/a"
        lines.append(
            f"| {label} | {_mean_cell(maxima, 1.0, 3)} | {_fraction_cell(toxic_prompts, len(maxima))} | "
            f"{ppl_s} | {_mean_cell(d2s, 1.0, 2)} | {_mean_cell(d3s, 1.0, 2)} | {paper} |"
        )
    return "\n".join(lines), rows


def table5_markdown(records: list[DetectionRecord]) -> tuple[str, dict]:
    results = summarise_detection(records)
    right = sum(r.correct for r in records)
    lines = [f"Answers right (F1 > 0.6): {right}/{len(records)}.", "",
             "| method | accuracy (95% CI) | AUROC (95% bootstrap CI) | paper accuracy | paper AUROC | questions with a confidence |", "|---|---|---|---|---|---|"]
    rows = {}
    for r in results:
        acc = f"{r.accuracy:.3f}" if r.accuracy is not None else "-"
        if r.accuracy_ci95:
            acc += f" ({r.accuracy_ci95[0]:.2f}-{r.accuracy_ci95[1]:.2f})"
        auc = f"{r.auroc:.3f}" if r.auroc is not None else "-"
        if r.auroc_ci95:
            auc += f" ({r.auroc_ci95[0]:.2f}-{r.auroc_ci95[1]:.2f})"
        pa, pu = PAPER_TABLE5.get(r.method, ("-", "-"))
        lines.append(f"| {r.method} | {acc} | {auc} | {pa} | {pu} | {r.n}/{r.n + r.missing} |")
        rows[r.method] = r.model_dump()
    return "\n".join(lines), rows


def plot_iterations(path: Path, curves: dict[str, dict[str, list[float]]], model: str) -> None:
    require("plots", f"drawing {path.name}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    names = [n for n in curves if curves[n]]
    if not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    ylabels = {"hotpotqa": "F1", "toxicity": "mean toxicity"}
    for ax, name in zip(axes[0], names):
        for label, ys in curves[name].items():
            # Lines often coincide on small runs: styles keep each one visible.
            style = LINE_STYLES.get(label, {})
            ax.plot(range(1, len(ys) + 1), ys, markersize=5, label=label, **style)
        ax.set_title(name)
        ax.set_xlabel("round (1 = initial answer)")
        ax.set_ylabel(ylabels.get(name, "accuracy"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"CRITIC: task metric against correction round ({model})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_csv(path: Path, payload: dict) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["task", "condition", "metric", "value"])
    for task, rows in payload.get("tasks", {}).items():  # type: ignore[union-attr]
        for cond, row in rows.items():
            if isinstance(row, dict):
                for metric, value in row.items():
                    writer.writerow([task, cond, metric, value])
            else:
                writer.writerow([task, cond, "accuracy (95% CI) [cost]", row])
    write_file(path, buf.getvalue())
