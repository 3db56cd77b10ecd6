"""What the report shows, read from run and experiment directories: the trajectories as
records, the overview figures (computed with stats.metrics, as `veriloop run` and
`veriloop eval` compute theirs; a group whose rounds form pools also has its pool curves,
computed with stats.pools as the results files compute theirs) and the compact JSON
payload the page embeds.

Viewing reads data and never runs code or writes: the records are read without cutting a
torn last line, references come from the instances.jsonl the run recorded (never from
rebuilding its domain out of config.json, which could name a check file to import or ask
for 10^8 generated instances), and a run's file that is a symbolic link or resolves
outside its directory is refused. Audit directories under the paths are read the same way
(audits.py) and shown beside the runs; a path holding audits and no run is viewable.

The payload stores every distinct text once (`S`) and every distinct message once (`M`,
a role and a text); a call lists the indices of its messages. A few-shot prompt repeated
over thousands of calls, or a conversation that grows by two messages a round, then costs
a few integers per call instead of its whole text again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import VeriloopError
from ..records import CallRecord, Instance, Message, RoundRecord, Trajectory, Verdict
from ..runs.jsonl import read_records, run_file
from ..stats.frontier import output_round
from ..stats.metrics import StrategySummary, summarise
from ..stats.pools import strategy_pools
from .audits import REPORT, AuditSource, audit_directories, audit_payload, discover_audits

TRAJECTORIES = "trajectories.jsonl"  # the run directory's record file (runs.runner.TRAJECTORIES)
INSTANCES = "instances.jsonl"  # its instances, with their references (runs.runner.INSTANCES)
ROLES = ("system", "user", "assistant")
PAYLOAD_VERSION = 1

# The verifier's verdict on a round against the ground truth; a trajectory's flags OR them.
HAS_VERDICT, FALSE_ACCEPT, FALSE_REJECT = 1, 2, 4


@dataclass
class RunSource:
    """One run directory (or a bare trajectories.jsonl) and how the page names it."""

    label: str
    directory: Path
    file: Path
    experiment: Path | None = None  # the experiment directory it was found under, if any


@dataclass
class Loaded:
    """The trajectories of every source, in source order, each with its source."""

    sources: list[RunSource]
    trajectories: list[tuple[RunSource, Trajectory]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)  # as the user gave them
    audits: list[AuditSource] = field(default_factory=list)


def _shortest_labels(paths: Sequence[Path]) -> list[str]:
    """The fewest trailing path parts that tell the paths apart (a run's name, usually)."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        labels = ["/".join(ps[-depth:]) for ps in parts]
        if len(set(labels)) == len(labels) or depth >= max(len(ps) for ps in parts):
            return labels
        depth += 1


def _experiment_order(directory: Path, files: list[Path]) -> list[Path]:
    """An experiment's cells in the order of its results.json (the table's order), the
    ones it does not list (yet) after them, alphabetically."""
    try:
        cells = json.loads((directory / "results.json").read_text())["cells"]
        order = {(directory / c["run_dir"]).resolve(): i for i, c in enumerate(cells)}
    except (OSError, ValueError, KeyError, TypeError):
        order = {}
    return sorted(files, key=lambda f: (order.get(f.parent.resolve(), len(order)), str(f)))


def discover(paths: Sequence[Path]) -> list[RunSource]:
    """The run directories the paths name: a run directory, an experiment directory (every
    trajectories.jsonl below it) or a trajectories.jsonl file. A path that does not exist
    or holds neither a trajectory file nor an audit (audits.discover_audits) is an error
    naming it; so is a run directory's trajectories.jsonl that is a symbolic link or
    resolves outside it (runs.jsonl.run_file)."""
    if not paths:
        raise VeriloopError("give a run directory, an experiment directory, an audit directory or a trajectories.jsonl file")
    found: list[tuple[Path, Path | None]] = []  # (trajectory file, experiment directory)
    for path in paths:
        if not path.exists():
            raise VeriloopError(f"{path} does not exist")
        if path.is_file():
            if path.name == REPORT:
                continue  # an audit alone (discover_audits)
            if path.suffix != ".jsonl":
                raise VeriloopError(f"{path} is not a run directory, an experiment directory or a .jsonl file")
            found.append((path, None))
        elif (path / TRAJECTORIES).is_file() or (path / TRAJECTORIES).is_symlink():
            found.append((run_file(path, TRAJECTORIES), None))
        else:
            # rglob follows no linked directory; a linked trajectory file is refused by run_file.
            files = [run_file(f.parent, TRAJECTORIES) for f in path.rglob(TRAJECTORIES)]
            files = [f for f in files if f.is_file()]
            if not files and not audit_directories(path):
                raise VeriloopError(f"{path} holds no trajectories and no audit (no {TRAJECTORIES} or {REPORT} in it "
                                    "or below it)")
            found += [(f, path) for f in _experiment_order(path, files)]
    seen: set[Path] = set()
    unique = []
    for file, experiment in found:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            unique.append((file, experiment))
    labels = _shortest_labels([f.parent if f.name == TRAJECTORIES else f for f, _ in unique])
    # An experiment's cell is named by its path in the experiment (model/domain/strategy-seed),
    # under the experiment's own name when other paths share the report.
    for k, (f, experiment) in enumerate(unique):
        if experiment is not None:
            cell = f.parent.relative_to(experiment).as_posix()
            labels[k] = cell if len(paths) == 1 else f"{experiment.resolve().name}/{cell}"
    if len(set(labels)) < len(labels):
        labels = _shortest_labels([f.parent if f.name == TRAJECTORIES else f for f, _ in unique])
    return [RunSource(label, f.parent, f, experiment) for label, (f, experiment) in zip(labels, unique)]


def read_trajectories(file: Path) -> list[Trajectory]:
    """The file's trajectories, read only: a run may be appending to it, so a last line
    without its newline is a record still being written and is left for the next read
    (runs.jsonl.read_records; load_records would cut it off the file)."""
    return read_records(file, Trajectory, "trajectory")


def load(paths: Sequence[Path], allow_empty: bool = False) -> Loaded:
    """Every trajectory and audit the paths hold; no trajectory and no audit is an error
    unless `allow_empty` (a served run that has not finished its first trajectory yet)."""
    sources = discover(paths)
    loaded = Loaded(sources, paths=list(paths), audits=discover_audits(paths))
    for source in sources:
        loaded.trajectories += [(source, t) for t in read_trajectories(source.file)]
    if not loaded.trajectories and not loaded.audits and not allow_empty:
        names = ", ".join(str(p) for p in paths)
        raise VeriloopError(f"{names} hold{'s' if len(paths) == 1 else ''} no trajectories yet (empty {TRAJECTORIES})")
    return loaded


def agreement(r: RoundRecord) -> str | None:
    """The in-loop verifier's verdict on a round against the ground truth: "agree",
    "false_accept" (accepted a wrong answer) or "false_reject" (rejected a right one);
    None when the round had no verdict."""
    if r.verdict is None:
        return None
    if r.verdict.ok == r.correct:
        return "agree"
    return "false_accept" if r.verdict.ok else "false_reject"


def verifier_flags(t: Trajectory) -> int:
    flags = 0
    for r in t.rounds:
        code = agreement(r)
        if code is not None:
            flags |= HAS_VERDICT
        if code == "false_accept":
            flags |= FALSE_ACCEPT
        elif code == "false_reject":
            flags |= FALSE_REJECT
    return flags


def accuracy_by_round(ts: Sequence[Trajectory], max_rounds: int) -> list[float]:
    """Accuracy as if every loop had stopped after n rounds, n = 1..max_rounds: a
    trajectory's output is its answer of round min(n, last round) (the self-verification
    paper's Figure 2; as reproduce.self_verification computes it), or for an imported loop
    stopped by its verifier with attempts recorded after the stop, its first accepted
    round by then (stats.frontier.output_round)."""
    if not ts:
        return []
    return [
        sum(output_round(t, t.rounds[:n]).correct for t in ts if t.rounds) / len(ts)
        for n in range(1, max_rounds + 1)
    ]


def feedback_after(t: Trajectory, index: int) -> str | None:
    """The exact text fed back after round `index` (0-based into t.rounds): the last
    message of the next round's answering call, when it is a user message the previous
    answering call was not sent (a resampled base prompt feeds nothing back)."""
    number = t.rounds[index].round
    answering = ("generate", "correct")
    this = next((c for c in t.calls if c.round == number and c.role in answering), None)
    nxt = next((c for c in t.calls if c.round > number and c.role in answering), None)
    if this is None or nxt is None or not nxt.messages or nxt.messages[-1]["role"] != "user":
        return None
    last = nxt.messages[-1]["content"]
    if any(m["content"] == last for m in this.messages):
        return None
    return last


@dataclass
class Group:
    """One row of the overview: a source's trajectories of one model, domain, strategy, seed."""

    source: str
    model: str
    domain: str
    strategy: str
    seed: int
    trajectories: list[Trajectory] = field(default_factory=list)

    def summary(self) -> StrategySummary:
        return summarise(self.strategy, self.trajectories)


def groups_of(loaded: Loaded) -> list[Group]:
    groups: dict[tuple[str, str, str, str, int], Group] = {}
    for source, t in loaded.trajectories:
        key = (source.label, t.model, t.domain, t.strategy, t.seed)
        if key not in groups:
            groups[key] = Group(*key)
        groups[key].trajectories.append(t)
    return list(groups.values())


class Interner:
    """Distinct texts and messages, numbered in the order first met."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.messages: list[list[int]] = []
        self._string_ids: dict[str, int] = {}
        self._message_ids: dict[tuple[int, int], int] = {}

    def text(self, value: str | None) -> int | None:
        if value is None:
            return None
        found = self._string_ids.get(value)
        if found is None:
            found = self._string_ids[value] = len(self.strings)
            self.strings.append(value)
        return found

    def message(self, m: Message) -> int:
        role = m["role"]
        code = ROLES.index(role) if role in ROLES else len(ROLES) + (self.text(role) or 0)
        key = (code, self.text(m["content"]) or 0)
        found = self._message_ids.get(key)
        if found is None:
            found = self._message_ids[key] = len(self.messages)
            self.messages.append(list(key))
        return found


def rebuild_messages(payload: dict[str, Any], message_ids: Sequence[int]) -> list[Message]:
    """A call's messages from the payload's tables (what the page does in JavaScript)."""
    strings, table = payload["S"], payload["M"]
    out = []
    for i in message_ids:
        code, text = table[i]
        role = ROLES[code] if code < len(ROLES) else strings[code - len(ROLES)]
        out.append({"role": role, "content": strings[text]})
    return out


def _verdict(v: Verdict | None, intern: Interner) -> dict[str, Any] | None:
    if v is None:
        return None
    out: dict[str, Any] = {"ok": v.ok, "by": v.verifier}
    if v.errors:
        out["e"] = [[e.kind, intern.text(e.message), e.where] for e in v.errors]
    if v.malformed:
        out["mal"] = True
    if v.unreadable:
        out["unr"] = True
    if v.score is not None:
        out["sc"] = v.score
    return out


def _call(c: CallRecord, intern: Interner) -> list[Any]:
    # A list, not an object: 10,000 trajectories of a few calls each repeat these keys
    # tens of thousands of times. The page reads the positions in call().
    return [
        c.role, c.round, c.sample_index, [intern.message(m) for m in c.messages], intern.text(c.response),
        c.finish_reason, c.prompt_tokens, c.completion_tokens, round(c.seconds, 3), int(c.cached), c.stage, c.step,
        c.model,
        # What a model behind an API said of its own reasoning, and what it was sent.
        None if c.reasoning is None else intern.text(c.reasoning), c.reasoning_tokens, c.cached_prompt_tokens,
        None if c.sent is None else intern.text(json.dumps(c.sent, sort_keys=True, ensure_ascii=False)),
    ]


def _step_checks(t: Trajectory, intern: Interner) -> list[dict[str, Any]]:
    return [{
        "round": s.round, "checker": s.checker, "total": s.steps_total, "checked": s.steps_checked,
        "max": s.max_steps, "contradicted": s.contradicted, "unrelated": s.unrelated, "confidence": s.confidence,
        "global": intern.text(s.global_reply),
        "steps": [[
            st.index, intern.text(st.text), intern.text(st.target), st.facts_used, st.steps_used,
            int(st.collection_unreadable), intern.text(st.regenerated), intern.text(st.comparison), st.result,
            int(st.unreadable),
        ] for st in s.steps],
    } for s in t.step_checks]


def _trajectory(t: Trajectory, group: int, intern: Interner, references: dict[str, Any]) -> dict[str, Any]:
    rounds = [[
        r.round, intern.text(r.text), intern.text(r.answer), _verdict(r.verdict, intern), int(r.correct),
        agreement(r), intern.text(feedback_after(t, i)),
    ] for i, r in enumerate(t.rounds)]
    out: dict[str, Any] = {
        "g": group, "i": t.instance_id, "ok": int(t.correct), "sr": t.stop_reason, "nr": t.n_rounds,
        "nc": len(t.calls), "tk": sum(c.prompt_tokens + c.completion_tokens for c in t.calls),
        "s": round(t.seconds, 3), "vf": verifier_flags(t), "fa": intern.text(t.final_answer),
        "ft": intern.text(t.final_text), "c": [_call(c, intern) for c in t.calls], "r": rounds,
    }
    if t.tool_calls:
        out["tc"] = [[x.round, x.tool, intern.text(x.input), intern.text(x.text), int(x.ok), round(x.seconds, 3),
                      int(x.cached)] for x in t.tool_calls]
    if t.step_checks:
        out["sc"] = _step_checks(t, intern)
    if t.instance_id in references:
        ref = references[t.instance_id]
        out["ref"] = intern.text(ref if isinstance(ref, str) else json.dumps(ref, ensure_ascii=False))
    return out


def summary_row(g: Group, s: StrategySummary) -> dict[str, Any]:
    max_rounds = max((t.n_rounds for t in g.trajectories), default=0)
    return {
        "source": g.source, "model": g.model, "domain": g.domain, "strategy": g.strategy, "seed": g.seed,
        "n": s.n, "correct": s.correct, "accuracy": s.accuracy, "ci": list(s.accuracy_ci95),
        "mean_rounds": s.mean_rounds, "calls": s.model_calls, "cache_hits": s.cache_hits,
        "prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens,
        "tokens_per_trajectory": (s.prompt_tokens + s.completion_tokens) / s.n if s.n else 0.0,
        "seconds": s.seconds, "stop_reasons": s.stop_reasons,
        "by_round": accuracy_by_round(g.trajectories, max_rounds),
        "pools": pool_curves(g),
    }


def pool_curves(g: Group) -> dict[str, Any] | None:
    """The group's pool curves (stats.pools.StrategyPools without its strategy), or
    None when no trajectory of it has two rounds."""
    found = strategy_pools(g.strategy, g.trajectories)
    return None if found is None else found.model_dump(exclude={"strategy"})


def build_payload(
    loaded: Loaded, title: str = "veriloop report", live: bool = False,
    references: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The page's data: sources, the overview rows (one per group), every trajectory in
    compact form over the shared text and message tables, and the audits (`A`, read
    here: audits.audit_payload). `references`: by source label, each instance's
    reference answer, where known."""
    intern = Interner()
    groups = groups_of(loaded)
    index = {(g.source, g.model, g.domain, g.strategy, g.seed): i for i, g in enumerate(groups)}
    refs = references or {}
    trajectories = [
        _trajectory(t, index[(src.label, t.model, t.domain, t.strategy, t.seed)], intern, refs.get(src.label, {}))
        for src, t in loaded.trajectories
    ]
    audits = audit_payload(loaded.audits, intern)
    return {
        "v": PAYLOAD_VERSION, "title": title, "live": live, "paths": [str(p) for p in loaded.paths],
        "sources": [{"label": s.label, "path": str(s.directory),
                     "experiment": str(s.experiment) if s.experiment else None} for s in loaded.sources],
        "groups": [summary_row(g, g.summary()) for g in groups],
        "S": intern.strings, "M": intern.messages, "T": trajectories, "A": audits,
    }


def load_references(sources: Iterable[RunSource]) -> dict[str, dict[str, Any]]:
    """Each source's instances' reference answers, as its run recorded them (its
    instances.jsonl, which `veriloop run`, `eval`, `import` and `rescore` write); {} for a
    source without one, or one that cannot be read (the page then shows the ground
    truth's verdict alone). Nothing is rebuilt: the run's config.json is never read, so
    no domain is built and no check or task file it names is imported."""
    found: dict[str, dict[str, Any]] = {}
    for source in sources:
        path = run_file(source.directory, INSTANCES)  # a symbolic link out of the run is refused, not followed
        try:
            rows = read_records(path, Instance, "instance")
        except VeriloopError:  # a reference is a nicety: the report must not fail for one
            rows = []
        found[source.label] = {i.id: i.reference for i in rows if i.reference is not None}
    return found
