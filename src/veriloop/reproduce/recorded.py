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
- Table A4 (hallucinations in those replies) is counted from the authors' stored evaluation,
  and beside it by the coloring domain's own critique reader; each reply the two count
  otherwise is a `ReadOtherwise` with the convention of the authors' reader behind it
  (REVERSED_EDGE, ...), or "unexplained: ..." when none is, never dropped.
- Nothing is written into the recorded folder; every file of the release is read through
  recorded.selfverification, the one reader of it (its invariants: a file missing, not in
  the authors' layout, not a regular file or larger than MAX_JSON is one VeriloopError).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domains import get_domain
from ..domains.base import Instance
from ..errors import VeriloopError
from ..extras import can_draw
from ..recorded.selfverification import (
    ACCEPTED,
    KINDS,
    answer_keys,
    by_number,
    graph_reader,
    proposed_colouring,
    puzzle_instance,
    read_json,
)
from ..studies.verification import JudgedItem, VerifierScore, studied_domain
from .self_verification import PAPER_TABLE1, PAPER_TABLE2, plot_figure2

# Why veriloop's verifier and the authors' checker judge an answer otherwise: their conventions.
ISOLATED = "isolated vertices left uncoloured: the authors' checker asks a colour only of vertices with an edge"
WORD_COLOURS = ("colours named in words (Red, Blue, ...): the authors' checker compares colours as strings, "
                "veriloop reads numbered colours")
EXTRA_VERTEX = "a colour for a vertex the graph does not have: the authors' checker ignores it, veriloop refuses it"
PROMPT_REPEATED = ("the reply repeats the prompt before its colouring: the authors' checker rejects it, veriloop "
                   "reads the colouring")


@dataclass(frozen=True)
class Disagreement:
    """A recorded candidate veriloop's sound verifier judges otherwise than the authors."""

    kind: str
    instance_id: str
    authors: bool
    veriloop: bool
    cause: str


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
    graph = graph_reader(domain, graphs)
    items: list[JudgedItem] = []
    disagreements: list[Disagreement] = []
    for kind in KINDS:
        folder = recorded / "color_verification" / "gpt-4" / kind
        responses, evaluations = read_json(folder / "responses.json"), read_json(folder / "evaluations.json")
        for index, key in enumerate(by_number(responses)):
            where = f"{folder / 'responses.json'}, instance {key}"
            try:
                query, reply = responses[key]["query"], responses[key]["response"]
                truth = evaluations[key]["coloring evaluation"]["correct"]
            except (KeyError, TypeError):
                raise VeriloopError(f"{where}: no query, response or stored evaluation") from None
            instance = graph(key)
            candidate = proposed_colouring(query, where)
            items.append(JudgedItem(
                domain="coloring", instance_id=instance.id, index=index, kind=kind, candidate=candidate,
                truth=bool(truth), judge="llm", judged_ok=ACCEPTED in reply, reply=reply,
            ))
            verdict = domain.verify(instance, candidate)
            if verdict.ok != bool(truth):
                disagreements.append(Disagreement(kind, instance.id, bool(truth), verdict.ok,
                                                  _cause(instance, verdict, candidate)))
    return items, disagreements


def _cause(instance: Instance, verdict: Any, answer: str) -> str:
    """Why veriloop's verdict of `answer` differs from the authors', read from the verdict's
    own errors: one of the conventions below, else the verdict's messages."""
    if verdict.ok:
        return PROMPT_REPEATED if "is connected to vertex" in answer else "veriloop accepts what the authors reject"
    touched = {v for edge in instance.data["edges"] for v in edge}
    isolated = set(range(instance.data["n"])) - touched
    kinds = {e.kind for e in verdict.errors}
    missing = {int(e.where) for e in verdict.errors if e.kind == "missing_vertex" and e.where is not None}
    if kinds == {"missing_vertex"} and missing <= isolated:
        return ISOLATED
    if kinds == {"malformed"}:
        (error,) = verdict.errors
        if error.where is None:
            return WORD_COLOURS
        if error.where.isdigit() and int(error.where) >= instance.data["n"]:
            return EXTRA_VERTEX
    return "; ".join(e.message for e in verdict.errors)


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
        "| the paper | " + " | ".join(PAPER_TABLE2["coloring"]) + " |",
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



PAPER_TABLE_A4 = {  # kind: (vertex, edge, both, errors, correct), the paper's Table A4 ("none" left out)
    "correct": (29, 72, 7, 0, 100), "ablated": (24, 52, 5, 187, 0), "non-optimal": (18, 65, 3, 0, 0),
    "random": (10, 26, 5, 736, 0), "llm": (26, 41, 6, 240, 18),
}
# Why veriloop's critique reader and the authors' read a reply otherwise: their reader's
# conventions, inferred from their stored counts. It reads the sentences between full
# stops, takes the first number after each word "color" as a colour and the sentence's
# other numbers as the vertices, in order.
REVERSED_EDGE = ("an edge named in the other order than the graph file's (11 and 2 for 'e 2 11'): the authors' "
                 "reader looks the pair up in order and counts it hallucinated, veriloop's reads the graph's edge")
SAME_COLOR_WORD = ("a sentence saying 'same-color': the authors' reader reads nothing in it from that word on, "
                   "veriloop's reads the vertices and colours it names")
MORE_THAN_TWO = ("a sentence naming more than two vertices: the authors' reader takes all its numbers as one edge "
                 "(never the graph's) and its colours in order, not by vertex; veriloop's reads each pair")
NUMBER_AFTER_COLOR = ("a vertex number after the word 'color' ('the same color ... are: Vertex 5'): the authors' "
                      "reader takes it as a colour, veriloop's as the vertex")
SKIPPED_SENTENCE = ("a sentence with 'vert' three times or more in lower case: the authors' reader skips it, "
                    "veriloop's reads it")
_VERTEX_AFTER_COLOR = re.compile(r"color[^0-9]*\bvert", re.IGNORECASE)


@dataclass(frozen=True)
class ReadOtherwise:
    """A critique reply veriloop's reader counts otherwise than the authors' evaluation:
    (a vertex colour hallucinated, an edge hallucinated) by each, and why."""

    kind: str
    instance_id: str
    authors: tuple[bool, bool]
    veriloop: tuple[bool, bool]
    cause: str


@dataclass(frozen=True)
class CritiqueRow:
    """Table A4 for one kind of candidate: GPT-4's replies that hallucinate a vertex colour,
    an edge, or both, as the authors' stored evaluation counts them and as veriloop's
    critique reader (the coloring domain's critique_report) counts them; the erroneous
    edges of the candidates and how many candidates are correct."""

    kind: str
    authors: tuple[int, int, int]
    veriloop: tuple[int, int, int]
    errors: int
    correct: int
    read_otherwise: list[ReadOtherwise]


def critique_table(recorded: Path, graphs: Path, items: list[JudgedItem]) -> list[CritiqueRow]:
    """Table A4 from the recorded verification replies (the items color_verification gives)."""
    domain = get_domain("coloring")
    reader = studied_domain(domain)
    graph = graph_reader(domain, graphs)
    rows = []
    for kind in KINDS:
        evaluations = read_json(recorded / "color_verification" / "gpt-4" / kind / "evaluations.json")
        authors = [0, 0, 0]
        ours = [0, 0, 0]
        errors = correct = 0
        otherwise = []
        for item in (i for i in items if i.kind == kind):
            key = item.instance_id.removeprefix("coloring-instance-")
            stored = evaluations[key]
            theirs = (stored.get("vertex color hallucination", 0) > 0, stored.get("edge hallucination", 0) > 0)
            instance = graph(key)
            report = reader.critique_report(instance, item.candidate, item.reply)
            mine = (report["wrong_vertex_colours"] > 0, report["hallucinated_edges"] > 0)
            for counts, (vertex, edge) in ((authors, theirs), (ours, mine)):
                counts[0] += vertex
                counts[1] += edge
                counts[2] += vertex and edge
            if mine != theirs:
                otherwise.append(ReadOtherwise(kind, item.instance_id, theirs, mine,
                                               _critique_cause(item.reply, instance, theirs, mine)))
            errors += int(stored["coloring evaluation"]["number of errors"])
            correct += item.truth
        rows.append(CritiqueRow(kind, (authors[0], authors[1], authors[2]), (ours[0], ours[1], ours[2]), errors,
                                correct, otherwise))
    return rows


def _as_the_authors_read(sentence: str) -> list[str] | None:
    """The vertices the authors' reader finds in a sentence, by their conventions; None for a
    sentence it reads nothing in (skipped, or cut at 'same-color')."""
    if sentence.count("vert") > 2 or "same-color" in sentence.lower():
        return None
    first, *after_color = re.split("color", sentence, flags=re.IGNORECASE)
    return re.findall(r"\d+", first) + [n for piece in after_color for n in re.findall(r"\d+", piece)[1:]]


def _critique_cause(reply: str, instance: Instance, authors: tuple[bool, bool], ours: tuple[bool, bool]) -> str:
    """Which of the authors' conventions makes their count of `reply` differ from veriloop's,
    checked for the vertex and the edge column apart; the counts themselves when none does."""
    sentences = [s for s in reply.split(".") if s.strip()]
    read = [found for found in map(_as_the_authors_read, sentences) if found is not None]
    edges = {(int(u), int(v)) for u, v in instance.data["edges"]}
    pairs = [(int(n[0]), int(n[1])) for n in read if len(n) == 2]
    reversed_edge = any((v, u) in edges and (u, v) not in edges for u, v in pairs)
    unread = [cause for cause, present in (
        (SAME_COLOR_WORD, any("same-color" in s.lower() for s in sentences)),
        (SKIPPED_SENTENCE, any(s.count("vert") > 2 for s in sentences))) if present]
    causes: list[str] = []
    for column, (theirs, mine) in enumerate(zip(authors, ours)):
        if theirs == mine:
            continue
        if mine:  # the authors' reader did not read what veriloop's counts
            causes += unread
        elif any(len(n) > 2 for n in read):
            causes.append(MORE_THAN_TWO)
        elif column == 1 and reversed_edge:
            causes.append(REVERSED_EDGE)
        elif column == 0 and any(_VERTEX_AFTER_COLOR.search(s) for s in sentences):
            causes.append(NUMBER_AFTER_COLOR)
    if not causes:
        return (f"unexplained: the authors count vertex {authors[0]}, edge {authors[1]}; "
                f"veriloop vertex {ours[0]}, edge {ours[1]}")
    return "; ".join(dict.fromkeys(causes))


def critique_causes(rows: list[CritiqueRow]) -> dict[str, list[str]]:
    """Every reply read otherwise, as `kind/instance`, by cause (most frequent first)."""
    by_cause: dict[str, list[str]] = {}
    for row in rows:
        for r in row.read_otherwise:
            by_cause.setdefault(r.cause, []).append(f"{r.kind}/{r.instance_id}")
    return dict(sorted(by_cause.items(), key=lambda item: -len(item[1])))


def critique_markdown(rows: list[CritiqueRow]) -> str:
    lines = [
        "## Table A4: hallucinations in GPT-4's critiques of colourings (recorded runs)",
        "",
        "Replies that state a vertex colour the candidate does not give, name an edge the graph does not have, "
        "or both: as the authors' evaluation counts them, as veriloop's critique reader counts them, and the paper's. "
        "Errors: the candidates' erroneous edges; correct: candidates that are right.",
        "",
        "| candidates | vertex | edge | both | errors | correct | veriloop's reader: vertex / edge / both | "
        "read otherwise | paper: vertex / edge / both / errors / correct |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        paper = " / ".join(str(v) for v in PAPER_TABLE_A4[r.kind])
        lines.append(f"| {r.kind} | {r.authors[0]} | {r.authors[1]} | {r.authors[2]} | {r.errors} | {r.correct} | "
                     f"{' / '.join(map(str, r.veriloop))} | {len(r.read_otherwise)} | {paper} |")
    lines += ["", "Replies veriloop's reader counts otherwise than the authors' evaluation, by cause (the replies are "
              "listed in reproduction.json, table_a4_read_otherwise):", "", "| cause | replies |", "|---|---:|"]
    lines += [f"| {cause} | {len(replies)} |" for cause, replies in critique_causes(rows).items()]
    if not any(r.read_otherwise for r in rows):
        lines.append("| (none) | 0 |")
    return "\n".join(lines) + "\n"


# Table 1's colouring conditions in the released run: (the paper's column, the folder, how
# the condition's answer is read from its attempts). "first": one answer; "any": a sound
# verifier stops the loop (or picks among the samples) at the first correct one; "last":
# the LLM judge stopped the loop, so its last answer is the answer.
TABLE1_CONDITIONS = (
    ("S.P.", "standard", "first"),
    ("LLM+LLM", "backprompting-llm", "last"),
    ("Sound B.F.", "backprompting-passfail", "any"),
    ("Sound F.E.F.", "backprompting-first", "any"),
    ("Sound A.E.F.", "backprompting-full", "any"),
    ("Sampling k=15", "backprompting-15top1", "any"),
)
TABLE1_GRAPHS = range(1, 101)  # the paper's 100 graphs (the standard run holds 200)


@dataclass(frozen=True)
class Table1Cell:
    """One condition of Table 1 from the recorded answers: how many of the 100 graphs it
    solved by the authors' stored verdicts and by veriloop's verifier, and every recorded
    answer the two judge otherwise."""

    label: str
    authors: int | None  # None: the run has no stored evaluation
    veriloop: int
    n: int
    disagreements: list[Disagreement]
    # By veriloop's verifier, the instances solved had the loop stopped after 1, 2, ...
    # attempts (the paper's Figure 2): a sound verifier's loop or pick by then, LLM+LLM's
    # answer of that round.
    by_attempts: list[int]


def _solved(verdicts: list[bool], rule: str) -> bool:
    if not verdicts:
        return False
    return verdicts[0] if rule == "first" else verdicts[-1] if rule == "last" else any(verdicts)


def _judge(domain: Any) -> Callable[[Instance, str], Any]:
    """`domain.verify`, each (instance, answer) judged once: a recorded loop often repeats an
    answer (a third of the Game of 24 replies are repeats). The verdicts are only read."""
    judged: dict[tuple[str, str], Any] = {}

    def verify(instance: Instance, answer: str) -> Any:
        key = (instance.id, answer)
        if key not in judged:
            judged[key] = domain.verify(instance, answer)
        return judged[key]

    return verify


def _table1(folder_of: Callable[[str], Path], conditions: tuple[tuple[str, str, str], ...],
            keys_of: Callable[[dict[str, Any]], list[str]], instance_of: Callable[[str, dict[str, Any]], Instance],
            domain: Any, cause: Callable[[Instance, Any, str, Any], str]) -> list[Table1Cell]:
    """A Table 1 row from recorded answers: for each (label, folder, rule) condition, the
    instances `keys_of` its responses names, each answer judged by the authors' stored
    verdict and by `domain`'s verifier, disagreements explained by `cause`."""
    cells = []
    verify = _judge(domain)
    for label, folder_name, rule in conditions:
        folder = folder_of(folder_name)
        responses, evaluations = read_json(folder / "responses.json"), read_json(folder / "evaluations.json")
        authors = ours = 0
        disagreements: list[Disagreement] = []
        runs: list[list[bool]] = []
        numbers = keys_of(responses)
        for key in numbers:
            if key not in responses or key not in evaluations:
                raise VeriloopError(f"{folder / 'responses.json'}: instance {key} is not recorded with its evaluation")
            instance = instance_of(key, responses[key])
            keys = answer_keys(responses[key])
            stored = [bool(evaluations[key].get(k)) for k in keys]
            verdicts = [verify(instance, responses[key][k]) for k in keys]
            for k, verdict, theirs in zip(keys, verdicts, stored):
                if verdict.ok != theirs:
                    disagreements.append(Disagreement(label, instance.id, theirs, verdict.ok, cause(
                        instance, verdict, responses[key][k], evaluations[key].get(f"{k} eval"))))
            authors += _solved(stored, rule)
            ours += _solved([v.ok for v in verdicts], rule)
            runs.append([v.ok for v in verdicts])
        longest = max((len(run) for run in runs), default=0)
        by_attempts = [sum(_solved(run[:n] if rule != "last" else run[:min(n, len(run))], rule) for run in runs)
                       for n in range(1, longest + 1)]
        cells.append(Table1Cell(label, authors, ours, len(numbers), disagreements, by_attempts))
    return cells


def color_table1(recorded: Path, graphs: Path) -> list[Table1Cell]:
    """Table 1's colouring row from GPT-4's recorded answers on graphs 1-100, each
    condition scored by the authors' stored verdicts and by veriloop's sound verifier."""
    domain = get_domain("coloring")
    graph = graph_reader(domain, graphs)
    return _table1(lambda name: recorded / "graph_coloring" / "gpt-4" / name, TABLE1_CONDITIONS,
                   lambda responses: [str(n) for n in TABLE1_GRAPHS], lambda key, record: graph(key), domain,
                   lambda instance, verdict, answer, stored: _cause(instance, verdict, answer))


# The same conditions but all errors: a Game of 24 answer has one value to report.
GAME24_CONDITIONS = tuple(condition for condition in TABLE1_CONDITIONS if condition[0] != "Sound A.E.F.")
ANSWER_MARKER = ("the reply ends with a marker ([ANSWER END]) the authors' reader keeps: they count it malformed, "
                 "veriloop reads the expression")
SECOND_TRY = ("the reply drops a first expression and gives another: the authors read the first (malformed), "
              "veriloop the last")


def game24_table1(recorded: Path) -> list[Table1Cell]:
    """Table 1's Game of 24 row from GPT-4's recorded answers (an older run than the
    paper's, on the puzzles ranked 1-100 where the paper's are 901-1000), each condition
    scored by the authors' stored verdicts and by veriloop's verifier."""
    domain = get_domain("game24")

    def puzzle(key: str, record: dict[str, Any]) -> Instance:
        return puzzle_instance(domain, key, str(record.get("query", "")))

    def cause(instance: Instance, verdict: Any, answer: str, stored: Any) -> str:
        return _game24_cause(verdict, answer, stored)

    return _table1(lambda name: recorded / "game24" / "gpt-4" / name, GAME24_CONDITIONS,
                   by_number, puzzle, domain, cause)


GAME24_0613_CONDITIONS = (
    ("Sound B.F.", "backprompting-passfail"),
    ("Sound, earlier answers listed", "backprompting-list-previous"),
    ("Sampling, temperature 1", "backprompting-top-temp1.0"),
)


def game24_0613_table1(recorded: Path) -> list[Table1Cell]:
    """GPT-4-0613's recorded Game of 24 runs (puzzles ranked 1-100; lists of prompts and
    answers, the authors' evaluation a list beside them, none for the binary-feedback run):
    puzzles solved by an answer a sound verifier would stop at, by veriloop's verifier and
    by the authors' verdicts where they stored them."""
    domain = get_domain("game24")
    verify = _judge(domain)
    cells = []
    for label, folder_name in GAME24_0613_CONDITIONS:
        folder = recorded / "game24" / "gpt-4-0613" / folder_name
        responses = read_json(folder / "responses.json")
        evaluations = read_json(folder / "evaluations.json") if (folder / "evaluations.json").exists() else None
        authors = ours = 0
        disagreements: list[Disagreement] = []
        runs: list[list[bool]] = []
        for key in by_number(responses):
            record = responses[key]
            answers, prompts = record.get("responses"), record.get("prompts")
            if not isinstance(answers, list) or not isinstance(prompts, list) or not prompts:
                raise VeriloopError(f"{folder / 'responses.json'}, instance {key}: no lists of prompts and responses")
            instance = puzzle_instance(domain, key, prompts[0])
            verdicts = [verify(instance, str(answer)) for answer in answers]
            runs.append([v.ok for v in verdicts])
            ours += any(v.ok for v in verdicts)
            if evaluations is not None:
                # An evaluation may cover only a run's first answers (two sampling runs here,
                # 32 of 50 and 25 of 42): verdicts are compared where both exist.
                entries = evaluations.get(key, [])
                stored = [bool(e.get("correct")) for e in entries]
                if len(stored) > len(answers):
                    raise VeriloopError(f"{folder / 'evaluations.json'}, instance {key}: {len(stored)} verdicts for "
                                        f"{len(answers)} responses")
                authors += any(stored)
                for answer, verdict, entry in zip(answers, verdicts, entries):
                    if verdict.ok != bool(entry.get("correct")):
                        disagreements.append(Disagreement(label, instance.id, bool(entry.get("correct")), verdict.ok,
                                                          _game24_cause(verdict, str(answer), entry.get("eval"))))
        longest = max((len(run) for run in runs), default=0)
        by_attempts = [sum(any(run[:n]) for run in runs) for n in range(1, longest + 1)]
        cells.append(Table1Cell(label, authors if evaluations is not None else None, ours, len(runs), disagreements,
                                by_attempts))
    return cells


def _game24_cause(verdict: Any, answer: str, stored: Any) -> str:
    if verdict.ok and stored == "malformed" and "[ANSWER END]" in answer:
        return ANSWER_MARKER
    if verdict.ok and stored == "malformed" and len([line for line in answer.splitlines() if line.strip()]) > 1:
        return SECOND_TRY
    return "; ".join(e.message for e in verdict.errors) or "veriloop accepts what the authors reject"


def table1_rows(domain: str, cells: list[Table1Cell], title: str) -> str:
    """A Table 1 row from the recorded runs, beside the paper's."""
    labels = [cell.label for cell in cells]

    def pct(k: int, n: int) -> str:
        return f"{k}%" if n == 100 else f"{100 * k / n:.0f}% ({k}/{n})"

    lines = [
        f"## Table 1: {title}",
        "",
        "| scored by | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
        "| veriloop's verifier | " + " | ".join(pct(c.veriloop, c.n) for c in cells) + " |",
        "| the authors' stored verdicts | " + " | ".join(
            "-" if c.authors is None else pct(c.authors, c.n) for c in cells) + " |",
        "| the paper | " + " | ".join(PAPER_TABLE1.get(domain, {}).get(label, "-") for label in labels) + " |",
        "",
        "Answers veriloop's verifier judges otherwise than the authors' stored verdicts, by cause:",
        "",
        "| condition | answers | cause |",
        "|---|---:|---|",
    ]
    for cell in cells:
        causes: dict[str, int] = {}
        for d in cell.disagreements:
            causes[d.cause] = causes.get(d.cause, 0) + 1
        lines += [f"| {cell.label} | {count} | {cause} |" for cause, count in sorted(causes.items())]
    if not any(cell.disagreements for cell in cells):
        lines.append("| (none) | 0 | |")
    return "\n".join(lines) + "\n"


def reproduce_recorded(recorded: Path, graphs: Path, out_dir: Path) -> list[Path]:
    """Write what the recorded runs give into `out_dir`: table1.md (Table 1's colouring and
    Game of 24 rows, by veriloop's verifier and by the authors' verdicts, beside the
    paper's), figure2.png (accuracy had each loop stopped after n attempts), critique.md
    (Table A4), table2.md
    (Table 2's colouring row beside the paper's, then veriloop's verifier against the
    authors' evaluation) and reproduction.json (the same figures and every disagreement).
    Returns the tables' paths."""
    from ..files import write_file
    from ..studies.verification import score_verifier

    if not recorded.is_dir():
        raise VeriloopError(f"--recorded {recorded}: no such folder; give the folder self_verification_outputs "
                            "(`veriloop data path self-verification-outputs` prints where it is installed)")
    # (key in reproduction.json, the paper's Table 1 row it sits beside, title, cells)
    rows = [
        ("coloring", "coloring", "GPT-4 on graph colouring, graphs 1-100 (recorded runs)", color_table1(recorded, graphs)),
        ("game24", "game24", "GPT-4 on Game of 24 (an older recorded run, on the puzzles ranked 1-100, the easiest: "
         "the paper's are ranked 901-1000)", game24_table1(recorded)),
        ("game24-gpt-4-0613", "game24", "GPT-4-0613 on Game of 24, puzzles ranked 1-100 (recorded runs; a sound "
         "verifier's loop or pick solves a puzzle when any answer is right)", game24_0613_table1(recorded)),
    ]
    items, disagreements = color_verification(recorded, graphs)
    score = score_verifier(items)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = [out_dir / "table1.md", out_dir / "table2.md"]
    write_file(tables[0], "\n".join(table1_rows(paper, cells, title) for _, paper, title, cells in rows))
    write_file(tables[1], table2_coloring(score) + "\n" + agreement_table(items, disagreements))
    critiques = critique_table(recorded, graphs, items)
    write_file(out_dir / "critique.md", critique_markdown(critiques))
    curves = {key: {c.label: [k / c.n for k in c.by_attempts] for c in cells if len(c.by_attempts) > 1}
              for key, _, _, cells in rows}
    if can_draw("figure2.png"):
        plot_figure2(out_dir / "figure2.png", curves, "GPT-4, the authors' recorded runs")
    payload = {
        "recorded": str(recorded),
        "table1": {key: {c.label: {"veriloop": c.veriloop, "authors": c.authors, "n": c.n,
                                   "paper": PAPER_TABLE1[paper].get(c.label), "by_attempts": c.by_attempts,
                                   "disagreements": [d.__dict__ for d in c.disagreements]}
                         for c in cells} for key, paper, _, cells in rows},
        "table2": {"coloring": {"veriloop": score.model_dump(mode="json"),
                                "paper": dict(zip(("accuracy", "false_positive_rate", "false_negative_rate"),
                                                  PAPER_TABLE2["coloring"]))}},
        "disagreements": [d.__dict__ for d in disagreements],
        "table_a4": {r.kind: {"authors": dict(zip(("vertex", "edge", "both"), r.authors)),
                              "veriloop": dict(zip(("vertex", "edge", "both"), r.veriloop)), "errors": r.errors,
                              "correct": r.correct, "paper": dict(zip(("vertex", "edge", "both", "errors", "correct"),
                                                                      PAPER_TABLE_A4[r.kind])),
                              "read_otherwise": [{"instance_id": o.instance_id,
                                                  "authors": dict(zip(("vertex", "edge"), o.authors)),
                                                  "veriloop": dict(zip(("vertex", "edge"), o.veriloop)),
                                                  "cause": o.cause} for o in r.read_otherwise]}
                      for r in critiques},
        "table_a4_read_otherwise": critique_causes(critiques),
    }
    write_file(out_dir / "reproduction.json", json.dumps(payload, indent=2) + "\n")
    return tables
