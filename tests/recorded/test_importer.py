"""import_lines and trajectory_of (recorded/importer.py): recorded answers as an ordinary
run directory, each attempt a round checked by the domain's verifier and scored by ground
truth, on the hand-written answers files of tests/data/recorded/.

Game of 24's generated puzzles: g1 = 1 1 11 13, g2 = 1 1 2 12, g3 = 1 1 3 8, g4 = 1 1 4 6,
g5 = 1 1 12 12. The right answers below are the domain's own (its solver's reference,
checked by its verifier in the tests).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import read_trajectories

from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.recorded.answers import AnswerLine, Problem, read_answers
from veriloop.recorded.importer import REPORT, import_lines, trajectory_of
from veriloop.stats.metrics import summarise

OWN = " (the game24 domain's own instances; give --data FILE)"
FEEDBACK = ["That makes 12, not 24.", "Now use only two of the numbers."]
ATTEMPTS = ["Answer: 4 + 6 + 1 + 1", "Answer: 4 * 6 * 1 * 1", "Answer: 4 * 6"]


def config_of(source: Path) -> dict[str, object]:
    return {"imported_from": str(source), "format": "answers"}


def import_file(source: Path, game24, out: Path):
    domain, instances = game24
    return import_lines(read_answers(source), domain, instances.get, out, config_of(source), data_hint=OWN)


@pytest.fixture
def imported(tmp_path, game24_file, game24):
    return import_file(game24_file, game24, tmp_path / "run"), tmp_path / "run"


def test_the_domains_references_are_the_right_answers_used_here(game24):
    domain, instances = game24
    assert [instances[f"game24-g{k}"].data["numbers"] for k in range(1, 6)] == [
        [1, 1, 11, 13], [1, 1, 2, 12], [1, 1, 3, 8], [1, 1, 4, 6], [1, 1, 12, 12]]
    for id_, right in [("game24-g1", "1 + 11 + 13 - 1"), ("game24-g4", "4 * 6 * 1 * 1"),
                       ("game24-g5", "12 + 12 * 1 * 1"), ("game24-g2", "2 * 12 * 1 * 1")]:
        assert domain.score(instances[id_], f"Answer: {right}") is True
        assert domain.verify(instances[id_], f"Answer: {right}").ok is True
    assert instances["game24-g4"].reference == "1 + 4 * 6 - 1"


def test_each_line_is_imported_skipped_or_noted_in_one_line(imported, game24_file):
    result, out = imported
    at = f"{game24_file}:"
    assert (result.lines, result.imported, len(read_trajectories(out))) == (21, 9, 9)
    assert [str(p) for p in result.skipped] == [
        f"{at}3: not JSON (Expecting value at column 42)",
        f"{at}4: the line is a list, not an object with instance_id and response(s)",
        f'{at}5: no "instance_id"',
        f'{at}6: give "response" (one reply) or "responses" (the attempts in order), exactly one',
        f'{at}7: "responses" must be a non-empty list of replies, not an empty list',
        f'{at}8: "response" must be a string (the reply) or null, not a number',
        f"{at}9: instance 'game24-g9999' is not in the data{OWN}",
        f"{at}10: instance 'g3' is not in the data; did you mean 'game24-g3'? (ids are the domain's, as "
        "`veriloop run --data` names the instances)",
        f"{at}11: a second line for instance 'game24-g1' under condition 'imported' (the first is {at}1, by model "
        "'other-llm': give each model its own condition)",
        f'{at}16: 2 "feedback" texts for 1 reply: at most one after each reply',
        f'{at}21: "final" must be "last" or "first-accepted", not "best"',
        f'{at}22: "messages": message 1 is not an object with "role" and "content" strings',
    ]
    # A reply the domain cannot read is imported, as a wrong answer, with a note.
    assert [str(p) for p in result.unreadable] == [
        f"{at}12: the reply is not a game24 answer (No arithmetic expression was found; end the reply with a line "
        "`Answer: <expression>`.): recorded as a wrong answer",
        f"{at}14: reply 1 is empty: recorded as a wrong answer",
    ]
    assert json.loads((out / REPORT).read_text()) == {
        "lines": 21, "imported": 9, "trajectories": 9, "skipped": [str(p) for p in result.skipped],
        "unreadable_replies": [str(p) for p in result.unreadable],
    }


def test_the_trajectories_rounds_verdicts_answers_and_stop_reasons(imported):
    _, out = imported
    rows = [(t.strategy, t.instance_id, t.model, [r.verdict.ok for r in t.rounds], [r.correct for r in t.rounds],
             t.correct, t.final_answer, t.stop_reason) for t in read_trajectories(out)]
    assert rows == [
        ("imported", "game24-g1", "other-llm", [True], [True], True, "1 + 11 + 13 - 1", "recorded"),
        ("imported", "game24-g2", "imported", [False], [False], False, "(1 + 1) * 12", "recorded"),
        ("imported", "game24-g3", "imported", [False], [False], False, None, "recorded"),
        # first-accepted: the answer is round 2, the first the verifier accepts; round 3 is kept.
        ("sampling", "game24-g4", "imported", [False, True, False], [False, True, False], True, "4 * 6 * 1 * 1",
         "verifier_accepted"),
        ("imported", "game24-g5", "imported", [True], [True], True, "12 + 12 * 1 * 1", "recorded"),
        # final "last": the system answered with its third attempt, whatever came before.
        ("backprompt", "game24-g4", "imported", [False, True, False], [False, True, False], False, "4 * 6",
         "recorded"),
        ("backprompt-stopped", "game24-g4", "imported", [False, True, False], [False, True, False], True,
         "4 * 6 * 1 * 1", "verifier_accepted"),
        # first-accepted with nothing accepted: the last attempt, out of rounds.
        ("sampling", "game24-g5", "imported", [False, False], [False, False], False, "12 * 1 * 1", "max_rounds"),
        ("sampling", "game24-g2", "imported", [True], [True], True, "2 * 12 * 1 * 1", "recorded"),
    ]
    ts = read_trajectories(out)
    # Unreadable replies are malformed verdicts (the null reply, and "I give up.").
    assert [(t.instance_id, r.round) for t in ts for r in t.rounds if r.verdict.malformed] == [
        ("game24-g3", 1), ("game24-g4", 1)]
    assert ts[3].rounds[0].text == ""
    assert ts[1].rounds[0].verdict.errors[0].message == (
        "The expression uses 1, 1, 12, but the puzzle's numbers are 1, 1, 2, 12; missing: 2. Use each puzzle "
        "number exactly once.")
    assert {t.final_text for t in ts[5:7]} == {"Answer: 4 * 6", "Answer: 4 * 6 * 1 * 1"}
    assert all(t.seed == 0 and t.seconds == 0.0 and t.domain == "game24" for t in ts)


def test_calls_carry_the_conversation_with_feedback_and_the_base_prompt_without(imported, game24):
    domain, instances = game24
    _, out = imported
    ts = read_trajectories(out)
    base = domain.prompt(instances["game24-g4"])
    assert [m["role"] for m in base] == ["system", "user"]
    # With feedback the history grows: each earlier reply, then the feedback sent after it.
    loop = ts[5]
    assert [c.messages for c in loop.calls] == [
        base,
        [*base, {"role": "assistant", "content": ATTEMPTS[0]}, {"role": "user", "content": FEEDBACK[0]}],
        [*base, {"role": "assistant", "content": ATTEMPTS[0]}, {"role": "user", "content": FEEDBACK[0]},
         {"role": "assistant", "content": ATTEMPTS[1]}, {"role": "user", "content": FEEDBACK[1]}],
    ]
    assert [(c.role, c.round, c.sample_index, c.response) for c in loop.calls] == [
        ("generate", 1, 0, ATTEMPTS[0]), ("generate", 2, 0, ATTEMPTS[1]), ("generate", 3, 0, ATTEMPTS[2])]
    # Without feedback each attempt is a fresh sample of the base prompt.
    samples = ts[3]
    assert [(c.round, c.sample_index, c.messages, c.response) for c in samples.calls] == [
        (1, 0, base, ""), (2, 1, base, "Answer: 4 * 6 * 1 * 1"), (3, 2, base, "Answer: 4 + 6 + 1 + 1")]
    # Recorded messages replace the domain's prompt.
    assert [c.messages for c in ts[8].calls] == [[{"role": "user", "content": "Make 24 from 1 1 2 12."}]]
    # Recorded calls cost this machine nothing and came from no cache.
    calls = [c for t in ts for c in t.calls]
    assert len(calls) == 16
    assert {(c.finish_reason, c.prompt_tokens, c.completion_tokens, c.seconds, c.cached, c.model) for c in calls} == {
        ("recorded", 0, 0, 0.0, False, None)}


def test_summary_and_config_are_a_runs(imported, game24_file, game24):
    _, instances = game24
    _, out = imported
    summary = json.loads((out / "summary.json").read_text())
    assert summary["instances"] == [f"game24-g{k}" for k in range(1, 6)]
    assert (summary["seed"], summary["backend_calls_this_run"], summary["wall_seconds_this_run"]) == (0, 0, 0.0)
    rows = {name: (s["n"], s["correct"], s["mean_rounds"], s["model_calls"], s["prompt_tokens"],
                   s["completion_tokens"], s["stop_reasons"]) for name, s in summary["strategies"].items()}
    assert rows == {
        "imported": (4, 2, 1.0, 4, 0, 0, {"recorded": 4}),
        "sampling": (3, 2, 2.0, 6, 0, 0, {"verifier_accepted": 1, "max_rounds": 1, "recorded": 1}),
        "backprompt": (1, 0, 3.0, 3, 0, 0, {"recorded": 1}),
        "backprompt-stopped": (1, 1, 3.0, 3, 0, 0, {"verifier_accepted": 1}),
    }
    ts = read_trajectories(out)
    for name, s in summary["strategies"].items():
        assert s == summarise(name, [t for t in ts if t.strategy == name]).model_dump(mode="json",
                                                                                       exclude={"strategy"})
    # The instances themselves, those the trajectories name: rescore judges against them.
    assert (out / "instances.jsonl").read_text().splitlines() == [
        instances[f"game24-g{k}"].model_dump_json() for k in range(1, 6)]
    assert json.loads((out / "config.json").read_text()) == {
        "imported_from": str(game24_file), "format": "answers",
        "model_identity": f"recorded in {game24_file}", "domain": "game24", "seed": 0,
    }


def test_final_first_accepted_and_last_on_one_line(game24):
    domain, instances = game24
    line = AnswerLine(instance_id="game24-g4", responses=ATTEMPTS, feedback=FEEDBACK[:1])
    last = trajectory_of(domain, instances["game24-g4"], line)
    first = trajectory_of(domain, instances["game24-g4"], line.model_copy(update={"final": "first-accepted"}))
    assert (last.final_text, last.correct, last.stop_reason, last.n_rounds) == ("Answer: 4 * 6", False, "recorded", 3)
    assert (first.final_text, first.correct, first.stop_reason, first.n_rounds) == (
        "Answer: 4 * 6 * 1 * 1", True, "verifier_accepted", 3)
    # One feedback text for three attempts: only the second attempt was sent it.
    assert [len(c.messages) for c in last.calls] == [2, 4, 4]
    assert last.calls[2].messages == last.calls[1].messages


def test_importing_the_same_source_again_replaces_its_trajectories(game24_file, game24, tmp_path):
    source = tmp_path / "answers.jsonl"
    shutil.copy(game24_file, source)
    out = tmp_path / "run"
    import_file(source, game24, out)
    before = (out / "trajectories.jsonl").read_text()
    again = import_file(source, game24, out)
    assert (again.imported, (out / "trajectories.jsonl").read_text()) == (9, before)
    # The source edited (its first line dropped): what it holds now, not what it held.
    source.write_text("".join(game24_file.read_text().splitlines(keepends=True)[1:]))
    result = import_file(source, game24, out)
    ts = read_trajectories(out)
    assert (result.imported, len(ts)) == (9, 9)  # the second answer for g1 (line 11) is its first now
    assert [(t.strategy, t.instance_id, t.final_answer) for t in ts[:3]] == [
        ("imported", "game24-g2", "(1 + 1) * 12"), ("imported", "game24-g1", "13 + 11"), ("imported", "game24-g3", None)]


def test_a_directory_imported_from_another_source_is_refused(imported, game24_file, game24, tmp_path):
    _, out = imported
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"instance_id": "game24-g1", "response": "Answer: 1 + 11 + 13 - 1"}) + "\n")
    before = (out / "trajectories.jsonl").read_text()
    with pytest.raises(VeriloopError) as error:
        import_file(other, game24, out)
    assert str(error.value) == (f"{out} holds answers imported from {game24_file}, not {other}; choose another "
                                f"--out (importing {game24_file} again replaces them)")
    assert (out / "trajectories.jsonl").read_text() == before
    # The same source read otherwise is refused as a run with other settings is.
    domain, instances = game24
    with pytest.raises(VeriloopError) as error:
        import_lines(read_answers(game24_file), domain, instances.get, out, {**config_of(game24_file),
                                                                          "format": "inspect"})
    assert str(error.value).startswith(f"{out} holds a run made with format of the imported answers answers, not "
                                       "inspect: ")


def test_a_directory_holding_other_runs_is_refused(game24_file, game24, tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    (made / "config.json").write_text(json.dumps({"model_name": "smollm2-135m", "domain": "game24", "seed": 0}))
    (made / "trajectories.jsonl").write_text("")
    with pytest.raises(VeriloopError) as error:
        import_file(game24_file, game24, made)
    assert str(error.value) == f"{made} holds a run veriloop made, which an import would replace; choose another --out"
    # A folder of runs (or an experiment's): an import on top would hide them from `veriloop view`.
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "trajectories.jsonl").write_text("")
    with pytest.raises(VeriloopError) as error:
        import_file(game24_file, game24, tmp_path / "runs")
    assert str(error.value) == (f"{tmp_path / 'runs'} holds runs ({tmp_path / 'runs' / 'a' / 'trajectories.jsonl'}) "
                                "that an import there would hide from `veriloop view`; choose another --out")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [".veriloop.lock", "a"]


def test_nothing_importable_is_one_error_and_writes_nothing(game24, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text('{"instance_id": "nope", "response": "Answer: 4 * 6"}\n[1]\n')
    with pytest.raises(VeriloopError) as error:
        import_file(source, game24, tmp_path / "out")
    assert str(error.value) == (f"nothing to import: 2 line(s) read, none imported: {source}:1: instance 'nope' "
                                f"is not in the data{OWN}")
    assert not (tmp_path / "out").exists()


def test_a_second_line_of_the_same_model_is_skipped_without_the_hint(game24_file, game24, tmp_path):
    domain, instances = game24
    lines = [(f"x:{n}", AnswerLine(instance_id="game24-g1", responses=[f"Answer: {n}"])) for n in (1, 2)]
    result = import_lines(lines, domain, instances.get, tmp_path / "out", config_of(game24_file))
    assert [str(p) for p in result.skipped] == [
        "x:2: a second line for instance 'game24-g1' under condition 'imported' (the first is x:1)"]
    assert [t.final_text for t in read_trajectories(tmp_path / "out")] == ["Answer: 1"]


def test_an_amend_adds_to_each_trajectory_before_it_is_written(game24_file, game24, tmp_path):
    domain, instances = game24
    lines = [("x:1", AnswerLine(instance_id="game24-g1", responses=["Answer: 1 + 11 + 13 - 1"])),
             ("x:2", Problem("x:2", "why"))]
    result = import_lines(lines, domain, instances.get, tmp_path / "out", config_of(game24_file),
                          amend=lambda t: setattr(t, "seconds", 2.5))
    assert (result.lines, result.imported, [str(p) for p in result.skipped]) == (2, 1, ["x:2: why"])
    assert [t.seconds for t in read_trajectories(tmp_path / "out")] == [2.5]


def test_blocksworld_answers_by_planbench_instance_names(shared_data, blocksworld_file, tmp_path):
    domain = get_domain("blocksworld")
    data = shared_data / "planbench" / "blocksworld"
    instances = {i.id: i for i in domain.load_instances(str(data))}
    result = import_lines(read_answers(blocksworld_file), domain, instances.get, tmp_path / "run",
                          config_of(blocksworld_file), data_hint=f" ({data})")
    at = f"{blocksworld_file}:"
    assert [str(p) for p in result.skipped] == [
        f"{at}2: instance 'instance-2' is not in the data; did you mean 'blocksworld-instance-2'? (ids are the "
        "domain's, as `veriloop run --data` names the instances)",
        f"{at}5: instance 'blocksworld-instance-999' is not in the data ({data})",
    ]
    assert [str(p) for p in result.unreadable] == [
        f"{at}4: the reply is not a blocksworld answer (No plan was found. Write one action per line, like `stack "
        "the red block on top of the blue block`, then [PLAN END].): recorded as a wrong answer"]
    ts = read_trajectories(tmp_path / "run")
    assert [(t.strategy, t.instance_id, t.model, [r.verdict.ok for r in t.rounds], t.correct, t.stop_reason)
            for t in ts] == [
        ("imported", "blocksworld-instance-2", "planner-llm", [True], True, "recorded"),
        ("backprompt", "blocksworld-instance-3", "planner-llm", [False, True], True, "verifier_accepted"),
        ("imported", "blocksworld-instance-4", "planner-llm", [False], False, "recorded"),
    ]
    assert [e.message for e in ts[1].rounds[0].verdict.errors] == [
        "Step 2 cannot be carried out:\nstack the blue block on top of the red block\nIt needs this, which does "
        "not hold at that point:\nthe red block is clear",
        "After the last step this goal condition does not hold:\nthe red block is on top of the orange block",
    ]
    assert ts[0].final_answer == ("unstack the yellow block from on top of the orange block\nput down the yellow "
                                  "block\npick up the orange block\nstack the orange block on top of the red block")
    assert ts[1].calls[1].messages[-2:] == [
        {"role": "assistant", "content": ts[1].rounds[0].text},
        {"role": "user", "content": "Step 2 cannot be carried out: the red block is not clear."}]
