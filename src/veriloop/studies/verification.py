"""How good is the LLM as a verifier and as a critic? (self-verification paper, Tables 2,
A2-A6).

Each instance yields candidate answers of known correctness (correct, one-error ablations,
non-optimal, random, and the model's own greedy answer). The LLM judges each, with the plain
prompt and with a chain-of-thought prompt; wrong candidates also get a free-text critique
that the domain scores against reality. Every judged item is one JSON line, appended as it
is made, so a study resumes where it stopped; the tables are computed from those lines.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from ..domains.base import Candidate, Domain, Instance, SupportsStudies
from ..episode import Episode
from ..errors import VeriloopError
from ..feedback import critique_messages
from ..models.base import Model
from ..records import Trajectory
from ..runs.jsonl import RecordWriter, load_records, write_file
from ..stats.metrics import VerifierScore, score_judgements, wilson_interval
from ..verifiers.llm_judge import LLMJudge

JUDGES = ("llm", "llm-cot")
RECORDS = "verification.jsonl"


class JudgedItem(BaseModel):
    domain: str
    instance_id: str
    index: int  # position of the candidate among the instance's candidates
    kind: str
    note: str = ""
    candidate: str
    truth: bool
    judge: str  # "llm" | "llm-cot" | "critique"
    judged_ok: bool | None = None
    unreadable: bool = False
    reply: str
    report: dict[str, float] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.domain, self.instance_id, self.index, self.judge)


def studied_domain(domain: Domain) -> SupportsStudies:
    """The domain as a study subject, or a VeriloopError when it has no candidate answers."""
    if not isinstance(domain, SupportsStudies):
        raise VeriloopError(f"domain {domain.name!r} has no candidate answers for studies")
    return domain


async def build_candidates(model: Model, domain: Domain, instance: Instance, seed: int) -> list[Candidate]:
    """The domain's synthetic candidates plus the model's own greedy answer ("llm").

    The greedy answer is the same call the `standard` strategy makes, so in a
    reproduction it comes from the cache."""
    studied = studied_domain(domain)
    rng = random.Random(f"{seed}:{instance.id}")
    found = list(studied.candidates(instance, rng))
    episode = _episode(model, domain, instance, seed, "study:candidates")
    text = await episode.call_one("generate", domain.prompt(instance), episode.params(temperature=0.0), round=1)
    found.append(Candidate(kind="llm", text=text, correct=domain.score(instance, text)))
    return found


async def judge_candidate(
    model: Model, domain: Domain, instance: Instance, seed: int, index: int, candidate: Candidate, judge: str
) -> JudgedItem:
    episode = _episode(model, domain, instance, seed, f"study:{judge}")
    item = JudgedItem(
        domain=domain.name, instance_id=instance.id, index=index, kind=candidate.kind, note=candidate.note,
        candidate=candidate.text, truth=candidate.correct, judge=judge, reply="",
    )
    if judge == "critique":
        messages = critique_messages(domain, instance, candidate.text)
        item.reply = await episode.call_one("critique", messages, episode.params(temperature=0.0, max_tokens=300), 1)
    else:
        verdict = await LLMJudge(cot=judge == "llm-cot").verify(episode, candidate.text, 1)
        item.reply = episode.trajectory.calls[-1].response
        item.judged_ok, item.unreadable = verdict.ok, verdict.unreadable
    # Only SupportsStudies domains reach here (the study checks before it starts).
    item.report = studied_domain(domain).critique_report(instance, candidate.text, item.reply)
    item.prompt_tokens = sum(c.prompt_tokens for c in episode.trajectory.calls)
    item.completion_tokens = sum(c.completion_tokens for c in episode.trajectory.calls)
    return item


def _episode(model: Model, domain: Domain, instance: Instance, seed: int, label: str) -> Episode:
    trajectory = Trajectory(strategy=label, domain=domain.name, model=model.name, instance_id=instance.id, seed=seed)
    return Episode(model=model, domain=domain, instance=instance, seed=seed, trajectory=trajectory)


async def run_verification_study(
    model: Model,
    domain: Domain,
    instances: list[Instance],
    out_dir: Path,
    seed: int = 0,
    judges: Iterable[str] = JUDGES,
    critiques: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[JudgedItem]:
    """Judge every candidate of every instance with each judge (and critique the wrong
    ones); returns all items of this domain in the record file, old and new.

    The candidates of every instance are made first (one greedy call each), so the number
    of judgements is known before the first: `on_progress(judged, to judge)` is called
    from (already judged, total) on, once per judgement or critique."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RECORDS
    items = load_records(path, JudgedItem)
    done = {i.key for i in items}
    judges = list(judges)
    work: list[tuple[Instance, int, Candidate, str]] = []
    for instance in instances:
        for index, candidate in enumerate(await build_candidates(model, domain, instance, seed)):
            wanted = judges + (["critique"] if critiques and not candidate.correct else [])
            work += [(instance, index, candidate, judge) for judge in wanted]
    todo = [w for w in work if (domain.name, w[0].id, w[1], w[3]) not in done]
    finished = len(work) - len(todo)
    if on_progress:
        on_progress(finished, len(work))
    writer = RecordWriter(path)
    try:
        for instance, index, candidate, judge in todo:
            item = await judge_candidate(model, domain, instance, seed, index, candidate, judge)
            await writer.append(item)
            items.append(item)
            finished += 1
            if on_progress:
                on_progress(finished, len(work))
    finally:
        await writer.aclose()
    return [i for i in items if i.domain == domain.name and i.instance_id in {x.id for x in instances}]


# ------------------------------------------------------------------------ metrics


def score_verifier(items: Iterable[JudgedItem]) -> VerifierScore:
    items = [i for i in items if i.judged_ok is not None]
    return score_judgements(((bool(i.judged_ok), i.truth) for i in items), unreadable=sum(i.unreadable for i in items))


def _pct(x: float | None, ci: tuple[float, float] | None = None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.1%}" + (f" ({ci[0]:.0%}-{ci[1]:.0%})" if ci else "")


def verification_table(items: list[JudgedItem], domains: list[str]) -> str:
    """Table 2 (plain judge) and A2 (chain-of-thought judge), then accuracy by candidate kind."""
    lines = [
        "| domain | judge | accuracy (95% CI) | false positive rate | false negative rate | n | unreadable |",
        "|---|---|---|---|---|---|---|",
    ]
    for domain in domains:
        for judge in JUDGES:
            sel = [i for i in items if i.domain == domain and i.judge == judge]
            if not sel:
                continue
            s = score_verifier(sel)
            lines.append(
                f"| {domain} | {judge} | {s.accuracy:.1%} ({s.accuracy_ci95[0]:.0%}-{s.accuracy_ci95[1]:.0%}) | "
                f"{_pct(s.false_positive_rate, s.fpr_ci95)} ({s.false_positives}/{s.negatives}) | "
                f"{_pct(s.false_negative_rate, s.fnr_ci95)} ({s.false_negatives}/{s.positives}) | {s.n} | {s.unreadable} |"
            )
    lines += ["", "Accuracy of the judge by candidate kind (for kinds whose candidates are all right or all wrong, "
              "this is 1 - FNR or 1 - FPR; the model's own answers and, rarely, random ones can be either):", "",
              "| domain | judge | kind | judged correctly (95% CI) | judged 'correct' | truly correct |", "|---|---|---|---|---|---|"]
    for domain in domains:
        for judge in JUDGES:
            by_kind: dict[str, list[JudgedItem]] = defaultdict(list)
            for i in items:
                if i.domain == domain and i.judge == judge:
                    by_kind[_kind_label(i)].append(i)
            for kind, sel in sorted(by_kind.items()):
                right = sum(i.judged_ok == i.truth for i in sel)
                said_ok = sum(bool(i.judged_ok) for i in sel)
                truly = sum(i.truth for i in sel)
                lo, hi = wilson_interval(right, len(sel))
                lines.append(
                    f"| {domain} | {judge} | {kind} | {right}/{len(sel)} ({lo:.0%}-{hi:.0%}) | {said_ok}/{len(sel)} | {truly}/{len(sel)} |"
                )
    return "\n".join(lines) + "\n"


def _kind_label(item: JudgedItem) -> str:
    # Game of 24 ablates either an operator or a number (Table A3 keeps them apart).
    return f"{item.kind} ({item.note.split()[0]})" if item.kind == "ablated" and item.note else item.kind


def report_table(items: list[JudgedItem], domain: str, judge: str) -> str:
    """Means of the domain's critique_report fields by candidate kind (Tables A3-A6)."""
    sel = [i for i in items if i.domain == domain and i.judge == judge and i.report]
    if not sel:
        return ""
    fields = sorted({k for i in sel for k in i.report})
    lines = ["| kind | n | " + " | ".join(fields) + " |", "|---|---|" + "---|" * len(fields)]
    by_kind: dict[str, list[JudgedItem]] = defaultdict(list)
    for i in sel:
        by_kind[_kind_label(i)].append(i)
    for kind, group in sorted(by_kind.items()):
        means = [sum(i.report.get(f, 0.0) for i in group) / len(group) for f in fields]
        lines.append(f"| {kind} | {len(group)} | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    return "\n".join(lines) + "\n"


def game24_evaluation_table(items: list[JudgedItem]) -> str:
    """Table A3: does the judge evaluate the expression right, and does it verify it right?"""
    sel = [i for i in items if i.domain == "game24" and i.judge == "llm"]
    if not sel:
        return ""
    by_kind: dict[str, list[JudgedItem]] = defaultdict(list)
    for i in sel:
        by_kind[_kind_label(i)].append(i)
    lines = ["| kind | n | correct evaluation | correct verification |", "|---|---|---|---|"]
    for kind, group in sorted(by_kind.items()):
        evaluated = sum(i.report.get("evaluation_correct", 0.0) for i in group)
        verified = sum(i.judged_ok == i.truth for i in group)
        lines.append(f"| {kind} | {len(group)} | {evaluated / len(group):.1%} | {verified / len(group):.1%} |")
    return "\n".join(lines) + "\n"


def write_json(path: Path, payload: object) -> None:
    write_file(path, json.dumps(payload, indent=2) + "\n")
