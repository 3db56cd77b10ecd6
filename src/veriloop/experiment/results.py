"""An experiment's results: one row per cell (results.csv, .md, .json), the accuracy vs
tokens frontier (frontier.png), accuracy at matched token budgets and each pair of
strategies compared on the same instances (stats.paired), all computed from the
cells' trajectories on disk, never from anything else."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..extras import can_draw
from ..records import CallRecord, Trajectory
from ..stats.metrics import VerifierScore, score_judgements, summarise
from ..stats.paired import RESAMPLES, PairedComparison, difference_text, p_text, pairwise
from .budget import CallPrice, usage_of
from .executor import CellPlan, price_of, price_records
from .schema import Experiment

if TYPE_CHECKING:
    from .engine import EvalResult

COLUMNS = (
    "model", "domain", "strategy", "seed", "n", "accuracy", "ci_low", "ci_high", "mean_rounds", "model_calls",
    "prompt_tokens", "completion_tokens", "seconds", "usd", "planned", "status", "verifier_model", "critic_model",
    "checker_model", "escalation_model", "run_dir",
)


class CellResult(BaseModel):
    """One cell's figures over the trajectories it finished (`n` of `planned`)."""

    model: str
    domain: str
    strategy: str
    seed: int
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    mean_rounds: float
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    usd: float
    planned: int
    status: str  # "complete" | "incomplete"
    verifier_model: str | None = None
    critic_model: str | None = None
    checker_model: str | None = None
    escalation_model: str | None = None
    canonical: str
    run_dir: str  # the cell's run directory, relative to the experiment's (which may move)

    @property
    def tokens_per_instance(self) -> float:
        return (self.prompt_tokens + self.completion_tokens) / self.n if self.n else 0.0


def cell_trajectories(p: CellPlan) -> list[Trajectory]:
    """The cell's finished trajectories of its planned instances, in instance order."""
    by_id = {t.instance_id: t for t in p.recorded}
    return [by_id[i.id] for i in p.domain.instances if i.id in by_id]


def cell_result(experiment: Experiment, p: CellPlan) -> CellResult:
    ts = cell_trajectories(p)
    s = summarise(p.strategy.canonical, ts)
    roles = dict(p.cell.roles)
    return CellResult(
        model=p.cell.model, domain=p.cell.domain, strategy=p.cell.strategy, seed=p.cell.seed, n=s.n,
        correct=s.correct, accuracy=s.accuracy, ci_low=s.accuracy_ci95[0], ci_high=s.accuracy_ci95[1],
        mean_rounds=s.mean_rounds, model_calls=s.model_calls, prompt_tokens=s.prompt_tokens,
        completion_tokens=s.completion_tokens, seconds=s.seconds, usd=usage_of(ts, price_of(experiment, p.cell)).usd,
        planned=p.planned, status="complete" if s.n == p.planned else "incomplete",
        verifier_model=roles.get("verifier_model"), critic_model=roles.get("critic_model"),
        checker_model=roles.get("checker_model"), escalation_model=roles.get("escalation_model"), canonical=p.strategy.canonical, run_dir=str(p.cell.directory()),
    )


def csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def results_csv(rows: Sequence[CellResult]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        data = row.model_dump()
        writer.writerow([csv_cell(data[c]) for c in COLUMNS])
    return buf.getvalue()


TABLE_HEADERS = ("model", "domain", "strategy", "seed", "accuracy", "95% CI", "mean rounds", "calls", "tokens",
                 "seconds", "usd", "status")


def table_rows(rows: Sequence[CellResult]) -> list[list[str]]:
    """The printed table's cells (results.md and the terminal show the same figures)."""
    return [[
        r.model, r.domain, r.strategy, str(r.seed), f"{r.correct}/{r.n} = {r.accuracy:.0%}" if r.n else "-",
        f"{r.ci_low:.0%}-{r.ci_high:.0%}" if r.n else "-", f"{r.mean_rounds:.2f}", str(r.model_calls),
        f"{r.prompt_tokens + r.completion_tokens}", f"{r.seconds:.1f}", f"{r.usd:.4f}",
        "complete" if r.status == "complete" else f"incomplete {r.n}/{r.planned}",
    ] for r in rows]


def _markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)]


def groups_of(plans: Sequence[CellPlan]) -> dict[tuple[str, str, int], dict[str, list[Trajectory]]]:
    """Per (domain, model, seed): each strategy's trajectories on the instances every
    strategy there finished (the equal-budget comparison needs the same instances)."""
    grouped: dict[tuple[str, str, int], dict[str, list[Trajectory]]] = {}
    for p in plans:
        grouped.setdefault((p.cell.domain, p.cell.model, p.cell.seed), {})[p.cell.strategy] = cell_trajectories(p)
    for key, groups in grouped.items():
        common = set.intersection(*({t.instance_id for t in ts} for ts in groups.values()))
        grouped[key] = {label: [t for t in ts if t.instance_id in common] for label, ts in groups.items()}
    return grouped


def paired_of(plans: Sequence[CellPlan]) -> list[tuple[tuple[str, str, int], PairedComparison]]:
    """Per (model, domain, seed): each pair of its cells (different strategies), the
    later against the earlier in the experiment's order, on the instances both finished."""
    grouped: dict[tuple[str, str, int], dict[str, list[Trajectory]]] = {}
    for p in plans:
        grouped.setdefault((p.cell.model, p.cell.domain, p.cell.seed), {})[p.cell.strategy] = cell_trajectories(p)
    return [(key, c) for key, groups in grouped.items() for c in pairwise(groups)]


PAIRED_HEADERS = ("model", "domain", "seed", "a", "b", "n", "a's accuracy", "b's accuracy",
                  "b - a in points (95% CI)", "only a solved", "only b solved", "exact McNemar p")


def paired_markdown(paired: Sequence[tuple[tuple[str, str, int], PairedComparison]]) -> list[str]:
    """results.md's paired comparisons section (nothing when no two strategies share a
    model, domain and seed)."""
    if not paired:
        return []
    rows = [[
        model, domain, str(seed), c.a, c.b, str(c.n),
        f"{c.a_correct}/{c.n} = {c.a_accuracy:.0%}" if c.n else "-",
        f"{c.b_correct}/{c.n} = {c.b_accuracy:.0%}" if c.n else "-",
        difference_text(c, unit=""), str(c.a_only), str(c.b_only), p_text(c.p_value),
    ] for (model, domain, seed), c in paired]
    return ["", "## Paired comparisons", "",
            "Each pair of strategies with the same model, domain and seed, on the instances both finished: b's "
            f"accuracy minus a's, in points, with its 95% paired bootstrap interval ({RESAMPLES:,} resamples of the "
            "instances), the instances only one of them solved, and the exact McNemar p-value (a two-sided "
            "binomial test on those discordant instances).", "",
            *_markdown_table(PAIRED_HEADERS, rows)]


class VerifierRow(BaseModel):
    """One cell's in-loop verifier against ground truth, over every round it judged."""

    model: str
    domain: str
    seed: int
    strategy: str
    verifiers: list[str]  # the verdicts' verifier names, as recorded
    score: VerifierScore


def verifier_rows(rows: Sequence[CellResult], plans: Sequence[CellPlan]) -> list[VerifierRow]:
    """Each cell whose rounds carry verdicts: the verdicts against the rounds' ground truth.
    A loop judges its later rounds only after rejecting the earlier ones, so these rates
    are over the answers each loop met, not over one shared set (`veriloop rescore` judges
    one run's answers with any verifier)."""
    out = []
    for r, p in zip(rows, plans):
        judged = [(x.verdict, x.correct) for t in cell_trajectories(p) for x in t.rounds if x.verdict is not None]
        if judged:
            out.append(VerifierRow(
                model=r.model, domain=r.domain, seed=r.seed, strategy=r.strategy,
                verifiers=sorted({v.verifier for v, _ in judged}),
                score=score_judgements(((v.ok, correct) for v, correct in judged),
                                       unreadable=sum(v.unreadable for v, _ in judged)),
            ))
    return out


def _rate(k: int, n: int, ci: tuple[float, float] | None) -> str:
    return f"{k}/{n} = {k / n:.0%} ({ci[0]:.0%}-{ci[1]:.0%})" if n and ci else "-"


def verifiers_markdown(rows: Sequence[VerifierRow]) -> list[str]:
    """results.md's section on the verifiers against ground truth (nothing when no cell
    recorded a verdict)."""
    if not rows:
        return []
    table = [[
        r.model, r.domain, str(r.seed), r.strategy, ", ".join(r.verifiers), str(r.score.n),
        _rate(round(r.score.accuracy * r.score.n), r.score.n, r.score.accuracy_ci95),
        _rate(r.score.false_positives, r.score.negatives, r.score.fpr_ci95),
        _rate(r.score.false_negatives, r.score.positives, r.score.fnr_ci95), str(r.score.unreadable),
    ] for r in rows]
    return ["", "## Verifiers against ground truth", "",
            "Every round a cell's verifier judged, against that round's ground truth, with Wilson 95% intervals: "
            "false accepts are wrong answers it accepted, false rejects right answers it rejected (an unreadable "
            "verdict counts as a rejection). A loop judges a later round only after rejecting the one before, so "
            "each row is over the answers its own loop met; `veriloop rescore` judges one run's answers with any "
            "verifier.", "",
            *_markdown_table(("model", "domain", "seed", "strategy", "verifier", "rounds judged", "accuracy",
                              "false accepts (of wrong)", "false rejects (of right)", "unreadable"), table)]


def write_results(experiment: Experiment, result: EvalResult) -> list[CellResult]:
    """results.csv/.md/.json, frontier.png and the matched-budget tables in the
    experiment's directory; returns the rows."""
    from ..stats.frontier import FrontierPanel, FrontierPoint, matched_budget_markdown, plot_frontier
    from ..stats.pools import (
        experiment_pools,
        frontier_curves,
        frontier_note,
        pools_json,
        pools_markdown,
        pools_section,
    )

    out = result.out_dir
    rows = [cell_result(experiment, p) for p in result.plans]
    _write(out / "results.csv", results_csv(rows))
    pools = experiment_pools((r.domain, r.model, r.seed, r.strategy, cell_trajectories(p))
                             for r, p in zip(rows, result.plans))
    paired = paired_of(result.plans)
    verifiers = verifier_rows(rows, result.plans)
    payload = {
        "experiment": experiment.name, "cells": [r.model_dump() for r in rows], "stopped": result.stopped,
        "incomplete_cells": result.incomplete_cells, "pools": pools_json(pools),
        "paired": [{"model": m, "domain": d, "seed": s, **c.model_dump()} for (m, d, s), c in paired],
        "verifiers": [v.model_dump() for v in verifiers],
        # Where each model's dollars come from: its `price`, the genai-prices table (and
        # which), free (a local model) or unknown ($0).
        "prices": price_records(experiment, experiment.models_used([p.cell for p in result.plans])),
    }
    _write(out / "results.json", json.dumps(payload, indent=2) + "\n")
    grouped = groups_of(result.plans)
    # A group's calls in dollars, at the price of the model that answered each (its
    # cells share their generator, and so their roles' models).
    call_usd = {(p.cell.domain, p.cell.model, p.cell.seed): price_of(experiment, p.cell) for p in result.plans}
    panels = []
    budget_tables = []
    dollar_tables = []
    pool_tables: list[str] = []
    for (domain, model, seed), groups in grouped.items():
        title = f"{domain} · {model}" + (f" · seed {seed}" if len(experiment.seeds) > 1 else "")
        by_label = {r.strategy: r for r in rows if (r.domain, r.model, r.seed) == (domain, model, seed)}
        points = [
            FrontierPoint(label, by_label[label].tokens_per_instance, by_label[label].accuracy,
                          by_label[label].ci_low, by_label[label].ci_high)
            for label in groups if by_label[label].n
        ]
        if points:
            group_pools = pools.get((domain, model, seed), [])
            panels.append(FrontierPanel(title, points, frontier_curves(group_pools), frontier_note(group_pools)))
            pool_tables.append(pools_markdown(title, group_pools))
        if any(groups.values()):
            ran = {k: v for k, v in groups.items() if v}
            budget_tables.append(matched_budget_markdown(title, ran))
            usd = call_usd[(domain, model, seed)]

            def cost(c: CallRecord, usd: CallPrice = usd) -> float:
                return usd(c.role, c.prompt_tokens, c.completion_tokens, c.cached_prompt_tokens, c.reasoning_tokens)

            if any(cost(c) > 0 for ts in ran.values() for t in ts for c in t.calls):
                dollar_tables.append(matched_budget_markdown(title, ran, cost))
    if panels and can_draw("frontier.png"):
        plot_frontier(out / "frontier.png", panels)
    lines = [f"# {experiment.name}", ""]
    if experiment.description:
        lines += [experiment.description.strip(), ""]
    lines += _markdown_table(TABLE_HEADERS, table_rows(rows))
    if result.stopped:
        lines += ["", f"Stopped early: {result.stopped}."]
    if result.notes:
        lines += ["", *(f"Note: {note}." for note in result.notes)]
    if result.incomplete_cells:
        lines += ["", f"Incomplete cells ({len(result.incomplete_cells)}): " + "; ".join(result.incomplete_cells) + "."]
    lines += ["", "## Accuracy at matched token budgets", "",
              "Accuracy vs mean tokens per instance, with the Pareto front: frontier.png.", ""]
    lines += budget_tables
    if dollar_tables:
        lines += ["## Accuracy at matched dollar budgets", "",
                  "The same comparison in US dollars, each call at its model's price (results.json's `prices` says "
                  "where each price came from).", ""]
        lines += dollar_tables
    lines += pools_section([t for t in pool_tables if t])
    lines += paired_markdown(paired)
    lines += verifiers_markdown(verifiers)
    _write(out / "results.md", "\n".join(lines) + "\n")
    return rows


def _write(path: Path, text: str) -> None:
    from ..runs.jsonl import write_file

    write_file(path, text)
