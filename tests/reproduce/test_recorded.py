"""The self-verification paper's Tables 1 and 2 colouring rows from the authors' released
GPT-4 runs (reproduce/recorded.py), on the shared data, with no model call."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import assert_one_line_error, the_error, veriloop

from veriloop.domains import get_domain
from veriloop.reproduce.recorded import (
    ANSWER_MARKER,
    EXTRA_VERTEX,
    ISOLATED,
    KINDS,
    MORE_THAN_TWO,
    NUMBER_AFTER_COLOR,
    PROMPT_REPEATED,
    REVERSED_EDGE,
    SAME_COLOR_WORD,
    SECOND_TRY,
    SKIPPED_SENTENCE,
    WORD_COLOURS,
    _critique_cause,
    color_table1,
    color_verification,
    critique_causes,
    critique_table,
    game24_0613_table1,
    game24_table1,
)
from veriloop.studies.verification import score_verifier

# The "correct" candidates that leave a vertex without edges uncoloured: the authors count
# them correct, veriloop's verifier asks a colour of every vertex of the graph.
UNCOLOURED_ISOLATED = [14, 29, 44, 49, 50, 76, 82, 91, 93]


@pytest.fixture(scope="module")
def judged(shared_data):
    return color_verification(shared_data / "self_verification_outputs", shared_data / "graph_coloring")


def test_table_2_colouring_row_is_the_papers_exactly(judged):
    items, _ = judged
    score = score_verifier(items)
    assert (score.n, score.n - score.false_positives - score.false_negatives) == (500, 362)
    assert (score.false_positives, score.negatives, score.false_negatives, score.positives) == (25, 382, 113, 118)
    assert (round(100 * score.accuracy, 1), round(100 * score.false_positive_rate, 1),
            round(100 * score.false_negative_rate, 1)) == (72.4, 6.5, 95.8)
    assert [sum(i.kind == kind for i in items) for kind in KINDS] == [100] * 5
    # GPT-4 accepted 2 correct colourings, and 15 of its own earlier answers (18 of them right).
    assert [(sum(i.judged_ok for i in items if i.kind == k), sum(i.truth for i in items if i.kind == k))
            for k in KINDS] == [(2, 100), (5, 0), (5, 0), (3, 0), (15, 18)]


def test_table_a4_from_the_authors_evaluation_is_the_papers_and_veriloops_reader_is_beside_it(judged, shared_data):
    items, _ = judged
    rows = critique_table(shared_data / "self_verification_outputs", shared_data / "graph_coloring", items)
    # The paper's vertex / edge / both / errors / correct columns ("none" is defined otherwise there).
    assert [(r.kind, *r.authors, r.errors, r.correct) for r in rows] == [
        ("correct", 29, 72, 7, 0, 100), ("ablated", 24, 52, 5, 187, 0), ("non-optimal", 18, 65, 3, 0, 0),
        ("random", 10, 26, 5, 736, 0), ("llm", 26, 41, 6, 240, 18),
    ]
    # veriloop's critique reader finds fewer hallucinated edges; 19 of the 500 replies it reads otherwise.
    assert [r.veriloop for r in rows] == [(27, 70, 2), (25, 51, 5), (18, 63, 1), (10, 22, 4), (25, 38, 2)]
    assert [len(r.read_otherwise) for r in rows] == [6, 2, 2, 4, 5]


def test_every_critique_read_otherwise_is_a_convention_of_the_authors_reader(judged, shared_data):
    items, _ = judged
    rows = critique_table(shared_data / "self_verification_outputs", shared_data / "graph_coloring", items)

    def replies(kind: str, *keys: int) -> list[str]:
        return [f"{kind}/coloring-instance-{k}" for k in keys]

    assert critique_causes(rows) == {
        REVERSED_EDGE: replies("correct", 28, 34, 48) + replies("ablated", 15) + replies("non-optimal", 45, 70)
        + replies("random", 23, 39, 51, 61) + replies("llm", 13, 33),
        MORE_THAN_TWO: replies("correct", 45) + replies("llm", 36, 57),
        SAME_COLOR_WORD: replies("correct", 30) + replies("ablated", 85),
        NUMBER_AFTER_COLOR: replies("correct", 74),
        SKIPPED_SENTENCE: replies("llm", 59),
    }
    # (vertex, edge) as the authors count them and as veriloop does, per cause: a reversed edge is
    # one the authors call hallucinated; in an unread sentence veriloop finds what they did not.
    directions = {(r.cause, r.authors, r.veriloop) for row in rows for r in row.read_otherwise}
    assert directions == {
        (REVERSED_EDGE, (True, True), (True, False)), (REVERSED_EDGE, (False, True), (False, False)),
        (MORE_THAN_TWO, (True, True), (False, True)), (MORE_THAN_TWO, (True, True), (True, False)),
        (MORE_THAN_TWO, (True, True), (False, False)),
        (SAME_COLOR_WORD, (False, False), (False, True)), (SAME_COLOR_WORD, (False, False), (True, False)),
        (NUMBER_AFTER_COLOR, (True, True), (False, True)), (SKIPPED_SENTENCE, (False, False), (False, True)),
    }


def test_a_critique_read_otherwise_for_no_convention_of_theirs_says_so():
    graph = get_domain("coloring").parse_instance({"graph": "e 2 11\ne 0 3"})
    assert _critique_cause("Vertices 11 and 2 share an edge.", graph, (False, True), (False, False)) == REVERSED_EDGE
    # The same pair in the file's order explains nothing: the counts are given instead.
    assert _critique_cause("Vertices 2 and 11 share an edge.", graph, (False, True), (False, False)) == (
        "unexplained: the authors count vertex False, edge True; veriloop vertex False, edge False")
    assert _critique_cause("Same-color vertices 0 and 1 share an edge. Vertex 3 is Color 1.", graph,
                           (False, False), (True, True)) == SAME_COLOR_WORD


def test_every_disagreement_of_the_verifier_with_the_authors_is_an_uncoloured_isolated_vertex(judged):
    _, disagreements = judged
    assert [(d.kind, d.instance_id, d.authors, d.veriloop, d.cause) for d in disagreements] == [
        ("correct", f"coloring-instance-{k}", True, False, ISOLATED) for k in UNCOLOURED_ISOLATED
    ]


def test_table_1_colouring_row_by_veriloops_verifier_and_by_the_authors_verdicts(shared_data):
    cells = color_table1(shared_data / "self_verification_outputs", shared_data / "graph_coloring")
    assert [(c.label, c.veriloop, c.authors, c.n) for c in cells] == [
        ("S.P.", 16, 16, 100), ("LLM+LLM", 1, 1, 100), ("Sound B.F.", 38, 36, 100), ("Sound F.E.F.", 38, 38, 100),
        ("Sound A.E.F.", 35, 35, 100), ("Sampling k=15", 39, 40, 100),
    ]
    # Figure 2's lines: solved had each loop stopped after n attempts (LLM+LLM: the answer of round n).
    by_label = {c.label: c.by_attempts for c in cells}
    assert by_label["Sound B.F."] == [13, 15, 19, 21, 23, 26, 27, 27, 30, 30, 32, 32, 35, 35, 38, 38]
    assert by_label["LLM+LLM"] == [16, 7, 5, 5, 2, 3, 4, 0, 4, 3, 2, 1, 2, 3, 0, 1]
    assert (by_label["S.P."], len(by_label["Sampling k=15"]), by_label["Sampling k=15"][-1]) == ([16], 15, 39)
    # Every recorded answer the two checkers judge otherwise, with the convention behind it.
    causes = {c.label: sorted((d.cause, d.instance_id, d.authors) for d in c.disagreements) for c in cells}
    assert causes == {
        "S.P.": [], "Sound F.E.F.": [], "Sound A.E.F.": [],
        "LLM+LLM": sorted([(WORD_COLOURS, "coloring-instance-14", True), (WORD_COLOURS, "coloring-instance-46", True)]
                          + [(WORD_COLOURS, "coloring-instance-84", True)] * 4),
        "Sound B.F.": [(PROMPT_REPEATED, "coloring-instance-7", False), (PROMPT_REPEATED, "coloring-instance-8", False)],
        "Sampling k=15": sorted([(EXTRA_VERTEX, "coloring-instance-82", True)] * 7
                                + [(WORD_COLOURS, f"coloring-instance-{k}", True) for k in (7, 28, 35, 42, 59, 71)]
                                + [(WORD_COLOURS, "coloring-instance-82", True)] * 3),
    }


def test_table_1_game24_row_from_the_older_recorded_run(shared_data):
    cells = game24_table1(shared_data / "self_verification_outputs")
    assert [(c.label, c.veriloop, c.authors, c.n) for c in cells] == [
        ("S.P.", 17, 17, 100), ("LLM+LLM", 36, 36, 97), ("Sound B.F.", 61, 61, 100), ("Sound F.E.F.", 71, 71, 100),
        ("Sampling k=15", 53, 50, 100),
    ]
    # The only disagreements: samples ending in "[ANSWER END]", malformed to the authors' reader.
    assert [(c.label, len(c.disagreements), {d.cause for d in c.disagreements}) for c in cells if c.disagreements] == [
        ("Sampling k=15", 19, {ANSWER_MARKER})
    ]
    assert all(d.veriloop and not d.authors for d in cells[-1].disagreements)


def test_the_gpt_4_0613_game24_runs_by_veriloops_verifier_and_the_authors_verdicts(shared_data):
    cells = game24_0613_table1(shared_data / "self_verification_outputs")
    # The binary-feedback run has no stored evaluation; the others agree but for one reply.
    assert [(c.label, c.veriloop, c.authors, c.n, len(c.by_attempts)) for c in cells] == [
        ("Sound B.F.", 61, None, 100, 25), ("Sound, earlier answers listed", 65, 65, 100, 25),
        ("Sampling, temperature 1", 64, 64, 100, 50),
    ]
    assert [(d.kind, d.instance_id, d.authors, d.veriloop, d.cause) for c in cells for d in c.disagreements] == [
        ("Sound, earlier answers listed", "game24-1-1-3-6", False, True, SECOND_TRY)
    ]


def test_the_command_writes_the_table_beside_the_papers(tmp_path, shared_data):
    proc = veriloop("reproduce", "self-verification", "--recorded", str(shared_data / "self_verification_outputs"),
                    "--data-root", str(shared_data), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    table = (tmp_path / "out" / "table2.md").read_text()
    assert "| veriloop, from the authors' GPT-4 runs | 72.4% (362/500) | 6.5% (25/382) | 95.8% (113/118) |" in table
    assert "| the paper | 72.4% | 6.5% | 95.8% |" in table
    assert table.count(ISOLATED) == len(UNCOLOURED_ISOLATED)
    table1 = (tmp_path / "out" / "table1.md").read_text()
    assert "| veriloop's verifier | 16% | 1% | 38% | 38% | 35% | 39% |" in table1
    assert "| the authors' stored verdicts | 16% | 1% | 36% | 38% | 35% | 40% |" in table1
    assert "| the paper | 16% | 2% | 38% | 37% | 34% | 40% |" in table1
    assert "| veriloop's verifier | 17% | 37% (36/97) | 61% | 71% | 53% |" in table1
    payload = json.loads((tmp_path / "out" / "reproduction.json").read_text())
    assert payload["table1"]["game24"]["Sampling k=15"]["authors"] == 50
    assert payload["table1"]["game24"]["Sound F.E.F."]["by_attempts"][:3] == [11, 28, 38]
    assert (tmp_path / "out" / "figure2.png").stat().st_size > 10_000
    assert "| random | 10 | 26 | 5 | 736 | 0 | 10 / 22 / 4 | 4 | 10 / 26 / 5 / 736 / 0 |" in (
        tmp_path / "out" / "critique.md").read_text()
    assert payload["table_a4"]["llm"]["authors"] == {"vertex": 26, "edge": 41, "both": 6}
    assert f"| {REVERSED_EDGE} | 12 |" in (tmp_path / "out" / "critique.md").read_text()
    assert {cause: len(replies) for cause, replies in payload["table_a4_read_otherwise"].items()} == {
        REVERSED_EDGE: 12, MORE_THAN_TWO: 3, SAME_COLOR_WORD: 2, NUMBER_AFTER_COLOR: 1, SKIPPED_SENTENCE: 1}
    assert payload["table_a4"]["llm"]["read_otherwise"][-1] == {
        "instance_id": "coloring-instance-59", "authors": {"vertex": False, "edge": False},
        "veriloop": {"vertex": False, "edge": True}, "cause": SKIPPED_SENTENCE}
    assert payload["table2"]["coloring"]["paper"] == {"accuracy": "72.4%", "false_positive_rate": "6.5%",
                                                      "false_negative_rate": "95.8%"}
    assert payload["table2"]["coloring"]["veriloop"]["false_positives"] == 25
    assert len(payload["disagreements"]) == len(UNCOLOURED_ISOLATED)
    assert proc.stdout.splitlines()[-1] == f"0 backend calls; tables in {tmp_path / 'out'}/"


@pytest.mark.parametrize("option", [("--model", "smollm2-135m"), ("--seed", "0"), ("--cache", "calls.sqlite"),
                                    ("--executor", "ray"), ("--dry-run",)])
def test_a_model_option_with_recorded_runs_is_one_line(tmp_path, shared_data, option):
    proc = veriloop("reproduce", "self-verification", "--recorded", str(shared_data / "self_verification_outputs"),
                    *option, "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, f"{option[0]} goes with a model run; --recorded makes no model call")
    assert not (tmp_path / "out").exists()


def test_a_missing_or_broken_recorded_folder_is_one_line_naming_it(tmp_path, shared_data):
    missing = veriloop("reproduce", "self-verification", "--recorded", str(tmp_path / "nowhere"),
                       "--data-root", str(shared_data), "--out", str(tmp_path / "out"))
    assert the_error(missing) == (f"error: --recorded {tmp_path / 'nowhere'}: no such folder; give the folder "
                                  "self_verification_outputs (`veriloop data path self-verification-outputs` prints "
                                  "where it is installed)")
    copy = tmp_path / "copy"
    shutil.copytree(shared_data / "self_verification_outputs" / "color_verification", copy / "color_verification")
    lost = copy / "graph_coloring" / "gpt-4" / "standard" / "responses.json"
    proc = veriloop("reproduce", "self-verification", "--recorded", str(copy), "--data-root", str(shared_data),
                    "--out", str(tmp_path / "out"))
    assert the_error(proc) == f"error: {lost}: not found; --recorded names the folder self_verification_outputs"
    for part in ("graph_coloring", "game24"):
        shutil.copytree(shared_data / "self_verification_outputs" / part, copy / part)
    broken = copy / "color_verification" / "gpt-4" / "random" / "responses.json"
    broken.write_text(broken.read_text()[:500])
    proc = veriloop("reproduce", "self-verification", "--recorded", str(copy), "--data-root", str(shared_data),
                    "--out", str(tmp_path / "out"))
    assert the_error(proc).startswith(f"error: {broken}: not the authors' JSON (")
