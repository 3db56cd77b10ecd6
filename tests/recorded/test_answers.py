"""The answers format (recorded/answers.py): each line an AnswerLine or a one-line Problem
naming file, line and reason; never an exception for what a line holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veriloop.errors import VeriloopError
from veriloop.recorded import answers
from veriloop.recorded.answers import AnswerLine, Problem, json_kind, parse_line, read_answers

# tests/data/recorded/game24.jsonl: the lines the format itself refuses (the others are
# read; whether their instances exist is the importer's question: test_importer).
FORMAT_PROBLEMS = {
    3: "not JSON (Expecting value at column 42)",
    4: "the line is a list, not an object with instance_id and response(s)",
    5: 'no "instance_id"',
    6: 'give "response" (one reply) or "responses" (the attempts in order), exactly one',
    7: '"responses" must be a non-empty list of replies, not an empty list',
    8: '"response" must be a string (the reply) or null, not a number',
    16: '2 "feedback" texts for 1 reply: at most one after each reply',
    21: '"final" must be "last" or "first-accepted", not "best"',
    22: '"messages": message 1 is not an object with "role" and "content" strings',
}


def test_every_line_of_the_game24_file_is_a_line_or_a_problem_naming_file_and_line(game24_file):
    read = list(read_answers(game24_file))
    # Line 13 is blank: not a line at all.
    assert [where for where, _ in read] == [f"{game24_file}:{n}" for n in [*range(1, 13), *range(14, 23)]]
    problems = {int(where.rpartition(":")[2]): line for where, line in read if isinstance(line, Problem)}
    assert {n: p.reason for n, p in problems.items()} == FORMAT_PROBLEMS
    assert all(str(p) == f"{game24_file}:{n}: {p.reason}" for n, p in problems.items())
    lines = {int(where.rpartition(":")[2]): line for where, line in read if isinstance(line, AnswerLine)}
    assert sorted(lines) == [1, 2, 9, 10, 11, 12, 14, 15, 17, 18, 19, 20]
    assert (lines[1].instance_id, lines[1].responses, lines[1].condition, lines[1].model, lines[1].final) == (
        "game24-g1", ["Answer: 1 + 11 + 13 - 1"], "imported", "other-llm", "last")
    # null replies are kept as empty replies; "model": null is the default model.
    assert (lines[14].responses, lines[14].model, lines[14].final) == (
        ["", "Answer: 4 * 6 * 1 * 1", "Answer: 4 + 6 + 1 + 1"], "imported", "first-accepted")
    # Unknown keys ride along, unread.
    assert lines[15].model_extra == {"score": 0.9, "meta": {"run": 3}}
    assert lines[17].feedback == ["That makes 12, not 24.", "Now use only two of the numbers."]
    # A message's keys other than role and content (an API's "name") are dropped.
    assert lines[20].messages == [{"role": "user", "content": "Make 24 from 1 1 2 12."}]


@pytest.mark.parametrize(("raw", "reason"), [
    ({"instance_id": 5, "response": "x"}, '"instance_id" must be a string, not a number'),
    ({"instance_id": " ", "response": "x"}, '"instance_id": must not be blank'),
    ({"instance_id": "a", "responses": "x"}, '"responses" must be a non-empty list of replies, not a string'),
    ({"instance_id": "a", "responses": ["x", ["y"]]}, '"responses" item 2 must be a string (a reply) or null, not a list'),
    ({"instance_id": "a", "response": {"content": "x"}}, '"response" must be a string (the reply) or null, not an object'),
    ({"instance_id": "a", "response": True}, '"response" must be a string (the reply) or null, not true'),
    ({"instance_id": "a", "response": "x", "feedback": "again"}, '"feedback" must be a list, not a string'),
    ({"instance_id": "a", "response": "x", "feedback": [None]}, '"feedback" item 1 must be a string, not null'),
    ({"instance_id": "a", "response": "x", "messages": "hi"}, '"messages" must be a list, not a string'),
    ({"instance_id": "a", "response": "x", "messages": [{"role": "user", "content": "hi"}, "hi"]},
     '"messages": message 2 is not an object with "role" and "content" strings'),
    ({"instance_id": "a", "response": "x", "condition": 3}, '"condition" must be a string, not a number'),
    ({"instance_id": "a", "response": "x", "model": ""}, '"model": must not be blank'),
    ({"instance_id": "a", "responses": ["x", "y"], "feedback": ["1", "2", "3"]},
     '3 "feedback" texts for 2 replies: at most one after each reply'),
    ("a reply", "the line is a string, not an object with instance_id and response(s)"),
    (24, "the line is a number, not an object with instance_id and response(s)"),
    (None, "the line is null, not an object with instance_id and response(s)"),
])
def test_a_malformed_line_is_one_problem_in_our_words(raw, reason):
    assert parse_line("f.jsonl:7", raw) == Problem("f.jsonl:7", reason)


def test_optional_keys_that_are_null_take_their_defaults_and_replies_that_are_null_are_empty():
    line = parse_line("f:1", {"instance_id": "a", "responses": [None, "x"], "condition": None, "model": None,
                              "feedback": None, "messages": None, "final": None})
    assert line == AnswerLine(instance_id="a", responses=["", "x"])
    assert (line.condition, line.model, line.feedback, line.messages, line.final) == (
        "imported", "imported", [], None, "last")
    assert parse_line("f:1", {"instance_id": "a", "response": None}) == AnswerLine(instance_id="a", responses=[""])


def test_a_lone_surrogate_in_a_reply_is_made_storable():
    line = parse_line("f:1", {"instance_id": "a", "response": "Answer: \ud800 4 * 6"})
    assert isinstance(line, AnswerLine)
    assert line.responses == ["Answer: \ufffd 4 * 6"]


def test_json_kind_names_values_in_jsons_words():
    assert [json_kind(v) for v in (None, True, False, 1, 1.5, "s", [], {})] == [
        "null", "true", "false", "a number", "a number", "a string", "a list", "an object"]


def test_byte_order_mark_crlf_and_blank_lines_are_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"instance_id": "a", "response": "x"}).encode() + b"\r\n\r\n"
                     + json.dumps({"instance_id": "b", "response": "y"}).encode())
    read = list(read_answers(path))
    assert [(where, line.instance_id) for where, line in read if isinstance(line, AnswerLine)] == [
        (f"{path}:1", "a"), (f"{path}:3", "b")]


def test_a_line_that_is_not_utf8_is_a_problem_and_the_others_are_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"instance_id": "a", "response": "caf\xe9"}\n{"instance_id": "b", "response": "y"}\n')
    read = list(read_answers(path))
    assert read[0] == (f"{path}:1", Problem(f"{path}:1", "not UTF-8 text (byte 0xe9 at column 38)"))
    assert read[1][1] == AnswerLine(instance_id="b", responses=["y"])


def test_a_file_that_cannot_be_read_is_one_error(tmp_path):
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_text('{"instance_id": "a", "response": "x"}\n', encoding="utf-16")
    with pytest.raises(VeriloopError) as error:
        list(read_answers(utf16))
    assert str(error.value) == f"{utf16} is UTF-16 text; an answers file is JSON lines in UTF-8: save it as UTF-8"
    with pytest.raises(VeriloopError) as error:
        list(read_answers(tmp_path / "missing.jsonl"))
    assert str(error.value) == f"{tmp_path / 'missing.jsonl'}: no such file; give an answers file (JSON lines)"
    with pytest.raises(VeriloopError) as error:
        list(read_answers(tmp_path))
    assert str(error.value) == f"{tmp_path} is a folder; --format answers reads one JSON lines file"


def test_an_empty_file_has_no_lines(tmp_path: Path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    assert list(read_answers(path)) == []


def test_a_line_nested_too_deeply_is_a_problem_not_a_recursion_error(tmp_path: Path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"instance_id": "a", "response": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
                    + json.dumps({"instance_id": "b", "response": "y"}) + "\n")
    [(_, deep), (_, fine)] = list(read_answers(path))
    assert deep == Problem(f"{path}:1", "not JSON (arrays or objects nested too deeply at column 100046)")
    assert fine == AnswerLine(instance_id="b", responses=["y"])


def test_a_device_is_refused_before_a_byte_is_read(tmp_path: Path):
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    with pytest.raises(VeriloopError) as error:
        list(read_answers(zero))
    assert str(error.value) == f"{zero} is not a regular file (a device or a socket); --format answers reads one " \
                               "JSON lines file"
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(VeriloopError) as error:
        list(read_answers(loop))
    assert str(error.value) == f"{loop}: cannot be opened (Too many levels of symbolic links); give an answers " \
                               "file (JSON lines) you can read"


def test_a_file_over_the_cap_is_refused_naming_it(tmp_path: Path):
    path = tmp_path / "big.jsonl"
    with path.open("wb") as handle:
        handle.truncate(answers.MAX_FILE + 1)  # sparse: nothing is written
    with pytest.raises(VeriloopError) as error:
        list(read_answers(path))
    assert str(error.value) == (f"{path} holds more than 1 GiB, the most an answers file may hold: split it (say, one "
                                "file per condition) and import each with its own --out")


def test_a_line_over_the_cap_is_a_problem_and_the_next_line_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(answers, "MAX_LINE", 1 << 20)
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"instance_id": "a", "response": "x" * (3 << 20)}) + "\n"
                    + json.dumps({"instance_id": "b", "response": "y" * 900}) + "\n")
    [(_, long), (_, fine)] = list(read_answers(path))
    assert long == Problem(f"{path}:1", "a line longer than 1 MiB: not read (no recorded answer is that long; check "
                                        "what wrote the file)")
    assert fine == AnswerLine(instance_id="b", responses=["y" * 900])


@pytest.mark.parametrize(("line", "read"), [
    ('{"instance_id": "a\\u0000", "response": "x\\u0000"}', AnswerLine(instance_id="a\0", responses=["x\0"])),
    ('{"instance_id": "a", "response": "\\ud800"}', AnswerLine(instance_id="a", responses=["\ufffd"])),
    ('{"instance_id": "a", "response": NaN}', Problem("F:1", '"response" must be a string (the reply) or null, '
                                                             "not a number")),
    ('{"instance_id": "a", "response": "x", "response": "y"}', AnswerLine(instance_id="a", responses=["y"])),
    ('{"instance_id": "a", "response": "x"}\x00', Problem("F:1", "not JSON (Extra data at column 38)")),
])
def test_hostile_lines_are_read_or_one_problem(tmp_path: Path, line: str, read: AnswerLine | Problem):
    path = tmp_path / "F"
    path.write_text(line + "\n")
    expected = Problem(f"{path}:1", read.reason) if isinstance(read, Problem) else read
    assert [line for _, line in read_answers(path)] == [expected]
