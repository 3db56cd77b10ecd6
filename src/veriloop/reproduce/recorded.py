"""The self-verification paper's numbers from its authors' own GPT-4 runs, with no model call.

The authors released what GPT-4 answered in September 2023 (`self_verification_outputs/`,
beside the shared data: its README gives the layout and provenance). Read here:

- `color_verification/gpt-4/<kind>/`: GPT-4 asked whether a proposed colouring of graph
  `instance-<key>.col` is correct, 100 prompts for each kind of candidate (correct, ablated,
  non-optimal, random, GPT-4's own earlier answer). These are the paper's Table 2 colouring
  row as `JudgedItem`s, so the verification study's own scoring gives the table.

Invariants:
- A candidate's truth is the authors' stored evaluation (`coloring evaluation.correct`),
  so the table is the paper's; veriloop's sound verifier checks every candidate too, and
  each place it decides otherwise is a `Disagreement` with its cause, never dropped.
- GPT-4 accepted a candidate exactly when its reply holds "Verifier confirmed success"
  (the phrase the prompt asked for, as the authors scored it).
- Nothing is written into the recorded folder; a file that is missing or not in the
  authors' layout is one VeriloopError naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domains import get_domain
from ..domains.base import Instance
from ..errors import VeriloopError
from ..studies.verification import JudgedItem, VerifierScore

KINDS = ("correct", "ablated", "non-optimal", "random", "llm")
"""The candidate kinds of the released colour-verification run, in the paper's order."""
ACCEPTED = "Verifier confirmed success"
CANDIDATE_START = "Please check if this coloring is correct:"
CANDIDATE_END = "If it is, say"
# Table 2 of the paper, graph colouring, GPT-4 as verifier: accuracy, false positive rate,
# false negative rate (%).
PAPER_TABLE2_COLORING = (72.4, 6.5, 95.8)
ISOLATED = "isolated vertices left uncoloured: the authors' checker asks a colour only of vertices with an edge"


@dataclass(frozen=True)
class Disagreement:
    """A recorded candidate veriloop's sound verifier judges otherwise than the authors."""

    kind: str
    instance_id: str
    authors: bool
    veriloop: bool
    cause: str


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VeriloopError(f"{path}: not found; --recorded names the folder self_verification_outputs") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VeriloopError(f"{path}: not the authors' JSON ({exc})") from None
    if not isinstance(data, dict):
        raise VeriloopError(f"{path}: not the authors' layout (an object keyed by instance number)")
    return data


def _candidate(query: str, where: str) -> str:
    start, end = query.find(CANDIDATE_START), query.find(CANDIDATE_END)
    if start < 0 or end < start:
        raise VeriloopError(f"{where}: the prompt does not hold a proposed colouring where the authors put it")
    return query[start + len(CANDIDATE_START):end].strip()


def color_verification(recorded: Path, graphs: Path) -> tuple[list[JudgedItem], list[Disagreement]]:
    """GPT-4's 500 recorded judgements of proposed colourings, as the verification study's
    items (truth: the authors' evaluation), and where veriloop's sound verifier disagrees.

    Args:
        recorded: the folder self_verification_outputs.
        graphs: the folder of the DIMACS graphs the prompts were made from (graph_coloring).

    Returns:
        The judged items, kind by kind in KINDS order and by instance number within a kind,
        and the disagreements in the same order.
    """
    domain = get_domain("coloring")
    loaded: dict[str, Instance] = {}
    items: list[JudgedItem] = []
    disagreements: list[Disagreement] = []
    for kind in KINDS:
        folder = recorded / "color_verification" / "gpt-4" / kind
        responses, evaluations = _read_json(folder / "responses.json"), _read_json(folder / "evaluations.json")
        for index, key in enumerate(sorted(responses, key=lambda k: (len(k), k))):
            where = f"{folder / 'responses.json'}, instance {key}"
            try:
                query, reply = responses[key]["query"], responses[key]["response"]
                truth = evaluations[key]["coloring evaluation"]["correct"]
            except (KeyError, TypeError):
                raise VeriloopError(f"{where}: no query, response or stored evaluation") from None
            if key not in loaded:
                loaded[key] = domain.load_instances(str(graphs / f"instance-{key}.col"), n=1)[0]
            instance = loaded[key]
            candidate = _candidate(query, where)
            items.append(JudgedItem(
                domain="coloring", instance_id=instance.id, index=index, kind=kind, candidate=candidate,
                truth=bool(truth), judge="llm", judged_ok=ACCEPTED in reply, reply=reply,
            ))
            verdict = domain.verify(instance, candidate)
            if verdict.ok != bool(truth):
                disagreements.append(Disagreement(kind, instance.id, bool(truth), verdict.ok,
                                                  _cause(instance, verdict)))
    return items, disagreements


def _cause(instance: Instance, verdict: Any) -> str:
    """Why veriloop's verdict differs from the authors', from the verdict's own errors."""
    touched = {v for edge in instance.data["edges"] for v in edge}
    isolated = set(range(instance.data["n"])) - touched
    missing = {int(e.where) for e in verdict.errors if e.kind == "missing_vertex" and e.where is not None}
    if verdict.errors and all(e.kind == "missing_vertex" for e in verdict.errors) and missing <= isolated:
        return ISOLATED
    return "; ".join(e.message for e in verdict.errors) or "veriloop accepts what the authors' evaluation rejects"


def table2_coloring(score: VerifierScore) -> str:
    """Table 2's colouring row from the recorded runs, beside the paper's."""
    assert score.false_positive_rate is not None and score.false_negative_rate is not None
    ours = (100 * score.accuracy, 100 * score.false_positive_rate, 100 * score.false_negative_rate)
    counts = (f"{score.n - (score.false_positives + score.false_negatives)}/{score.n}",
              f"{score.false_positives}/{score.negatives}", f"{score.false_negatives}/{score.positives}")
    lines = [
        "## Table 2: GPT-4 as verifier of graph colourings (recorded runs)",
        "",
        "| | accuracy | false positive rate | false negative rate |",
        "|---|---:|---:|---:|",
        "| veriloop, from the authors' GPT-4 runs | " + " | ".join(
            f"{value:.1f}% ({count})" for value, count in zip(ours, counts)) + " |",
        "| the paper | " + " | ".join(f"{value:.1f}%" for value in PAPER_TABLE2_COLORING) + " |",
        "",
    ]
    return "\n".join(lines)


def agreement_table(items: list[JudgedItem], disagreements: list[Disagreement]) -> str:
    """veriloop's sound verifier against the authors' stored evaluation, kind by kind, and
    every disagreement with its cause."""
    lines = [
        "## veriloop's colouring verifier against the authors' evaluation",
        "",
        "| candidates | recorded | agree |",
        "|---|---:|---:|",
    ]
    for kind in KINDS:
        n = sum(i.kind == kind for i in items)
        differ = sum(d.kind == kind for d in disagreements)
        lines.append(f"| {kind} | {n} | {n - differ} |")
    lines += ["", "| candidate | instance | authors | veriloop | cause |", "|---|---|---|---|---|"]
    for d in disagreements:
        lines.append(f"| {d.kind} | {d.instance_id} | {'correct' if d.authors else 'wrong'} | "
                     f"{'correct' if d.veriloop else 'wrong'} | {d.cause} |")
    return "\n".join(lines) + "\n"



def reproduce_recorded(recorded: Path, graphs: Path, out_dir: Path) -> Path:
    """Write what the recorded runs give into `out_dir`: table2.md (Table 2's colouring row
    beside the paper's, then veriloop's verifier against the authors' evaluation) and
    reproduction.json (the same figures and every disagreement). Returns table2.md's path."""
    from ..files import write_file
    from ..studies.verification import score_verifier

    if not recorded.is_dir():
        raise VeriloopError(f"--recorded {recorded}: no such folder; give the folder self_verification_outputs")
    items, disagreements = color_verification(recorded, graphs)
    score = score_verifier(items)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = out_dir / "table2.md"
    write_file(table, table2_coloring(score) + "\n" + agreement_table(items, disagreements))
    payload = {
        "recorded": str(recorded),
        "table2": {"coloring": {"veriloop": score.model_dump(mode="json"),
                                "paper": dict(zip(("accuracy", "false_positive_rate", "false_negative_rate"),
                                                  PAPER_TABLE2_COLORING))}},
        "disagreements": [d.__dict__ for d in disagreements],
    }
    write_file(out_dir / "reproduction.json", json.dumps(payload, indent=2) + "\n")
    return table
