"""The self-verification authors' released runs (`self_verification_outputs/`): the one
reader of their files, and those runs as answers lines (`veriloop import SOURCE --format
self-verification`). reproduce.recorded computes the paper's tables through this reader.

The layout (its README gives provenance): `<dataset>/<model>/<condition>/responses.json`
with `evaluations.json` beside it, for graph colouring (`graph_coloring`), Game of 24
(`game24`) and GPT-4 judging proposed colourings (`color_verification`).

Invariants:
- A condition is named by the veriloop strategy that runs it (`CONDITIONS`), so an
  imported condition sits in the same column as veriloop's own runs of it; a condition
  veriloop has no strategy for keeps the authors' folder name after "authors:".
- Conditions stopped by a sound verifier take as their answer the first attempt veriloop's
  verifier accepts (the authors' own loop stopped at their checker's first acceptance);
  the others (standard prompting, LLM+LLM) answer with their last attempt.
- A colour-verification prompt becomes one attempt, the proposed colouring, under the
  condition `candidates:<kind>`, with GPT-4's recorded judgement kept as a `verify` call.
- One model per run directory: SOURCE names the model folder, or the root / a dataset
  folder, where the paper's model (gpt-4) is read.
- Reading never writes into the release; a file that is missing or not in the authors'
  layout is one VeriloopError naming it. So is one that is not a regular file (a folder,
  a device such as /dev/zero, a symlink loop) or is larger than MAX_JSON, checked before a
  byte of it is read; JSON nested too deeply to parse is "not the authors' JSON".
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datafiles import CappedReadError, loads, read_capped, size_text
from ..domains.base import Domain, Instance
from ..errors import VeriloopError
from ..records import CallRecord, Trajectory
from .answers import AnswerLine, Problem, json_kind

PAPER_MODEL = "gpt-4"
DATASETS = {"coloring": ("graph_coloring", "color_verification"), "game24": ("game24",)}
_SOUND = "backprompt:verifier=sound,max_rounds={rounds},feedback="
# Folder -> (strategy spec, answer rule). The backprompting runs allow the first answer and
# 15 backprompts (16 attempts; GPT-4-0613's Game of 24 runs 25).
CONDITIONS: dict[str, tuple[str, str]] = {
    "standard": ("standard", "last"),
    "backprompting-passfail": (_SOUND + "binary", "first-accepted"),
    "backprompting-first": (_SOUND + "first", "first-accepted"),
    "backprompting-full": (_SOUND + "all", "first-accepted"),
    "backprompting-llm": ("backprompt:verifier=llm,feedback=llm,max_rounds={rounds}", "last"),
    "backprompting-15top1": ("sampling:verifier=sound,k=15,temperature=1", "first-accepted"),
    "backprompting-05top0.5": ("sampling:verifier=sound,k=5,temperature=0.5", "first-accepted"),
    "backprompting-05top1": ("sampling:verifier=sound,k=5,temperature=1", "first-accepted"),
    "backprompting-05top1.5": ("sampling:verifier=sound,k=5,temperature=1.5", "first-accepted"),
}
# Conditions with no veriloop strategy: the authors' feedback-text variants, all earlier
# answers listed, sampling runs of unequal length. A sound verifier stopped each.
AUTHORS_ONLY = ("backprompting-zero", "backprompting-evil", "backprompting-list-previous", "backprompting-top-temp1.0")
ROUNDS = {PAPER_MODEL: 16, "gpt-4-0613": 25}


@dataclass
class SelfVerificationSource:
    """What one import of the authors' layout reads: its model folders' conditions as
    answers lines, and the instances they name."""

    model: str
    lines: list[tuple[str, AnswerLine | Problem]]
    instances: dict[str, Instance]
    judgements: dict[tuple[str, str], tuple[str, str]]  # (condition, instance id) -> (prompt, GPT-4's reply)
    graphs: Path | None


def condition_name(folder: str, model: str) -> tuple[str, str]:
    """The veriloop strategy (canonical name) an authors' condition folder stands for, and
    its answer rule."""
    from ..strategies import parse_strategy

    if folder in CONDITIONS:
        spec, rule = CONDITIONS[folder]
        return parse_strategy(spec.format(rounds=ROUNDS.get(model, 16))).canonical, rule
    if folder in AUTHORS_ONLY:
        return f"authors:{folder}", "first-accepted"
    raise VeriloopError(f"condition folder {folder!r} is not one of the authors' runs "
                        f"({', '.join([*CONDITIONS, *AUTHORS_ONLY])})")


def model_folders(source: Path, domain: str) -> list[Path]:
    """The `<dataset>/<model>` folders SOURCE names for `domain` (see the module docstring)."""
    if domain not in DATASETS:
        raise VeriloopError(f"--format self-verification holds coloring and game24 runs, not {domain!r}")
    if not source.is_dir():
        raise VeriloopError(f"{source}: no such folder; give self_verification_outputs or one of its folders")
    datasets = DATASETS[domain]
    if source.name in datasets:
        return [source / PAPER_MODEL]
    if source.parent.name in datasets:
        return [source]
    found = [source / d / PAPER_MODEL for d in datasets if (source / d / PAPER_MODEL).is_dir()]
    if not found:
        raise VeriloopError(f"{source} holds none of the authors' {domain} runs ({', '.join(datasets)}/"
                            f"{PAPER_MODEL}); give self_verification_outputs or one of its folders")
    return found


def read_source(source: Path, domain: Domain, graphs: Path | None) -> SelfVerificationSource:
    """Every condition under SOURCE for `domain` as answers lines. `graphs`: the DIMACS
    graphs the colouring prompts came from (default: graph_coloring beside the outputs)."""
    folders = model_folders(source, domain.name)
    models = {f.name for f in folders}
    if len(models) > 1:
        raise VeriloopError(f"{source}: runs of several models ({', '.join(sorted(models))}); import one model folder")
    model = models.pop()
    root = folders[0].parent.parent
    if domain.name == "coloring":
        graphs = graphs or root.parent / "graph_coloring"
        if not graphs.is_dir():
            raise VeriloopError(f"{graphs}: no such folder of DIMACS graphs; give --data FOLDER (graph_coloring)")
        graph = graph_reader(domain, graphs)
        instance_of: Callable[[str, dict[str, Any]], Instance] = lambda key, record: graph(key)  # noqa: E731
    else:
        def instance_of(key: str, record: dict[str, Any]) -> Instance:
            # Checked by _attempts: "query" a string or absent, "prompts" a list of strings or absent.
            prompt = record.get("query") or (record.get("prompts") or [""])[0]
            return puzzle_instance(domain, key, str(prompt))  # type: ignore[no-any-return]
    out = SelfVerificationSource(model, [], {}, {}, graphs if domain.name == "coloring" else None)
    for folder in folders:
        if folder.parent.name == "color_verification":
            _candidates(folder, model, instance_of, out)
        else:
            order = [*CONDITIONS, *AUTHORS_ONLY]
            folders_in = [p for p in folder.iterdir() if p.is_dir()]
            for condition in sorted(folders_in, key=lambda p: (order.index(p.name) if p.name in order else len(order),
                                                               p.name)):
                _answers(condition, model, instance_of, out)
    return out


def _answers(folder: Path, model: str, instance_of: Callable[[str, dict[str, Any]], Instance],
             out: SelfVerificationSource) -> None:
    name, rule = condition_name(folder.name, model)
    responses = read_json(folder / "responses.json")
    for key in by_number(responses):
        where = f"{folder / 'responses.json'}, instance {key}"
        record = responses[key]
        try:
            replies, feedback, messages = _attempts(key, record)
            instance = instance_of(key, record)
        except (VeriloopError, FileNotFoundError) as exc:
            out.lines.append((where, Problem(where, str(exc))))
            continue
        out.instances[instance.id] = instance
        if not replies:
            out.lines.append((where, Problem(where, "no recorded response")))
            continue
        raw = {"instance_id": instance.id, "responses": replies, "condition": name, "model": model,
               "final": rule, "feedback": feedback[:len(replies)], "messages": messages}
        out.lines.append((where, AnswerLine.model_validate(raw)))


def _attempts(key: str, record: Any) -> tuple[list[str | None], list[str], list[dict[str, str]] | None]:
    """A record's replies, the feedback sent between them and its first prompt as messages;
    a VeriloopError (in one line) when the record is not in the authors' layout."""
    _check_key(key)
    if not isinstance(record, dict):
        raise VeriloopError("not an object of prompts and responses")
    if isinstance(record.get("responses"), list):  # GPT-4-0613's lists of prompts and replies
        prompts = _texts(record, "prompts")
        replies = _texts(record, "responses", replies=True)
        feedback = [_added(str(prompts[i]), str(prompts[i + 1]), replies[i])
                    for i in range(min(len(prompts), len(replies)) - 1) if i + 1 < len(prompts)]
        messages = [{"role": "user", "content": str(prompts[0])}] if prompts else None
        return replies, feedback, messages
    keys = answer_keys(record)
    replies = [_reply(record, k) for k in keys]
    feedback = [_string(record, f"backprompt {i}") for i in range(len(keys) - 1) if f"backprompt {i}" in record]
    if len(feedback) != len(keys) - 1:
        feedback = []
    query = _reply(record, "query")
    return replies, feedback, None if query is None else [{"role": "user", "content": query}]


def _check_key(key: str) -> None:
    # The authors number their instances; a key names a graph file, so nothing else is read.
    if not (key.isascii() and key.isdigit()):
        raise VeriloopError(f"the key {key[:40]!r} is not an instance number (the authors key records 1, 2, ...)")


def _reply(record: dict[str, Any], key: str) -> str | None:
    """record[key] when it is a string; None when it is null or absent."""
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise VeriloopError(f'"{key}" is {json_kind(value)}, not a string')


def _string(record: dict[str, Any], key: str) -> str:
    """record[key], which must be a string."""
    value = _reply(record, key)
    if value is None:
        raise VeriloopError(f'"{key}" is {"null" if key in record else "missing"}, not a string')
    return value


def _texts(record: dict[str, Any], key: str, replies: bool = False) -> list[str | None]:
    """record[key] when it is a list of strings (replies may be null); absent or null: []."""
    value = record.get(key)
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) or (replies and v is None) for v in value):
        return value
    what = "a list holding " + next(json_kind(v) for v in value if not isinstance(v, str)) \
        if isinstance(value, list) else json_kind(value)
    raise VeriloopError(f'"{key}" is {what}, not a list of strings')


def _added(prompt: str, following: str, reply: str | None) -> str:
    """The text a cumulative prompt added after an answer: the feedback it sent."""
    if following.startswith(prompt):
        tail = following[len(prompt):]
        return tail[len(reply):] if reply and tail.startswith(reply) else tail
    return following


def _candidates(folder: Path, model: str, instance_of: Callable[[str, dict[str, Any]], Instance],
                out: SelfVerificationSource) -> None:
    for kind in KINDS:
        responses = read_json(folder / kind / "responses.json")
        condition = f"candidates:{kind}"
        for key in by_number(responses):
            where = f"{folder / kind / 'responses.json'}, instance {key}"
            record = responses[key]
            try:
                _check_key(key)
                if not isinstance(record, dict):
                    raise VeriloopError("no query and response")
                query, reply = _string(record, "query"), _string(record, "response")
                candidate = proposed_colouring(query, where)
                instance = instance_of(key, record)
            except VeriloopError as exc:
                out.lines.append((where, Problem(where, str(exc).removeprefix(f"{where}: "))))
                continue
            out.instances[instance.id] = instance
            out.judgements[(condition, instance.id)] = (query, reply)
            out.lines.append((where, AnswerLine(instance_id=instance.id, responses=[candidate], condition=condition,
                                                model=model)))


def add_judgement(t: Trajectory, source: SelfVerificationSource) -> None:
    """Keep GPT-4's recorded judgement of a proposed colouring as the verify call it was."""
    judged = source.judgements.get((t.strategy, t.instance_id))
    if judged is not None:
        query, reply = judged
        t.calls.append(CallRecord(role="verify", round=1, messages=[{"role": "user", "content": query}],
                                  response=reply, finish_reason="recorded", prompt_tokens=0, completion_tokens=0,
                                  seconds=0.0, cached=False, model=source.model))


# ---- reading the release: the one reader of the authors' files (reproduce.recorded uses it) ----

KINDS = ("correct", "ablated", "non-optimal", "random", "llm")
"""The candidate kinds of the released colour-verification run, in the paper's order."""
ACCEPTED = "Verifier confirmed success"
MAX_JSON = 256 << 20
"""The most veriloop reads of one recorded JSON file (the authors' largest is 3.4 MB): it
is parsed whole, so this bounds what a file named like theirs can make a command hold."""
CANDIDATE_START = "Please check if this coloring is correct:"
CANDIDATE_END = "If it is, say"
PUZZLE = re.compile(r"Input: ([0-9 ]+)\n")


def read_json(path: Path) -> dict[str, Any]:
    """A file of the authors' layout, bounded before it is read (see MAX_JSON)."""
    try:
        raw = read_capped(path, MAX_JSON)
    except FileNotFoundError:
        raise VeriloopError(f"{path}: not found; --recorded names the folder self_verification_outputs") from None
    except CappedReadError as exc:
        raise VeriloopError(f"{path}: {exc}; give self_verification_outputs as the authors released it (their "
                            "files hold at most 4 MiB)") from None
    try:
        data = loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VeriloopError(f"{path}: not the authors' JSON ({exc})") from None
    if not isinstance(data, dict):
        raise VeriloopError(f"{path}: not the authors' layout (an object keyed by instance number)")
    return data


def by_number(responses: dict[str, Any]) -> list[str]:
    """A file's instance keys ("1", "2", ... "100") in numeric order."""
    return sorted(responses, key=lambda k: (len(k), k))


def proposed_colouring(query: str, where: str) -> str:
    start, end = query.find(CANDIDATE_START), query.find(CANDIDATE_END)
    if start < 0 or end < start:
        raise VeriloopError(f"{where}: the prompt does not hold a proposed colouring where the authors put it")
    return query[start + len(CANDIDATE_START):end].strip()


def graph_reader(domain: Any, graphs: Path) -> Callable[[str], Instance]:
    """Graph `instance-<key>.col` of the folder as the coloring domain's instance, each
    read once."""
    loaded: dict[str, Instance] = {}

    def graph(key: str) -> Instance:
        if key not in loaded:
            path = graphs / f"instance-{key}.col"
            check_graph(path)
            loaded[key] = domain.load_instances(str(path), n=1)[0]
        return loaded[key]

    return graph


def check_graph(path: Path) -> None:
    """A graph file is a regular file of at most MAX_JSON bytes before the domain reads it
    (a missing one is left to the domain's own message)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise VeriloopError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__}); give the folder of "
                            "DIMACS graphs (graph_coloring)") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_JSON:
        what = f"more than {size_text(MAX_JSON)}" if stat.S_ISREG(info.st_mode) else "not a regular file"
        raise VeriloopError(f"{path}: {what}, not a DIMACS graph; give the folder of DIMACS graphs (graph_coloring)")


_NUMBERED = re.compile(r"response ([0-9]+)")


def answer_keys(record: dict[str, Any]) -> list[str]:
    """A record's answers in order: `response`, then `response 0`, `response 1`, ... (the
    other keys are prompts, feedback and critiques)."""
    # ASCII digits only: str.isdigit() also holds for "²", which int() refuses.
    numbered = sorted((int(found.group(1)), key) for key in record
                      if (found := _NUMBERED.fullmatch(key)) is not None)
    return (["response"] if "response" in record else []) + [key for _, key in numbered]


def puzzle_instance(domain: Any, key: str, prompt: str) -> Instance:
    found = PUZZLE.search(prompt)
    if found is None:
        raise VeriloopError(f"game24 instance {key}: its prompt does not name the four numbers (Input: a b c d)")
    return domain.parse_instance({"instance": found.group(1).strip()})  # type: ignore[no-any-return]
