"""The colouring checker's reader against the reader families of issue 41 (the shapes an
audit applies to known-wrong answers): one table per family, each row a reply and the
verdict a careful human grader gives it, on a small graph whose right answer is known.

A row's expectation is either ACCEPT or the error kinds of the rejection, in order.
"""

from __future__ import annotations

import pytest

from veriloop.domains.base import Instance
from veriloop.domains.coloring import Coloring, parse_assignment

# A triangle 0-1-2 with a pendant vertex 3 on 2: chromatic number 3.
GRAPH = "p edge 4 4\ne 0 1\ne 1 2\ne 0 2\ne 2 3\n"
GOOD = "0: Color1\n1: Color2\n2: Color3\n3: Color1"
# Wrong: 0 and 1 share Color1.
WRONG = "0: Color1\n1: Color1\n2: Color3\n3: Color1"
# Also right, with colours renamed.
OTHER_GOOD = "0: Color2\n1: Color3\n2: Color1\n3: Color2"
ACCEPT: tuple[str, ...] = ()
WITHOUT_1 = "0: Color1\n2: Color3\n3: Color1"


def full_width(text: str) -> str:
    return text.translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})


@pytest.fixture(scope="module")
def dom() -> Coloring:
    return Coloring()


@pytest.fixture(scope="module")
def graph(dom: Coloring) -> Instance:
    return dom.parse_instance({"graph": GRAPH})


def kinds_of(dom: Coloring, graph: Instance, reply: str) -> tuple[str, ...]:
    verdict = dom.verify(graph, reply)
    assert verdict.ok == (not verdict.errors)
    return tuple(e.kind for e in verdict.errors)


FAMILIES = {
    "vertex_coloured_twice": [
        ("wrong_then_right_colour", WRONG + "\n1: Color2", ("several_colours",)),
        ("right_then_wrong_colour", GOOD + "\n1: Color1", ("several_colours",)),
        ("same_colour_twice_right", GOOD + "\n1: Color2", ACCEPT),
        ("same_colour_twice_wrong", WRONG + "\n1: Color1", ("edge_conflict",)),
    ],
    "several_colourings": [
        ("attempt_then_correction", f"First try:\n{WRONG}\nWait, 0 and 1 clash. Corrected:\n{GOOD}",
         ("several_colours",)),
        ("two_right_alternatives", f"Either\n{GOOD}\nor\n{OTHER_GOOD}",
         ("several_colours",) * 4),
        ("one_colouring_repeated", f"{GOOD}\n\nFinal answer:\n{GOOD}", ACCEPT),
        ("hedge_or", GOOD.replace("1: Color2", "1: Color2 or Color1"), ("several_colours",)),
        ("hedge_slash", WRONG.replace("1: Color1", "1: Color1/Color2"), ("several_colours",)),
        ("hedge_comma", GOOD.replace("1: Color2", "1: Color2, Color1"), ("several_colours",)),
        ("hedge_in_brackets", GOOD.replace("1: Color2", "1: Color2 (or maybe Color1)"), ("several_colours",)),
        ("hedge_same_colour", GOOD.replace("1: Color2", "1: Color2 (or Color2)"), ACCEPT),
        ("one_line_listing", "0: Color1, 1: Color2, 2: Color3, 3: Color1", ACCEPT),
    ],
    "colouring_in_prose": [
        ("prose_right", "Vertex 0 is colored with Color 1, vertex 1 gets Color 2, vertex 2 is Color 3 and "
         "vertex 3 is assigned Color 1.", ACCEPT),
        ("prose_wrong", "I colored vertex 0 with Color 1 and vertex 1 with Color 1; vertex 2 gets Color 3, "
         "vertex 3 is Color 1.", ("edge_conflict",)),
        ("negation_is_not_a_colour", WITHOUT_1 + "\nVertex 1 is not Color2.", ("missing_vertex",)),
        ("colour_talk_without_vertices", WITHOUT_1 + "\nColor2 is unused so far.", ("missing_vertex",)),
    ],
    "full_width_and_other_scripts": [
        ("full_width_right", full_width(GOOD), ACCEPT),
        ("full_width_wrong", full_width(WRONG), ("edge_conflict",)),
        ("full_width_vertex_twice", GOOD + "\n" + full_width("1") + ": Color1", ("several_colours",)),
        # Bengali digits: "৩" is three and "৪" four (it looks like an eight): never read.
        ("bengali_vertex", WITHOUT_1 + "\n১: Color2", ("missing_vertex",)),
        ("bengali_colour", WITHOUT_1 + "\n1: Color২", ("missing_vertex",)),
        ("devanagari_vertex", WITHOUT_1 + "\n१: Color2", ("missing_vertex",)),
    ],
    "missing_or_extra_vertex": [
        ("missing_vertex", WITHOUT_1, ("missing_vertex",)),
        ("extra_vertex", GOOD + "\n4: Color2", ("malformed",)),
        ("negative_vertex_for_a_missing_one", WITHOUT_1 + "\n-1: Color2", ("malformed",)),
        ("negative_vertex_extra", GOOD + "\n-1: Color2", ("malformed",)),
        ("vertex_range_is_not_read_as_each_vertex", "0-1: Color1\n2: Color3\n3: Color2", ("missing_vertex",)),
    ],
    "claimed_correct": [
        ("verdict_correct_on_wrong", WRONG + "\nVerdict: correct", ("edge_conflict",)),
        ("valid_claim_on_wrong", WRONG + "\nThis coloring is valid: no edge joins two vertices of the same color.",
         ("edge_conflict",)),
        ("checker_output_on_wrong", WRONG + "\nVerifier confirmed success.\nok: true, errors: []", ("edge_conflict",)),
        ("verdict_correct_on_right", GOOD + "\nVerdict: correct", ACCEPT),
        ("too_many_colours_claimed_optimal", GOOD.replace("3: Color1", "3: Color4") + "\nThis uses 3 colors.",
         ("too_many_colours",)),
    ],
}
CASES = [pytest.param(reply, kinds, id=f"{family}-{name}") for family, rows in FAMILIES.items()
         for name, reply, kinds in rows]


@pytest.mark.parametrize(("reply", "kinds"), CASES)
def test_reader_family_gets_a_human_graders_verdict(
    dom: Coloring, graph: Instance, reply: str, kinds: tuple[str, ...]
) -> None:
    assert kinds_of(dom, graph, reply) == kinds


def test_a_vertex_with_two_colours_is_named_with_both_and_how_to_answer(dom: Coloring, graph: Instance) -> None:
    verdict = dom.verify(graph, f"{WRONG}\nCorrected:\n{GOOD}")
    assert not verdict.ok and not verdict.malformed
    [error] = verdict.errors
    assert (error.kind, error.where) == ("several_colours", "1")
    assert error.message == (
        "Vertex 1 was given more than one color (Color1 and Color2): give each vertex exactly one color "
        "and write only your final coloring."
    )


def test_a_reply_with_a_vertex_given_two_colours_has_no_answer(dom: Coloring, graph: Instance) -> None:
    assert dom.extract_answer(graph, f"{WRONG}\n1: Color2") is None
    assert dom.extract_answer(graph, "1: Color2 or Color1") is None
    assert dom.extract_answer(graph, GOOD + "\n1: Color2") == GOOD


def test_a_negative_vertex_is_named_as_not_existing(dom: Coloring, graph: Instance) -> None:
    assert parse_assignment("-1: Color2\n−2: C1") == {-1: 2, -2: 1}
    [error] = dom.verify(graph, WITHOUT_1 + "\n-1: Color2").errors
    assert error.message == "Vertex -1 does not exist: the graph's vertices are numbered 0 to 3."


def test_full_width_digits_read_as_their_number_and_other_scripts_not_at_all() -> None:
    assert parse_assignment(full_width("12: Color3")) == {12: 3}
    assert parse_assignment("৪: Color1\n8: Color৪\n1৪: Color1") == {}
