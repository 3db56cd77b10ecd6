"""A run's recorded answers judged again by another verifier, with no new answer.

`rescore(source, out, verifier, model)` reads a run directory (imported or made by
veriloop), judges every recorded attempt with the verifier, and writes an ordinary run
directory: one trajectory per source trajectory, named `<condition> | rescored by <V>`,
whose rounds are the recorded attempts with V's verdicts, whose calls are V's own (the
judge's), and whose answer is the one a loop stopped by V would have given: the first
attempt V accepts, else the last recorded one (counterfactual stopping).

Invariants:
- No answer is generated: the judge is the only model called, through the Episode as in
  any run, so its calls are cached, resumable (a rescored trajectory is appended as it
  is finished; a second run judges only what is missing) and budgeted (`max_calls`,
  `max_tokens`: every judge call recorded counts, as in `veriloop eval`).
- Ground truth is the source's: each round keeps the `correct` the source recorded.
- The source is read, never written: its records are read without cutting a torn last
  line, a file of it that is a symbolic link or resolves outside it is refused, an
  `--out` that is the source or inside it is refused before anything is written, and
  nothing the source's config.json names is imported or read as a task (a `--task`
  source's check and file come from rescore's own command line: TaskChoice). Its
  instances are the ones it recorded (instances.jsonl); only an older run without them
  has a registered domain's instances rebuilt from its config.
- Counterfactual stopping is exact for samples and for the attempts before the source's
  own stop; where V rejects the source's last attempt, the loop would have gone on with
  feedback nobody recorded, and the rescored trajectory ends at the last recorded attempt
  (stop reason max_rounds): a lower bound for such a loop.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, PrivateAttr

from ..checks import CheckFunction
from ..datafiles import loads
from ..domains.base import Domain
from ..episode import Episode
from ..errors import VeriloopError
from ..experiment.budget import Meter, MeteredModel, usage_of
from ..experiment.schema import Budget, DomainEntry, TaskEntry
from ..models.base import Model
from ..records import Instance, RoundRecord, Trajectory
from ..runs.dirlock import hold
from ..runs.jsonl import load_records, read_records, run_file, write_file
from ..runs.runner import (
    CONFIG,
    INSTANCES,
    SUMMARY,
    TRAJECTORIES,
    RunResult,
    check_run_dir,
    run_pairs,
    write_instances,
    write_summary,
)
from ..stats.metrics import StrategySummary, summarise, wilson_interval
from ..strategies.base import Strategy, VerifierSpec, verifier_calls
from ..studies.verification import JudgedItem, VerifierScore, score_verifier
from ..tools.base import Toolbox
from ..verifiers import get_verifier

SCORES_JSON = "rescore.json"
SCORES_MD = "rescore.md"


class Rescore(Strategy):
    """Judge each recorded attempt of one source condition; answer with the first accepted."""

    kind: ClassVar[str] = "rescore"
    summary: ClassVar[str] = "judge recorded attempts again (veriloop rescore); answer with the first accepted"

    source: str
    verifier: VerifierSpec
    _recorded: dict[str, Trajectory] = PrivateAttr(default_factory=dict)

    @property
    def canonical(self) -> str:
        label = self.verifier if isinstance(self.verifier, str) else getattr(self.verifier, "name", "verifier")
        return f"{self.source} | rescored by {label}"

    async def run(self, episode: Episode) -> None:
        recorded = self._recorded[episode.instance.id]
        verifier = get_verifier(self.verifier)
        t = episode.trajectory
        for r in recorded.rounds:
            verdict = await verifier.verify(episode, r.text, r.round)
            t.rounds.append(RoundRecord(round=r.round, text=r.text, answer=r.answer, verdict=verdict,
                                        correct=r.correct))
        stop = next((r for r in t.rounds if r.verdict is not None and r.verdict.ok), None)
        chosen = stop or t.rounds[-1]
        t.final_text, t.final_answer, t.correct = chosen.text, chosen.answer, chosen.correct
        t.stop_reason = "verifier_accepted" if stop is not None else "max_rounds"


class StoppingRow(BaseModel):
    """One source condition: its recorded accuracy, the accuracy had V stopped its loop,
    and what an oracle stopping at the first right attempt would have reached."""

    condition: str
    n: int
    recorded: int
    stopped_by_verifier: int
    oracle: int
    mean_attempts_recorded: float
    mean_attempts_stopped: float
    recorded_ci95: tuple[float, float]
    stopped_ci95: tuple[float, float]


class RescoreScores(BaseModel):
    verifier: str
    judge_model: str | None
    overall: VerifierScore
    by_condition: dict[str, VerifierScore]
    stopping: list[StoppingRow]


@dataclass
class RescoreResult:
    out_dir: Path
    scores: RescoreScores
    summaries: list[StrategySummary]
    new: int
    reused: int
    backend_calls: int


def check_out(source: Path, out_dir: Path) -> None:
    """Refuse an `out_dir` that would write into the source: the source itself or a
    directory inside it, or one whose files rescore writes are symbolic links (an append
    through one lands wherever it points). An `out_dir` holding the source further down
    is fine: rescore writes its own files only."""
    src, out = source.resolve(), out_dir.resolve()
    if out == src or out.is_relative_to(src):
        where = "is the source" if out == src else f"is inside the source {source}"
        raise VeriloopError(f"--out {out_dir} {where}; rescore never writes into the run it reads: give another --out")
    for name in (CONFIG, TRAJECTORIES, INSTANCES, SUMMARY, SCORES_JSON, SCORES_MD):
        if (out_dir / name).is_symlink():
            raise VeriloopError(f"{out_dir / name} is a symbolic link; rescore writes through none: give another --out")


def source_run(source: Path) -> tuple[dict[str, Any], list[Trajectory]]:
    """A run directory's config and trajectories, read only (a torn last line is left as
    it is, unread), or a VeriloopError naming what is missing; a file of it that is a
    symbolic link or resolves outside it is refused."""
    if not source.is_dir():
        raise VeriloopError(f"{source}: no such run directory; give one `veriloop run` or `veriloop import` wrote")
    config_path, records = run_file(source, CONFIG), run_file(source, TRAJECTORIES)
    if not config_path.is_file() or not records.is_file():
        raise VeriloopError(f"{source} is not a run directory (no {CONFIG} and {TRAJECTORIES}); give one "
                            "`veriloop run` or `veriloop import` wrote")
    try:
        config = loads(config_path.read_text(encoding="utf-8"))
    except ValueError:
        raise VeriloopError(f"{config_path} is not valid JSON; restore it") from None
    if not isinstance(config, dict):
        raise VeriloopError(f"{config_path} is not a run's settings (a JSON object); restore it")
    trajectories = [t for t in read_records(records, Trajectory, "trajectory") if t.rounds]
    if not trajectories:
        raise VeriloopError(f"{source} holds no recorded answer to judge")
    return config, trajectories


@dataclass
class TaskChoice:
    """For a source made with `--task`: what rescore's own command line names. Rescore
    never imports a check, or reads a task file, that a run directory's config.json names
    (a directory handed to you would run its author's code): `check` is the task's check
    (`--task-check`, else the `--check` verifier's), `file` the task's records for an older
    run that recorded no instances.jsonl (`--task`)."""

    file: Path | None = None
    check: CheckFunction | None = None
    check_timeout: float | None = None


def source_domain(source: Path, config: Mapping[str, Any],
                  task: TaskChoice | None = None) -> tuple[Domain, dict[str, Instance]]:
    """The domain and instances a run was made on, built without running anything the
    source names: the instances are the ones it recorded (instances.jsonl, which imports
    and runs write); the domain a registered one named by its config, or for a task, one
    made of what `task` names (see TaskChoice). An older run without instances.jsonl has
    a registered domain's instances rebuilt from its config."""
    from ..domains import get_domain

    recorded = _recorded_instances(source)
    entry = _domain_entry(source, config)
    if isinstance(entry, TaskEntry) or "task" in config:
        return _task_domain(source, config, entry if isinstance(entry, TaskEntry) else None, recorded,
                            task or TaskChoice())
    if entry is not None:
        name, options = entry.name, dict(entry.options)
    else:
        name, options = str(config["domain"]), dict(config.get("domain_options") or {})
    if recorded is not None:
        return get_domain(name, **options), recorded
    if entry is not None:
        from ..experiment.engine import build_domain, experiment_of_config

        planned = build_domain(experiment_of_config(config), entry)
        return planned.domain, {i.id: i for i in planned.instances}
    domain = get_domain(name, **options)
    data = config.get("data")
    return domain, {i.id: i for i in domain.load_instances(None if data is None else str(data))}


def _recorded_instances(source: Path) -> dict[str, Instance] | None:
    path = run_file(source, INSTANCES)
    if not path.is_file():
        return None
    return {i.id: i for i in read_records(path, Instance, "instance")}


def _domain_entry(source: Path, config: Mapping[str, Any]) -> DomainEntry | TaskEntry | None:
    """The domain or task entry of the spec a run recorded (plain data, validated), None
    for a config without one (an import)."""
    if "spec" not in config:
        return None
    from ..experiment.engine import experiment_of_config

    try:
        spec = experiment_of_config(config)
    except VeriloopError as exc:
        raise VeriloopError(f"{source}: {exc}") from None
    return spec.domain_entry(spec.domain_keys()[0])


def _task_domain(source: Path, config: Mapping[str, Any], entry: TaskEntry | None,
                 recorded: dict[str, Instance] | None, given: TaskChoice) -> tuple[Domain, dict[str, Instance]]:
    from ..checks import DEFAULT_CHECK_TIMEOUT
    from ..task import Task

    had_check = entry.check if entry is not None else config.get("check")
    if had_check and given.check is None:
        raise VeriloopError(f"{source} was made with --task and a check; rescore imports no code a run directory "
                            "names: give the check with --task-check SPEC")
    prompt = entry.prompt if entry is not None else config.get("prompt")
    if not isinstance(prompt, str):
        raise VeriloopError(f"{source}: its {CONFIG} records no prompt template for its task")
    options: dict[str, Any] = {
        "reference_field": entry.reference_field if entry is not None else config.get("reference_field"),
        "id_field": entry.id_field if entry is not None else config.get("id_field"),
        "check_timeout": given.check_timeout or (entry.check_timeout if entry is not None else None)
        or DEFAULT_CHECK_TIMEOUT,
        "name": str(config.get("domain") or "task"),
    }
    if recorded is not None:
        # The records are the recorded instances' data (Task.user_instance falls back to it).
        return Task([], prompt, given.check, **options), recorded
    if given.file is None:
        raise VeriloopError(f"{source} was made with --task and recorded no {INSTANCES} (an older run); rescore reads "
                            "no task file a run directory names: give it with --task FILE")
    domain = Task.from_jsonl(given.file, prompt, given.check, **options)
    return domain, {i.id: i for i in domain.instances}


def toolbox_for(domain: Domain, config: Mapping[str, Any]) -> Toolbox | None:
    """CRITIC's tools for a domain that has them (search over the run's data, the sandbox,
    the calculator, toxicity), with the default settings; None for the other domains."""
    from ..domains.base import CriticTask
    from ..tools.config import ALL_TOOLS, ToolSettings, build_toolbox

    if not isinstance(domain, CriticTask):
        return None
    data = config.get("data")
    return build_toolbox(ToolSettings(names=tuple(ALL_TOOLS)), domain, None if data is None else str(data))


async def rescore(
    source: Path, out_dir: Path, verifier: Any, model: Model, *, config: Mapping[str, object],
    concurrency: int | None = None, budget: Budget | None = None, on_progress: Callable[[int, int], None] | None = None,
    task: TaskChoice | None = None,
) -> RescoreResult:
    """Judge every recorded attempt in `source` with `verifier` on `model` (the judge) into
    `out_dir` (see the module docstring). `config` names the judge's settings; a directory
    made with others is refused, and so is one that would write into `source` (check_out).
    `task`: for a source made with `--task`, the check and file named by the caller. A
    spent budget raises BudgetReached after the finished trajectories are on disk."""
    started = time.perf_counter()
    check_out(source, out_dir)
    src_config, recorded = source_run(source)
    domain, instances = source_domain(source, src_config, task)
    tools = toolbox_for(domain, src_config)
    missing = sorted({t.instance_id for t in recorded} - set(instances))
    if missing:
        raise VeriloopError(f"{source}: instance {missing[0]!r} (and {len(missing) - 1} more) is not in the run's data "
                            "any more; the data file changed since the run")
    conditions: dict[str, Rescore] = {}
    for t in recorded:
        strategy = conditions.setdefault(t.strategy, Rescore(source=t.strategy, verifier=verifier))
        strategy._recorded[t.instance_id] = t
    label = next(iter(conditions.values())).canonical.rpartition(" | rescored by ")[2]
    with hold(out_dir):
        full = {**config, "rescored_from": str(source.resolve()), "domain": domain.name, "seed": 0,
                "verifier": label, "model_identity": model.identity, "data": src_config.get("data"),
                "domain_options": src_config.get("domain_options") or {}}
        check_run_dir(out_dir, full)
        write_file(out_dir / CONFIG, json.dumps(full, indent=2, default=str) + "\n")
        done = {t.key: t for t in load_records(out_dir / TRAJECTORIES, Trajectory)}
        todo = [(s, instances[t.instance_id]) for t in recorded
                for s in [conditions[t.strategy]] if (s.canonical, t.instance_id, 0) not in done]
        judge: Model = model
        if budget is not None and budget.is_set():
            judge = MeteredModel(model, [Meter("rescore", budget, usage_of(done.values(), lambda *a: 0.0))],
                                 lambda *a: 0.0)
        new = await run_pairs(judge, domain, todo, out_dir, 0, total=len(recorded), concurrency=concurrency,
                              on_progress=on_progress, tools=tools)
        rescored = {**done, **{t.key: t for t in new}}
        scores = rescore_scores(recorded, rescored, conditions, label,
                                None if verifier_calls(verifier) == 0 else model.name)
        ordered = [rescored[(conditions[t.strategy].canonical, t.instance_id, 0)] for t in recorded]
        names = list(dict.fromkeys(t.strategy for t in ordered))
        summaries = [summarise(c, (t for t in ordered if t.strategy == c)) for c in names]
        run = RunResult(out_dir, summaries, len(new), len(done), sum(not c.cached for t in new for c in t.calls),
                        round(time.perf_counter() - started, 3))
        used = list(dict.fromkeys(t.instance_id for t in recorded))
        write_summary(run, [instances[i] for i in used], 0, ordered)
        # The instances judged, as an import keeps them: the viewer shows their references,
        # and a rescored directory can itself be rescored.
        write_instances(out_dir, (instances[i] for i in used))
        write_file(out_dir / SCORES_JSON, scores.model_dump_json(indent=2) + "\n")
        write_file(out_dir / SCORES_MD, scores_markdown(scores, source))
    return RescoreResult(out_dir, scores, summaries, len(new), len(done),
                         sum(not c.cached for t in new for c in t.calls))


def rescore_scores(recorded: list[Trajectory], rescored: Mapping[tuple[str, str, int], Trajectory],
                   conditions: Mapping[str, Rescore], label: str, judge_model: str | None) -> RescoreScores:
    """The verifier against ground truth (over every recorded attempt; by condition, which
    is the answer kind where the source has kinds) and counterfactual stopping."""
    items: dict[str, list[JudgedItem]] = defaultdict(list)
    pairs: dict[str, list[tuple[Trajectory, Trajectory]]] = defaultdict(list)
    for t in recorded:
        r = rescored[(conditions[t.strategy].canonical, t.instance_id, 0)]
        pairs[t.strategy].append((t, r))
        for index, round in enumerate(r.rounds):
            verdict = round.verdict
            items[t.strategy].append(JudgedItem(
                domain=t.domain, instance_id=t.instance_id, index=index, kind=t.strategy, candidate=round.text,
                truth=round.correct, judge=label, judged_ok=None if verdict is None else verdict.ok,
                unreadable=bool(verdict and verdict.unreadable), reply="",
            ))
    stopping = []
    for condition, both in pairs.items():
        n = len(both)
        kept = sum(t.correct for t, _ in both)
        stopped = sum(r.correct for _, r in both)
        stopping.append(StoppingRow(
            condition=condition, n=n, recorded=kept, stopped_by_verifier=stopped,
            oracle=sum(any(x.correct for x in t.rounds) for t, _ in both),
            mean_attempts_recorded=sum(len(t.rounds) for t, _ in both) / n,
            mean_attempts_stopped=sum(_attempts_used(r) for _, r in both) / n,
            recorded_ci95=wilson_interval(kept, n), stopped_ci95=wilson_interval(stopped, n),
        ))
    return RescoreScores(
        verifier=label, judge_model=judge_model,
        overall=score_verifier(i for group in items.values() for i in group),
        by_condition={c: score_verifier(group) for c, group in items.items()}, stopping=stopping,
    )


def _attempts_used(t: Trajectory) -> int:
    """Attempts a loop stopped by the verifier would have drawn: up to its first acceptance."""
    for i, r in enumerate(t.rounds):
        if r.verdict is not None and r.verdict.ok:
            return i + 1
    return len(t.rounds)


def _rate(x: float | None, ci: tuple[float, float] | None, k: int, n: int) -> str:
    if x is None or ci is None:
        return "-"
    return f"{100 * x:.1f}% ({k}/{n}; {100 * ci[0]:.1f}-{100 * ci[1]:.1f})"


def scores_markdown(scores: RescoreScores, source: Path) -> str:
    """rescore.md: the verifier against ground truth, then counterfactual stopping."""
    judge = f" on {scores.judge_model}" if scores.judge_model else ""
    lines = [
        f"# {scores.verifier}{judge} on the recorded answers of {source}", "",
        "## The verifier against ground truth (every recorded attempt; 95% Wilson intervals)", "",
        "| answers | n | accuracy | false positive rate (accepted among wrong) | "
        "false negative rate (rejected among right) | judge replies not read |",
        "|---|---:|---|---|---|---:|",
    ]
    for name, s in [*scores.by_condition.items(), ("all", scores.overall)]:
        right = round(s.accuracy * s.n)
        lines.append(f"| {name} | {s.n} | {_rate(s.accuracy, s.accuracy_ci95, right, s.n)} | "
                     f"{_rate(s.false_positive_rate, s.fpr_ci95, s.false_positives, s.negatives)} | "
                     f"{_rate(s.false_negative_rate, s.fnr_ci95, s.false_negatives, s.positives)} | {s.unreadable} |")
    lines += [
        "", f"## Counterfactual stopping: each recorded loop or pool stopped at the first attempt {scores.verifier} "
        "accepts", "",
        "| condition | n | recorded answer | stopped by the verifier | oracle (first right attempt) | "
        "attempts (recorded / stopped) |",
        "|---|---:|---|---|---|---|",
    ]
    for row in scores.stopping:
        lines.append(
            f"| {row.condition} | {row.n} | {_rate(row.recorded / row.n, row.recorded_ci95, row.recorded, row.n)} | "
            f"{_rate(row.stopped_by_verifier / row.n, row.stopped_ci95, row.stopped_by_verifier, row.n)} | "
            f"{row.oracle}/{row.n} | {row.mean_attempts_recorded:.2f} / {row.mean_attempts_stopped:.2f} |")
    lines += ["", "Where the verifier rejects a loop's last recorded attempt, the loop would have gone on with feedback "
              "nobody recorded: it is counted with its last attempt (a lower bound).", ""]
    return "\n".join(lines)

