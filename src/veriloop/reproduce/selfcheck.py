"""Reproduce SelfCheck's evaluation (Miao, Teh and Rainforth; the reviewers' questions
included): accuracy against the number of solutions for weighted and majority voting
from the same solutions, verification quality (TPR and FPR at thresholds, AUROC,
balanced accuracy), step-level agreement, token cost, accuracy against total tokens
(majority voting given SelfCheck's token budget), and the single-call global checker.

The shipped experiment file experiment_files/selfcheck.toml has two cells, run by the
experiment engine like any experiment's (so the reproduction resumes like any run):
SelfCheck on N sampled solutions and the global checker on the same solutions (the
samples are drawn with the same parameters, so they are cache hits). Its report (`REPORT`)
then runs self-consistency with M >= N samples, of which the first N are again the same
solutions; M is set from the measured cost so that majority voting can spend what
SelfCheck spent.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..domains.base import Domain, Instance, as_base_domain
from ..errors import SpecError
from ..experiment.reports import Report
from ..experiment.schema import Experiment
from ..extras import can_draw, require
from ..models.base import Model
from ..records import Trajectory
from ..runs.jsonl import write_file
from ..runs.runner import TRAJECTORIES, load_trajectories, run_experiment
from ..selfcheck.arithmetic import arithmetic_label
from ..selfcheck.records import SolutionCheck
from ..selfcheck.scoring import answer_clusters, vote
from ..strategies import parse_strategy
from ..strategies.selfcheck import SelfCheck, same_answer
from ..studies.hallucination import auroc, bootstrap_auroc_ci
from . import staged

if TYPE_CHECKING:
    from ..experiment.engine import CellPlan, EvalResult, Progress

NAME = "selfcheck"  # the shipped experiment file and its report
# Dataset -> (its domain, its file below the data root; None: no shared copy).
DATASETS = {"gsm8k": ("gsm8k-cot", "gsm8k/test.jsonl"), "math500": ("math500-cot", "math500/test.jsonl"), "mathqa": ("mathqa", None)}
DATASET_OF = {domain: dataset for dataset, (domain, _) in DATASETS.items()}
# The authors' answer to Q2 of the first review: FPR of SelfCheck (GPT-3.5) at thresholds.
PAPER_THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.93, 0.96, 0.99, 1.0)
PAPER_FPR = {
    "gsm8k": (1.0, 0.98, 0.94, 0.87, 0.71, 0.49, 0.31, 0.31, 0.31, 0.0),
    "mathqa": (1.0, 0.99, 0.96, 0.89, 0.70, 0.38, 0.20, 0.08, 0.08, 0.0),
    "math500": (1.0, 0.98, 0.94, 0.87, 0.73, 0.45, 0.36, 0.18, 0.18, 0.0),  # the paper's MATH
}
ORDERINGS = 200  # random solution orders per question for the accuracy-vs-N curves
STAGES = ("target", "collect", "regenerate", "compare")


@dataclass
class Solution:
    text: str
    answer: str | None
    correct: bool
    cluster: int | None
    generation_tokens: int
    check: SolutionCheck | None = None
    check_tokens: int = 0
    global_check: SolutionCheck | None = None
    global_tokens: int = 0


@dataclass
class Question:
    instance: Instance
    solutions: list[Solution]  # the N checked solutions
    extra: list[Solution] = field(default_factory=list)  # the majority-only samples N+1..M


def _tokens(t: Trajectory, role: str, round: int | None = None, sample: int | None = None) -> int:
    return sum(
        c.prompt_tokens + c.completion_tokens for c in t.calls
        if c.role == role and (round is None or c.round == round) and (sample is None or c.sample_index == sample)
    )


def build_questions(domain: Domain, instances: list[Instance], steps: list[Trajectory], global_: list[Trajectory],
                    majority: list[Trajectory]) -> list[Question]:
    # Questions are built from records, outside any episode: the domain is given the
    # contract here (its equivalence of answers, `matches`, has a default).
    full = as_base_domain(domain)
    by_id = {t.instance_id: t for t in steps}
    global_by_id = {t.instance_id: t for t in global_}
    majority_by_id = {t.instance_id: t for t in majority}
    out = []
    for inst in instances:
        t = by_id.get(inst.id)
        if t is None:
            continue
        g = global_by_id.get(inst.id)
        m = majority_by_id.get(inst.id)
        texts = [r.text for r in t.rounds]
        extra_texts = [r.text for r in m.rounds[len(texts):]] if m else []
        answers = [domain.extract_answer(inst, x) for x in texts + extra_texts]
        clusters = answer_clusters(answers, same_answer(full, inst))
        sols = []
        for j, text in enumerate(texts + extra_texts):
            source = t if j < len(texts) else m
            sols.append(Solution(
                text=text, answer=answers[j], correct=domain.score(inst, text), cluster=clusters[j],
                generation_tokens=_tokens(source, "generate", sample=j),  # type: ignore[arg-type]
            ))
        checks = {c.round: c for c in t.step_checks}
        gchecks = {c.round: c for c in g.step_checks} if g else {}
        for j, s in enumerate(sols[: len(texts)], start=1):
            s.check = checks.get(j)
            s.check_tokens = _tokens(t, "check", round=j)
            if g:
                s.global_check = gchecks.get(j)
                s.global_tokens = _tokens(g, "check", round=j)
        out.append(Question(inst, sols[: len(texts)], sols[len(texts):]))
    return out


# --------------------------------------------------------------------------- voting curves


def _cluster_correct(sols: list[Solution]) -> dict[int, bool]:
    return {s.cluster: s.correct for s in sols if s.cluster is not None}


def vote_curve(questions: list[Question], weight: Callable[[Solution], float], pool: str = "checked",
               seed: int = 0, orderings: int = ORDERINGS) -> list[tuple[float, float]]:
    """(mean accuracy, standard error across questions) for n = 1..size of the pool:
    each question's accuracy at n is averaged over random orders of its solutions (which
    also breaks ties at random), and the standard error is taken over questions."""
    rng = random.Random(seed)
    per_question: list[list[float]] = []
    for q in questions:
        sols = q.solutions + (q.extra if pool == "all" else [])
        right = _cluster_correct(sols)
        sums = [0.0] * len(sols)
        for _ in range(orderings):
            order = list(range(len(sols)))
            rng.shuffle(order)
            for n in range(1, len(sols) + 1):
                chosen = [sols[i] for i in order[:n]]
                result = vote([s.cluster for s in chosen], [weight(s) for s in chosen])
                sums[n - 1] += float(result.cluster is not None and right.get(result.cluster, False))
        per_question.append([x / orderings for x in sums])
    if not per_question:
        return []
    sizes = min(len(p) for p in per_question)
    curve = []
    for n in range(sizes):
        values = [p[n] for p in per_question]
        se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
        curve.append((statistics.fmean(values), se))
    return curve


# --------------------------------------------------------------------------- verification


def _rates(scores: list[float], labels: list[bool], t: float) -> dict[str, float | None]:
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    tpr = sum(s > t for s in pos) / len(pos) if pos else None
    fpr = sum(s > t for s in neg) / len(neg) if neg else None
    balanced = (tpr + 1 - fpr) / 2 if tpr is not None and fpr is not None else None
    return {"threshold": t, "tpr": tpr, "fpr": fpr, "balanced_accuracy": balanced}


def verification(scores: list[float], labels: list[bool], seed: int = 0) -> dict[str, object]:
    """A solution counts as predicted correct when its confidence is above the threshold
    (the authors' convention: at t = 0 everything passes, at t = 1 nothing does)."""
    rows = [_rates(scores, labels, t) for t in PAPER_THRESHOLDS]
    grid = sorted({0.0, 1.0, *scores})
    roc = [_rates(scores, labels, t) for t in [-1.0, *grid]]
    best = max((r for r in roc if r["balanced_accuracy"] is not None), key=lambda r: r["balanced_accuracy"], default=None)  # type: ignore[arg-type,return-value]
    return {
        "n": len(scores), "correct": sum(labels), "thresholds": rows,
        "roc": [(r["fpr"], r["tpr"]) for r in roc if r["fpr"] is not None and r["tpr"] is not None],
        "auroc": auroc(scores, labels), "auroc_ci95": bootstrap_auroc_ci(scores, labels, seed=seed) if scores else None,
        "best_balanced_accuracy": best,
    }


def step_agreement(questions: list[Question]) -> dict[str, object]:
    """SelfCheck's step results against exact labels of the steps' stated arithmetic, and
    its solution-level flags against the final answer's correctness."""
    table = {label: {1: 0, 0: 0, -1: 0} for label in ("holds", "false", "none")}
    flagged = {True: [0, 0], False: [0, 0]}  # correct? -> [with a contradicted step, total]
    for q in questions:
        for s in q.solutions:
            if s.check is None:
                continue
            for step in s.check.steps:
                label = arithmetic_label(step.text)
                key = "none" if label is None else ("holds" if label else "false")
                table[key][step.result] += 1
            flagged[s.correct][0] += bool(s.check.contradicted)
            flagged[s.correct][1] += 1

    def rate(row: dict[int, int]) -> float | None:
        total = sum(row.values())
        return row[-1] / total if total else None

    return {
        "steps": {k: {str(r): n for r, n in v.items()} for k, v in table.items()},
        "contradicted_rate_false_arithmetic": rate(table["false"]),
        "contradicted_rate_true_arithmetic": rate(table["holds"]),
        "wrong_solutions_flagged": flagged[False][0] / flagged[False][1] if flagged[False][1] else None,
        "right_solutions_flagged": flagged[True][0] / flagged[True][1] if flagged[True][1] else None,
        "wrong_solutions": flagged[False][1], "right_solutions": flagged[True][1],
    }


# --------------------------------------------------------------------------- cost


def costs(questions: list[Question], steps: list[Trajectory]) -> dict[str, float]:
    sols = [s for q in questions for s in q.solutions]
    n = len(sols) or 1
    stage_tokens = {st: 0 for st in STAGES}
    for t in steps:
        for c in t.calls:
            if c.role == "check" and c.stage in stage_tokens:
                stage_tokens[c.stage] += c.prompt_tokens + c.completion_tokens
    gen = sum(s.generation_tokens for s in sols) / n
    check = sum(s.check_tokens for s in sols) / n
    glob = sum(s.global_tokens for s in sols) / n
    return {
        "solutions": len(sols), "generation_tokens_per_solution": gen, "check_tokens_per_solution": check,
        "global_check_tokens_per_solution": glob, "check_to_generation": check / gen if gen else 0.0,
        "steps_per_solution": sum(s.check.steps_total for s in sols if s.check) / n,
        "steps_checked_per_solution": sum(s.check.steps_checked for s in sols if s.check) / n,
        "capped_solutions": sum(1 for s in sols if s.check and s.check.capped),
        **{f"{st}_tokens_per_solution": v / n for st, v in stage_tokens.items()},
    }


def majority_samples(solutions: int, cost: dict[str, float], cap: int) -> int:
    """How many samples majority voting needs to spend SelfCheck's tokens at N solutions
    (at least N, at most `cap`)."""
    ratio = cost.get("check_to_generation", 0.0)
    return max(solutions, min(cap, math.ceil(solutions * (1 + ratio))))


# --------------------------------------------------------------------------- the run


class Options(BaseModel):
    """The report's options (report_options in the file)."""

    model_config = ConfigDict(extra="forbid")

    majority_cap: int = Field(16, ge=1)  # the most samples majority voting may draw to match SelfCheck's tokens


def checkers(experiment: Experiment) -> dict[str, str]:
    """The SelfCheck strategies by checker ("steps", "global") -> their labels."""
    found: dict[str, str] = {}
    for entry in experiment.strategies:
        strategy = parse_strategy(entry.spec)
        if isinstance(strategy, SelfCheck) and strategy.vote == "weighted" and strategy.gate is None:
            found.setdefault(strategy.checker, entry.key)
    return found


def check(experiment: Experiment, options: BaseModel) -> None:
    generators, seeds = experiment.generator_names(), experiment.seeds
    if len(generators) != 1 or len(seeds) != 1:
        raise SpecError(("report",), f"the {NAME} report reads one model at one seed, not {len(generators)} "
                        f"model(s) ({', '.join(generators)}) at {len(seeds)} seed(s): run one at a time")
    names = [d.name for d in experiment.domains]
    if experiment.tasks or len(names) != 1 or names[0] not in DATASET_OF:
        raise SpecError(("domains", 0), f"the {NAME} report reads one dataset, a [[domains]] entry named one of "
                        f"{', '.join(DATASET_OF)}, not {', '.join(names + [t.key for t in experiment.tasks])}")
    if "steps" not in checkers(experiment):
        raise SpecError(("strategies",), f"the {NAME} report needs a selfcheck strategy with the step-by-step "
                        "checker and weighted voting (e.g. \"selfcheck:n=4\")")


async def report(
    experiment: Experiment, result: EvalResult, models: Mapping[str, Model], progress: Progress | None
) -> list[str]:
    """Majority voting at SelfCheck's token budget, then every table and plot of the
    evaluation from the SelfCheck and global-checker cells and the majority samples."""
    from ..experiment.results import cell_trajectories

    options = Options.model_validate(experiment.report_options)
    generator, seed = experiment.generator_names()[0], experiment.seeds[0]
    model = models[generator]
    labels = checkers(experiment)
    cells: dict[str, CellPlan] = {p.cell.strategy: p for p in result.plans if p.cell.model == generator}
    steps_cell = cells[labels["steps"]]
    global_cell = cells.get(labels.get("global", ""))
    dom = steps_cell.domain
    domain, instances = dom.domain, dom.instances
    steps = cell_trajectories(steps_cell)
    global_ = cell_trajectories(global_cell) if global_cell else []
    s = steps_cell.strategy
    assert isinstance(s, SelfCheck)
    m = majority_samples(s.n, costs(build_questions(domain, instances, steps, [], []), steps), options.majority_cap)
    majority: list[Trajectory] = []
    if m > s.n:
        majority_spec = parse_strategy(f"self-consistency:k={m},temperature={s.temperature}")
        run_dir = steps_cell.run_dir.parent / f"majority-seed{seed}"
        update = progress.update if progress else None
        await run_experiment(
            model, domain, [majority_spec], instances, run_dir, seed=seed,
            config={"experiment": experiment.name, "model_id": experiment.models[generator].id, **dom.config},
            on_progress=staged(update, f"majority voting: {m} samples"),
        )
        ids = {i.id for i in instances}
        majority = [t for t in load_trajectories(run_dir / TRAJECTORIES)
                    if t.strategy == majority_spec.canonical and t.instance_id in ids and t.seed == seed]
    qs = build_questions(domain, instances, steps, global_, majority)
    dataset = DATASET_OF[domain.name]
    payload = analyse(qs, steps, dataset, model.name, s.n, m, seed)
    payload["settings"] = {"questions": len(qs), "solutions": s.n, "temperature": s.temperature,
                           "max_steps": s.max_steps, "lambda_contradict": s.lambda_contradict,
                           "lambda_unrelated": s.lambda_unrelated, "majority_samples": m,
                           "majority_cap": options.majority_cap, "seed": seed, "data": str(dom.data)}
    write_outputs(result.out_dir, payload, dataset, model.name)
    files = ["selfcheck.md", "selfcheck.csv", "reproduction.json", "accuracy_vs_solutions.png",
             "accuracy_vs_tokens.png", "roc.png"]
    return [name for name in files if (result.out_dir / name).exists()]


REPORT = Report(options=Options, run=report, check=check)


def analyse(qs: list[Question], steps: list[Trajectory], dataset: str, model: str, solutions: int, m: int,
            seed: int) -> dict[str, object]:
    cost = costs(qs, steps)
    weighted = vote_curve(qs, lambda s: s.check.confidence if s.check else 1.0, seed=seed)
    majority = vote_curve(qs, lambda s: 1.0, seed=seed)
    majority_all = vote_curve(qs, lambda s: 1.0, pool="all", seed=seed)
    has_global = any(s.global_check for q in qs for s in q.solutions)
    global_curve = vote_curve(qs, lambda s: s.global_check.confidence if s.global_check else 1.0, seed=seed) if has_global else []
    sols = [s for q in qs for s in q.solutions]
    labels = [s.correct for s in sols]
    gen, check, glob = cost["generation_tokens_per_solution"], cost["check_tokens_per_solution"], cost["global_check_tokens_per_solution"]
    tokens = {
        "selfcheck": [(n + 1) * (gen + check) for n in range(len(weighted))],
        "majority": [(n + 1) * gen for n in range(len(majority_all))],
        "global": [(n + 1) * (gen + glob) for n in range(len(global_curve))],
    }
    budget = tokens["selfcheck"][-1] if tokens["selfcheck"] else 0.0
    affordable = [n for n, t in enumerate(tokens["majority"]) if t <= budget * 1.0001]
    matched = affordable[-1] if affordable else None
    unreadable = sum(st.unreadable for s in sols if s.check for st in s.check.steps)
    collection_unreadable = sum(st.collection_unreadable for s in sols if s.check for st in s.check.steps)
    checked_steps = sum(s.check.steps_checked for s in sols if s.check)
    return {
        "dataset": dataset, "model": model, "questions": len(qs), "solutions": solutions, "majority_samples": m,
        "accuracy": {"selfcheck": weighted, "majority": majority, "majority_all": majority_all, "global": global_curve},
        "tokens_per_question": tokens,
        "budget_matched": {
            "selfcheck_tokens": budget, "selfcheck_accuracy": weighted[-1] if weighted else None,
            "majority_samples": matched + 1 if matched is not None else None,
            "majority_tokens": tokens["majority"][matched] if matched is not None else None,
            "majority_accuracy": majority_all[matched] if matched is not None else None,
            "reached_budget": bool(tokens["majority"]) and tokens["majority"][-1] >= budget * 0.95,
        },
        "verification": verification([s.check.confidence for s in sols if s.check], [s.correct for s in sols if s.check], seed),
        "global_verification": verification([s.global_check.confidence for s in sols if s.global_check],
                                            [s.correct for s in sols if s.global_check], seed) if has_global else None,
        "step_agreement": step_agreement(qs),
        "cost": cost,
        "solutions_correct": sum(labels), "solutions_total": len(labels),
        "no_answer": sum(s.answer is None for s in sols),
        "checked_steps": checked_steps, "unreadable_comparisons": unreadable, "unreadable_collections": collection_unreadable,
        "confidences": [s.check.confidence for s in sols if s.check],
        "confidence_labels": [s.correct for s in sols if s.check],
    }


# --------------------------------------------------------------------------- writing


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _curve_cell(curve: list[tuple[float, float]], n: int) -> str:
    if n >= len(curve):
        return "-"
    mean, se = curve[n]
    return f"{100 * mean:.1f} ± {100 * se:.1f}"


def markdown(p: dict, dataset: str) -> str:
    acc, tok = p["accuracy"], p["tokens_per_question"]
    s = p["settings"]
    lines = [f"# SelfCheck reproduction ({p['model']}, {dataset})", "",
             f"{p['questions']} questions, {p['solutions']} sampled solutions each (temperature {s['temperature']}), "
             f"at most {s['max_steps']} steps checked per solution, λ₋₁ = {s['lambda_contradict']}, λ₀ = {s['lambda_unrelated']}; "
             f"{p['solutions_correct']}/{p['solutions_total']} solutions right, {p['no_answer']} without an answer.", "",
             "## Accuracy against the number of solutions (mean ± standard error over questions, %)", "",
             "Every n is averaged over 200 random orders of each question's solutions, so ties are broken at random. "
             "Weighted and majority voting use the same solutions.", "",
             "| solutions | SelfCheck (weighted) | majority (same solutions) | majority (all samples) | global checker (weighted) | tokens / question: SelfCheck | majority | global |",
             "|---|---|---|---|---|---|---|---|"]
    rows = max(len(acc["selfcheck"]), len(acc["majority_all"]))
    for n in range(rows):
        tk = lambda key: f"{tok[key][n]:.0f}" if n < len(tok[key]) else "-"  # noqa: E731
        lines.append(f"| {n + 1} | {_curve_cell(acc['selfcheck'], n)} | {_curve_cell(acc['majority'], n)} | "
                     f"{_curve_cell(acc['majority_all'], n)} | {_curve_cell(acc['global'], n)} | "
                     f"{tk('selfcheck')} | {tk('majority')} | {tk('global')} |")
    b = p["budget_matched"]
    lines += ["", "## Cost-normalised comparison (the reviewers' question)", ""]
    if b["majority_samples"]:
        lines.append(
            f"SelfCheck with {p['solutions']} solutions spends {b['selfcheck_tokens']:.0f} tokens per question for "
            f"{_curve_cell([b['selfcheck_accuracy']], 0)}% accuracy; majority voting with the same budget "
            f"({b['majority_samples']} samples, {b['majority_tokens']:.0f} tokens) reaches {_curve_cell([b['majority_accuracy']], 0)}%"
            + ("." if b["reached_budget"] else f" (capped at {p['majority_samples']} samples: short of SelfCheck's budget)."))
    c = p["cost"]
    lines += ["", "## Token cost per solution", "",
              "| generation | SelfCheck checking | of which target / collect / regenerate / compare | global checker | checking ÷ generation | steps (checked) | capped |",
              "|---|---|---|---|---|---|---|",
              f"| {c['generation_tokens_per_solution']:.0f} | {c['check_tokens_per_solution']:.0f} | "
              + " / ".join(f"{c[f'{st}_tokens_per_solution']:.0f}" for st in STAGES)
              + f" | {c['global_check_tokens_per_solution']:.0f} | {c['check_to_generation']:.1f}× | "
              f"{c['steps_per_solution']:.1f} ({c['steps_checked_per_solution']:.1f}) | {c['capped_solutions']} |",
              "", "The paper reports checking at about 2× the generator's tokens on GPT-3.5 (prompt and completion tokens).", ""]
    lines += ["## Verification quality (a solution passes when its confidence is above t)", ""]
    v, g = p["verification"], p.get("global_verification")
    lines.append("| t | SelfCheck TPR | FPR | balanced acc. | global TPR | FPR | balanced acc. | paper FPR |")
    lines.append("|---|---|---|---|---|---|---|---|")
    paper = PAPER_FPR.get(dataset)
    for i, row in enumerate(v["thresholds"]):
        grow = g["thresholds"][i] if g else {}
        lines.append(f"| {row['threshold']} | {_rate(row['tpr'])} | {_rate(row['fpr'])} | {_rate(row['balanced_accuracy'])} | "
                     f"{_rate(grow.get('tpr'))} | {_rate(grow.get('fpr'))} | {_rate(grow.get('balanced_accuracy'))} | "
                     f"{paper[i] if paper else '-'} |")

    def auc_text(x: dict | None) -> str:
        if not x or x["auroc"] is None:
            return "- (needs right and wrong solutions)"
        ci = f" (95% bootstrap CI {x['auroc_ci95'][0]:.2f}-{x['auroc_ci95'][1]:.2f})" if x["auroc_ci95"] else ""
        best = x["best_balanced_accuracy"]
        return f"{x['auroc']:.3f}{ci}; best balanced accuracy {best['balanced_accuracy']:.2f} at t = {best['threshold']:.2f}" if best else f"{x['auroc']:.3f}{ci}"

    lines += ["", f"AUROC, SelfCheck: {auc_text(v)}.", f"AUROC, global checker: {auc_text(g)}.", ""]
    a = p["step_agreement"]
    lines += ["## Step-level agreement", "",
              "Steps labelled by their stated arithmetic (every `a op b = c` computed exactly; a step whose calculations all "
              "hold may still use wrong quantities), against SelfCheck's result for the step:", "",
              "| stated arithmetic | steps | supports (+1) | not related (0) | contradicts (−1) | contradicted |", "|---|---|---|---|---|---|"]
    for key, label in (("false", "has a false calculation"), ("holds", "all calculations hold"), ("none", "no checkable calculation")):
        row = a["steps"][key]
        total = sum(row.values())
        lines.append(f"| {label} | {total} | {row['1']} | {row['0']} | {row['-1']} | {_pct(row['-1'] / total if total else None)} |")
    lines += ["", f"Solutions with at least one contradicted step: {_pct(a['wrong_solutions_flagged'])} of the "
              f"{a['wrong_solutions']} wrong ones, {_pct(a['right_solutions_flagged'])} of the {a['right_solutions']} right ones. "
              f"Comparison replies that could not be read (counted as 0): {p['unreadable_comparisons']} of {p['checked_steps']} steps; "
              f"collection replies with no readable index (the step then got the whole question and every earlier step): "
              f"{p['unreadable_collections']}.", ""]
    lines += ["## Figures", "", "`accuracy_vs_solutions.png`, `accuracy_vs_tokens.png`, `roc.png`; every number above is in "
              "`reproduction.json`.", ""]
    return "\n".join(lines)


def plot(out_dir: Path, p: dict, dataset: str, model: str) -> None:
    require("plots", "drawing accuracy_vs_solutions.png, accuracy_vs_tokens.png and roc.png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    acc, tok = p["accuracy"], p["tokens_per_question"]
    styles = {"selfcheck": ("SelfCheck (weighted)", "tab:blue", "o"), "majority": ("majority voting", "tab:orange", "s"),
              "majority_all": ("majority voting", "tab:orange", "s"), "global": ("global checker (weighted)", "tab:green", "^")}
    def lines(ax, x_of: Callable[[str, int], list[float]], keys: tuple[str, ...], xlabel: str, title: str, name: str) -> None:
        for key in keys:
            label, colour, marker = styles[key]
            curve = acc[key]
            if not curve:
                continue
            xs = x_of(key, len(curve))
            means = [100 * m for m, _ in curve][: len(xs)]
            ses = [100 * s for _, s in curve][: len(xs)]
            ax.plot(xs, means, marker=marker, color=colour, label=label, markersize=4)
            ax.fill_between(xs, [m - s for m, s in zip(means, ses)], [m + s for m, s in zip(means, ses)], color=colour, alpha=0.15)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{dataset}: {title} ({model})", fontsize=9)
        ax.grid(alpha=0.3)
        _legend(ax)
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=120)
        plt.close(fig)

    token_key = {"selfcheck": "selfcheck", "majority": "majority", "majority_all": "majority", "global": "global"}
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    lines(ax, lambda key, n: list(range(1, n + 1)), ("selfcheck", "majority", "global"), "solutions per question",
          "voting accuracy ± SE", "accuracy_vs_solutions.png")
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    lines(ax, lambda key, n: tok[token_key[key]][:n], ("selfcheck", "majority_all", "global"),
          "tokens per question (prompt + completion)", "accuracy against total tokens", "accuracy_vs_tokens.png")

    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    for key, label, colour in (("verification", "SelfCheck", "tab:blue"), ("global_verification", "global checker", "tab:green")):
        v = p.get(key)
        if not v or not v["roc"]:
            continue
        points = sorted(v["roc"])
        auc = f" (AUROC {v['auroc']:.2f})" if v["auroc"] is not None else ""
        ax.plot([x for x, _ in points], [y for _, y in points], marker=".", color=colour, label=label + auc)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(f"{dataset}: telling right solutions from wrong", fontsize=9)
    _legend(ax)
    fig.tight_layout()
    fig.savefig(out_dir / "roc.png", dpi=120)
    plt.close(fig)


def _legend(ax: Any) -> None:
    # With nothing labelled (no curve, no ROC point: every solution unchecked or every
    # answer alike) matplotlib would warn on the user's terminal instead of drawing it.
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def write_outputs(out_dir: Path, payload: dict, dataset: str, model: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_file(out_dir / "selfcheck.md", markdown(payload, dataset))
    write_file(out_dir / "reproduction.json", json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["method", "solutions", "accuracy", "standard_error", "tokens_per_question"])
    for key, tkey in (("selfcheck", "selfcheck"), ("majority_all", "majority"), ("global", "global")):
        for n, (mean, se) in enumerate(payload["accuracy"][key]):
            tokens = payload["tokens_per_question"][tkey]
            writer.writerow([key.replace("_all", ""), n + 1, f"{mean:.4f}", f"{se:.4f}", f"{tokens[n]:.0f}" if n < len(tokens) else ""])
    write_file(out_dir / "selfcheck.csv", buf.getvalue())
    if can_draw("accuracy_vs_solutions.png, accuracy_vs_tokens.png and roc.png"):
        plot(out_dir, payload, dataset, model)
