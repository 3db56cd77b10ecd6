"""Recorded answers (`answers.AnswerLine`s) into an ordinary run directory.

What `veriloop run` writes, `import` writes: config.json, trajectories.jsonl (one
trajectory per instance and condition), instances.jsonl and summary.json. So `veriloop view`, the results
tables, `rescore` and every metric read an imported run unchanged.

Invariants:
- Each recorded attempt is a round, checked by the domain's sound verifier (the round's
  verdict) and scored against ground truth (`correct`); the trajectory's answer is the
  last attempt, or for `final: first-accepted` the first one the verifier accepts. Every
  recorded attempt is kept, also those after the answer: they were spent (the source
  drew them), and a pool metric reads them.
- A reply the domain cannot read is a recorded wrong answer (a malformed verdict) and a
  note in the report; it never stops an import. A line that cannot be imported at all (not
  JSON, no reply, an instance the data does not hold, a second line for the same instance
  and condition) is skipped and reported, one line each, naming file, line and reason.
- An import writes its directory whole: the trajectories replace what an earlier import
  of the same source wrote there; a directory holding another run is refused (one
  `veriloop run` made, one imported from another source, or a folder of runs or an
  experiment, whose runs `veriloop view` would no longer show beside the import).
- A directory's config.json is read bounded (a regular file of at most MAX_CONFIG bytes,
  nesting a JSON error) before anything else reads it: a hostile --out is one error line.
- Recorded calls cost this machine nothing: their tokens and seconds are 0 unless the
  source says otherwise, and they are not marked cached (they were real calls, elsewhere).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..datafiles import MAX_CONFIG, CappedReadError, loads, read_capped
from ..domains.base import Domain, SoundlyScored
from ..errors import VeriloopError
from ..files import write_file
from ..records import CallRecord, Instance, Message, RoundRecord, Trajectory
from ..runs.dirlock import hold
from ..runs.runner import CONFIG, TRAJECTORIES, RunResult, check_run_dir, write_instances, write_summary
from ..stats.metrics import StrategySummary, summarise
from .answers import AnswerLine, Problem

REPORT = "import.json"
# The stop reasons of an imported trajectory: the source's loop ended as recorded, or a
# loop stopped by a sound verifier accepted an attempt / ran out of attempts.
RECORDED = "recorded"


@dataclass
class ImportResult:
    out_dir: Path
    summaries: list[StrategySummary]
    lines: int
    skipped: list[Problem] = field(default_factory=list)  # lines not imported
    unreadable: list[Problem] = field(default_factory=list)  # replies recorded as malformed wrong answers

    @property
    def imported(self) -> int:
        return self.lines - len(self.skipped)


def trajectory_of(domain: Domain, instance: Instance, line: AnswerLine) -> Trajectory:
    """The trajectory a recorded line stands for: each attempt a call and a round, checked
    by the domain's verifier; feedback, when recorded, sent between the attempts."""
    t = Trajectory(strategy=line.condition, domain=domain.name, model=line.model, instance_id=instance.id, seed=0)
    base: list[Message] = list(line.messages) if line.messages else domain.prompt(instance)
    history = list(base)
    sound = type(domain).score is SoundlyScored.score
    for i, text in enumerate(line.responses):
        t.calls.append(CallRecord(
            role="generate", round=i + 1, sample_index=0 if line.feedback else i, messages=history, response=text,
            finish_reason=RECORDED, prompt_tokens=0, completion_tokens=0, seconds=0.0, cached=False,
        ))
        verdict = domain.verify(instance, text)
        # A soundly scored domain's score is its verify's verdict: not checked twice.
        correct = verdict.ok if sound else domain.score(instance, text)
        t.rounds.append(RoundRecord(round=i + 1, text=text, answer=domain.extract_answer(instance, text),
                                    verdict=verdict, correct=correct))
        # With feedback the attempts are a conversation; without, each is a fresh sample of the base prompt.
        if i < len(line.feedback):
            history = [*history, {"role": "assistant", "content": text}, {"role": "user", "content": line.feedback[i]}]
    chosen = len(t.rounds) - 1
    t.stop_reason = RECORDED
    if line.final == "first-accepted":
        accepted = [i for i, r in enumerate(t.rounds) if r.verdict is not None and r.verdict.ok]
        chosen = accepted[0] if accepted else chosen
        t.stop_reason = "verifier_accepted" if accepted else "max_rounds"
    final = t.rounds[chosen]
    t.final_text, t.final_answer, t.correct = final.text, final.answer, final.correct
    return t


def unreadable_notes(where: str, domain: Domain, t: Trajectory) -> list[Problem]:
    """One note per reply the domain could not read as an answer (recorded as wrong)."""
    notes = []
    for r in t.rounds:
        if r.verdict is not None and r.verdict.malformed:
            label = f"reply {r.round}" if len(t.rounds) > 1 else "the reply"
            if not r.text.strip():
                notes.append(Problem(where, f"{label} is empty: recorded as a wrong answer"))
                continue
            why = r.verdict.errors[0].message if r.verdict.errors else "no answer in it"
            notes.append(Problem(where, f"{label} is not a {domain.name} answer ({why}): recorded as a wrong answer"))
    return notes


def import_lines(
    lines: Iterable[tuple[str, AnswerLine | Problem]], domain: Domain, instance_of: Callable[[str], Instance | None],
    out_dir: Path, config: Mapping[str, object], data_hint: str = "",
    amend: Callable[[Trajectory], None] | None = None,
) -> ImportResult:
    """Import recorded lines into `out_dir` (see the module docstring). `instance_of` maps
    an instance id to the domain's instance (None: the data does not hold it); `config`
    names the source (written to config.json, and compared with an earlier import's);
    `amend` may add to each trajectory what only its format records (before it is written)."""
    trajectories: dict[tuple[str, str], Trajectory] = {}
    first_seen: dict[tuple[str, str], str] = {}
    skipped: list[Problem] = []
    used: dict[str, Instance] = {}
    unreadable: list[Problem] = []
    count = 0
    for where, line in lines:
        count += 1
        if isinstance(line, Problem):
            skipped.append(line)
            continue
        instance = instance_of(line.instance_id)
        if instance is None:
            skipped.append(Problem(where, _not_in_data(line.instance_id, domain, instance_of, data_hint)))
            continue
        key = (line.condition, instance.id)
        if key in trajectories:
            # A run directory holds one trajectory per condition and instance, whichever model made it.
            other = trajectories[key].model
            models = f", by model {other!r}: give each model its own condition" if other != line.model else ""
            skipped.append(Problem(where, f"a second line for instance {instance.id!r} under condition "
                                          f"{line.condition!r} (the first is {first_seen[key]}{models})"))
            continue
        t = trajectory_of(domain, instance, line)
        used[instance.id] = instance
        if amend is not None:
            amend(t)
        trajectories[key], first_seen[key] = t, where
        unreadable += unreadable_notes(where, domain, t)
    if not trajectories:
        reasons = f": {skipped[0]}" if skipped else ""
        raise VeriloopError(f"nothing to import: {count} line(s) read, none imported{reasons}")
    # The source stands where a run names its model: `veriloop run` then refuses to add its
    # trajectories to an import (it compares the settings both configs record).
    identity = {**config, "model_identity": f"recorded in {config.get('imported_from')}", "domain": domain.name,
                "seed": 0}
    with hold(out_dir):
        _refuse_another_run(out_dir, identity)
        check_run_dir(out_dir, identity)
        write_file(out_dir / CONFIG, json.dumps(identity, indent=2, default=str) + "\n")
        ordered = list(trajectories.values())
        write_file(out_dir / TRAJECTORIES, "".join(t.model_dump_json() + "\n" for t in ordered))
        # The instances themselves: `rescore` judges against them, whatever made them (a
        # data file, or the recorded prompts of a paper's release).
        write_instances(out_dir, used.values())
        conditions = list(dict.fromkeys(t.strategy for t in ordered))
        summaries = [summarise(c, (t for t in ordered if t.strategy == c)) for c in conditions]
        write_summary(RunResult(out_dir, summaries, len(ordered), 0, 0, 0.0), list(used.values()), 0, ordered)
        result = ImportResult(out_dir, summaries, count, skipped, unreadable)
        write_file(out_dir / REPORT, json.dumps({
            "lines": count, "imported": result.imported, "trajectories": len(ordered),
            "skipped": [str(p) for p in skipped], "unreadable_replies": [str(p) for p in unreadable],
        }, indent=2) + "\n")
    return result


def _not_in_data(instance_id: str, domain: Domain, instance_of: Callable[[str], Instance | None],
                 data_hint: str) -> str:
    # Ids are the domain's (`blocksworld-instance-2`); a file naming `instance-2` means that one.
    named = f"{domain.name}-{instance_id}"
    if instance_of(named) is not None:
        return (f"instance {instance_id!r} is not in the data; did you mean {named!r}? (ids are the domain's, "
                "as `veriloop run --data` names the instances)")
    return f"instance {instance_id!r} is not in the data{data_hint}"


def _refuse_another_run(out_dir: Path, config: Mapping[str, object]) -> None:
    """An import replaces its directory's trajectories: only those an import of the same
    source wrote (see the module docstring)."""
    path = out_dir / CONFIG
    if not path.exists():
        # A folder of runs, or an experiment: depth 3 reaches its cells (model/domain/strategy-seed).
        runs = [f for pattern in ("*/", "*/*/", "*/*/*/") for f in out_dir.glob(pattern + TRAJECTORIES)]
        if (out_dir / TRAJECTORIES).exists() or runs:
            found = (out_dir / TRAJECTORIES) if (out_dir / TRAJECTORIES).exists() else runs[0]
            raise VeriloopError(f"{out_dir} holds runs ({found}) that an import there would hide from "
                                "`veriloop view`; choose another --out")
        return
    try:
        old = loads(read_capped(path, MAX_CONFIG).decode("utf-8"))
    except CappedReadError as exc:
        raise VeriloopError(f"{path}: {exc}; it is not a run's config: choose another --out") from None
    except ValueError:
        raise VeriloopError(f"{path} is not valid JSON; restore it or choose another --out") from None
    if not isinstance(old, dict) or "imported_from" not in old:
        raise VeriloopError(f"{out_dir} holds a run veriloop made, which an import would replace; choose another --out")
    if old["imported_from"] != config.get("imported_from"):
        raise VeriloopError(f"{out_dir} holds answers imported from {old['imported_from']}, not "
                            f"{config.get('imported_from')}; choose another --out (importing "
                            f"{old['imported_from']} again replaces them)")
