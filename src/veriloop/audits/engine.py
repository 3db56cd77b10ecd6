"""Running an audit: every known-wrong answer, plain and dressed by each family, judged
by each verifier; one JSON line per judgement.

Invariants:
- The unit of work is (instance, answer, family, verifier); the plain answer is the
  family "plain". Each judgement is one line of `audit.jsonl`, appended (and flushed) as
  it ends, so a killed audit loses at most the judgements in flight, and a rerun in the
  same directory judges only what is missing. Model calls go through the call cache
  like a run's, keyed per sample, so a judgement cut off mid-way replays its calls.
- A directory holds one audit's subjects: the domain, its options, the model's identity,
  the seed and the answers' source are kept in `audit-config.json` and a rerun with
  other ones is refused (one line). Verifiers, families and instances may be added.
- A record answers its key only for the text it judged: when the plan's text for that key
  is another (a family, or the answers' source, changed since), the key is judged again
  and the newer line, the last one, is the one read (here and by the viewer).
- A dressed answer the family cannot make (`exploit` returned None) is recorded with
  `text` None and no verdict, so the report can say for how many answers a family was
  not applicable; it costs no call.
- The budget (`max_calls`) counts every model call the records hold, answered by the
  cache or not, checked before each call: no call starts once it is reached, so one
  judgement at a time stops at the same place on every machine; with several at once,
  calls already started may end a few past the cap (as experiment/budget.py says of
  tokens). A judgement cut off by the cap is not recorded.
- Only the plain and dressed texts, never a model's reply, are judged by the sandbox.
- Each judged text is also scored by ground truth (`right`): a family promises an answer
  that is still wrong, and where ground truth itself calls a dressed answer right (a
  problem whose only test is the example a special-cased function answers) the report
  says so instead of hiding it.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..domains.base import BaseDomain, Instance, as_base_domain
from ..episode import Episode
from ..errors import VeriloopError
from ..models.base import Completion, GenParams, Model
from ..records import Message, Trajectory
from ..verifiers import get_verifier
from ..verifiers.base import ChecksDomain, facts
from .answers import Answers, KnownAnswer, answers_from_run, known_answers
from .families import Family, Subject

RECORDS = "audit.jsonl"
CONFIG = "audit-config.json"
PLAIN = "plain"
DEFAULT_CONCURRENCY = 4


class AuditItem(BaseModel):
    """One verifier's judgement of one answer, plain (`family` "plain") or dressed."""

    domain: str
    instance_id: str
    answer: int  # the answer's index among the instance's known-wrong answers
    answer_kind: str
    family: str
    verifier: str
    text: str | None  # None: the family cannot dress this answer (no verdict asked)
    accepted: bool | None = None
    right: bool | None = None  # the text's ground truth (domain.score); None when nothing was judged
    unreadable: bool = False
    errors: list[str] = Field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (self.instance_id, self.answer, self.family, self.verifier)


@dataclass
class Work:
    """One judgement to make."""

    instance: Instance
    answer: KnownAnswer
    family: str
    verifier: str
    text: str | None

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (self.instance.id, self.answer.index, self.family, self.verifier)


@dataclass
class AuditPlan:
    """What an audit will judge, known before any model loads."""

    domain: BaseDomain
    instances: list[Instance]
    verifiers: list[str]
    families: list[Family]
    answers: dict[str, Answers]
    work: list[Work]
    seed: int
    calls_per_judgement: dict[str, int | None] = field(default_factory=dict)

    @property
    def needs_model(self) -> bool:
        return any(calls != 0 for calls in self.calls_per_judgement.values())

    @property
    def dropped(self) -> int:
        return sum(a.dropped for a in self.answers.values())


def _subject_rng(seed: int, instance_id: str, index: int, family: str) -> random.Random:
    return random.Random(f"{seed}:{instance_id}:{index}:{family}")


def plan_audit(domain: Any, verifiers: list[str], families: list[Family], instances: list[Instance], *,
               seed: int = 0, answers_run: Path | None = None, answers: dict[str, Answers] | None = None) -> AuditPlan:
    """The audit's work: check the verifiers against the domain, gather the known-wrong
    answers (ground truth checked: `answers` when given, else a recorded run's, else the
    domain's own), dress each with each family. Raises VeriloopError (one line) for a
    verifier that cannot judge the domain, or when no known-wrong answer is found."""
    base = as_base_domain(domain)
    if not verifiers:
        raise VeriloopError("an audit needs at least one verifier (--verifier sound, llm, hidden, ...)")
    built = {name: get_verifier(name) for name in verifiers}
    for verifier in built.values():
        if isinstance(verifier, ChecksDomain):
            verifier.check_domain(base)
    if answers is not None:
        found = answers
    elif answers_run is not None:
        found = answers_from_run(answers_run, base, instances, seed)
    else:
        found = {i.id: known_answers(base, i, seed) for i in instances}
    work: list[Work] = []
    for instance in instances:
        known = found.get(instance.id)
        if known is None:
            continue
        for answer in known.wrong:
            texts: list[tuple[str, str | None]] = [(PLAIN, answer.text)]
            for family in families:
                subject = Subject(base, instance, answer.text, known.right,
                                  _subject_rng(seed, instance.id, answer.index, family.name))
                texts.append((family.name, _dressed(family, subject)))
            work += [Work(instance, answer, name, v, text) for name, text in texts for v in verifiers]
    if not work:
        raise VeriloopError(f"no known-wrong answer of domain {base.name!r} on these instances "
                            f"({sum(a.dropped for a in found.values())} scored right by ground truth); give more instances")
    return AuditPlan(base, instances, list(verifiers), families, found, work, seed,
                     {name: facts(v).calls for name, v in built.items()})


def _dressed(family: Family, subject: Subject) -> str | None:
    """The family's dressed answer; a family that fails (a plugin's bug) or returns no text
    is one VeriloopError line naming it, before any judgement."""
    try:
        dressed = family.exploit(subject)
    except Exception as exc:  # noqa: BLE001 - a plugin's family may raise anything; said in one line
        raise VeriloopError(f"exploit family {family.name!r} failed on an answer of {subject.instance.id}: "
                            f"{type(exc).__name__}: {exc}; fix or uninstall the family") from None
    if dressed is not None and not isinstance(dressed, str):
        raise VeriloopError(f"exploit family {family.name!r} returned a {type(dressed).__name__}, not the dressed "
                            "reply's text or None")
    return dressed


def judgements_at_once(model: Model) -> int:
    """The default concurrency: what the model prefers (an in-process model batches up to
    16 sequences), and DEFAULT_CONCURRENCY sandbox runs when no model is asked."""
    return DEFAULT_CONCURRENCY if isinstance(model, NoModel) else max(1, model.preferred_concurrency)


class NoModel:
    """The model of an audit whose verifiers call none: a call is a bug, said in one line."""

    backend = "none"
    identity = "none"
    name = "none"
    preferred_concurrency = 1

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        raise VeriloopError("this audit's verifiers call no model, yet one asked for a call; give --model")

    async def aclose(self) -> None:
        pass


def audit_config(plan: AuditPlan, model: Model, answers: str, domain_options: dict[str, Any]) -> dict[str, Any]:
    """What an audit directory is kept for (see `check_config`); `answers` names the answers' source."""
    return {"domain": plan.domain.name, "domain_options": domain_options, "model": model.identity,
            "seed": plan.seed, "answers": answers}


def check_config(out_dir: Path, config: dict[str, Any]) -> None:
    """Refuse to continue an audit directory made for other subjects (one line)."""
    path = out_dir / CONFIG
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        raise VeriloopError(f"{path} is not an audit's config; choose another --out") from None
    changed = [k for k in config if old.get(k) != config[k]]
    if changed:
        k = changed[0]
        raise VeriloopError(f"{out_dir} holds an audit with {k} {old.get(k)!r}, not {config[k]!r}; "
                            "use another --out for another audit")


@dataclass
class AuditOutcome:
    items: list[AuditItem]
    stopped: str | None  # why the audit stopped before its end (a budget), else None
    new: int  # judgements made by this run
    seconds: float


async def run_audit(plan: AuditPlan, model: Model, out_dir: Path, *, config: dict[str, Any],
                    max_calls: int | None = None, concurrency: int | None = None,
                    on_progress: Callable[[int, int], None] | None = None) -> AuditOutcome:
    """Judge the plan's work not yet in `out_dir`'s records; returns every record of the
    plan (old and new). See the module's invariants."""
    from ..experiment.budget import BudgetReached, Meter, MeteredModel, Usage
    from ..experiment.schema import Budget
    from ..runs.dirlock import hold
    from ..runs.jsonl import RecordWriter, load_records, write_file

    started = time.monotonic()
    with hold(out_dir):
        check_config(out_dir, config)
        write_file(out_dir / CONFIG, json.dumps(config, indent=2) + "\n")
        path = out_dir / RECORDS
        recorded = {i.key: i for i in load_records(path, AuditItem)}
        wanted = {w.key for w in plan.work}
        todo = [w for w in plan.work if w.key not in recorded or recorded[w.key].text != w.text]
        meter = Meter("audit", Budget(max_calls=max_calls, max_tokens=None, max_usd=None), Usage(calls=sum(i.calls for i in recorded.values())))
        metered = MeteredModel(model, [meter], price=lambda *args, **kwargs: 0.0)
        done = len(plan.work) - len(todo)
        if on_progress:
            on_progress(done, len(plan.work))
        stopped: list[str] = []
        gate = asyncio.Semaphore(max(1, concurrency or judgements_at_once(model)))
        writer = RecordWriter(path)
        new = 0

        async def judge(work: Work) -> None:
            nonlocal done, new
            async with gate:
                if stopped:
                    return
                try:
                    item = await _judge(plan.domain, metered, work, plan.seed)  # type: ignore[arg-type]
                except BudgetReached as reached:
                    if not stopped:
                        stopped.append(str(reached))
                    return
                await writer.append(item)
                recorded[item.key] = item
                done, new = done + 1, new + 1
                if on_progress:
                    on_progress(done, len(plan.work))

        try:
            await asyncio.gather(*(judge(w) for w in todo))
        finally:
            await writer.aclose()
    items = [i for k, i in recorded.items() if k in wanted]
    return AuditOutcome(items, stopped[0] if stopped else None, new, time.monotonic() - started)


async def _judge(domain: BaseDomain, model: Model, work: Work, seed: int) -> AuditItem:
    item = AuditItem(domain=domain.name, instance_id=work.instance.id, answer=work.answer.index,
                     answer_kind=work.answer.kind, family=work.family, verifier=work.verifier, text=work.text)
    if work.text is None:
        return item
    trajectory = Trajectory(strategy=f"audit:{work.verifier}", domain=domain.name, model=model.name,
                            instance_id=work.instance.id, seed=seed)
    episode = Episode(model=model, domain=domain, instance=work.instance, seed=seed, trajectory=trajectory)
    verdict = await get_verifier(work.verifier).verify(episode, work.text, 1)
    item.accepted, item.unreadable = bool(verdict.ok), verdict.unreadable
    # Scored here, not assumed: a family promises a wrong answer, but a benchmark's own tests
    # may not tell a forgery from a solution (the report shows such accepts apart).
    item.right = bool(await asyncio.to_thread(domain.score, work.instance, work.text))
    item.errors = [e.message for e in verdict.errors[:3]]
    item.calls = len(trajectory.calls)
    item.prompt_tokens = sum(c.prompt_tokens for c in trajectory.calls)
    item.completion_tokens = sum(c.completion_tokens for c in trajectory.calls)
    return item
