"""`veriloop import --format self-verification` (recorded/selfverification.py) on the
authors' released GPT-4 runs in ../shared/data/self_verification_outputs: each condition
in the column of the veriloop strategy that runs it, with the figures of the reproduction
(tests/reproduce/test_recorded.py) and of the authors' README. Each source is imported
once per module (the colouring runs, 1609 lines, take about 3 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_one_line_error, read_trajectories, veriloop

from veriloop.errors import VeriloopError
from veriloop.recorded.selfverification import (
    ACCEPTED,
    KINDS,
    answer_keys,
    condition_name,
    model_folders,
    proposed_colouring,
)
from veriloop.view import data

BINARY, FIRST, ALL = (f"backprompt:feedback={f},max_rounds=16,temperature=0,verifier=sound"
                      for f in ("binary", "first", "all"))
LLM = "backprompt:feedback=llm,max_rounds=16,temperature=0,verifier=llm"
SAMPLING = "sampling:k=15,temperature=1,verifier=sound"
ONE_WORKER = True  # conftest.py: each source is imported once, not once per worker


def import_run(folder: Path, source: Path, domain: str) -> tuple[object, Path]:
    out = folder / "run"
    return veriloop("import", str(source), "--domain", domain, "--format", "self-verification", "--out", str(out)), out


def counts(out: Path) -> dict[str, tuple[int, int]]:
    summary = json.loads((out / "summary.json").read_text())
    return {name: (s["correct"], s["n"]) for name, s in summary["strategies"].items()}


@pytest.fixture(scope="module")
def coloring(shared_data, tmp_path_factory):
    return import_run(tmp_path_factory.mktemp("coloring"), shared_data / "self_verification_outputs", "coloring")


@pytest.fixture(scope="module")
def coloring_ts(coloring):
    return read_trajectories(coloring[1])


@pytest.fixture(scope="module")
def game24_gpt4(shared_data, tmp_path_factory):
    return import_run(tmp_path_factory.mktemp("game24"), shared_data / "self_verification_outputs", "game24")


@pytest.fixture(scope="module")
def game24_0613(shared_data, tmp_path_factory):
    return import_run(tmp_path_factory.mktemp("game24-0613"),
                      shared_data / "self_verification_outputs" / "game24" / "gpt-4-0613", "game24")


def test_colouring_conditions_have_the_reproductions_figures(coloring, coloring_ts, shared_data):
    proc, out = coloring
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == [
        f"1609 of 1609 recorded lines imported; 421 replies not readable as answers; records in {out}/",
        f"see every trajectory: veriloop view {out}",
    ]
    # Ten unreadable replies on the terminal, every one in import.json.
    lines = proc.stderr.splitlines()
    assert len(lines) == 11
    assert lines[-1] == f"... and 411 more replies not readable as answers, each listed in {out / 'import.json'}"
    report = json.loads((out / "import.json").read_text())
    assert (report["lines"], report["imported"], report["skipped"], len(report["unreadable_replies"])) == (
        1609, 1609, [], 421)
    assert counts(out) == {
        "standard:temperature=0": (25, 200),
        BINARY: (38, 100), FIRST: (38, 100), ALL: (35, 100), LLM: (1, 100), SAMPLING: (39, 100),
        "sampling:k=5,temperature=0.5,verifier=sound": (25, 100),
        "sampling:k=5,temperature=1,verifier=sound": (28, 100),
        "sampling:k=5,temperature=1.5,verifier=sound": (27, 100),
        "authors:backprompting-zero": (4, 10), "authors:backprompting-evil": (32, 99),
        "candidates:correct": (91, 100), "candidates:ablated": (0, 100), "candidates:non-optimal": (0, 100),
        "candidates:random": (0, 100), "candidates:llm": (18, 100),
    }
    ts = coloring_ts
    # Table 1's standard prompting is on graphs 1-100: the paper's 16%.
    standard = [t for t in ts if t.strategy == "standard:temperature=0"]
    assert sum(t.correct for t in standard if int(t.instance_id.rpartition("-")[2]) <= 100) == 16
    config = json.loads((out / "config.json").read_text())
    # The graphs read (found beside the outputs) are the run's data.
    assert (config["format"], config["model_name"], config["domain"], config["data"]) == (
        "self-verification", "gpt-4", "coloring", str((shared_data / "graph_coloring").resolve()))


def test_a_recorded_loop_is_its_trajectory_reply_for_reply(coloring_ts, shared_data):
    folder = shared_data / "self_verification_outputs" / "graph_coloring" / "gpt-4" / "backprompting-first"
    record = json.loads((folder / "responses.json").read_text())["3"]
    stored = json.loads((folder / "evaluations.json").read_text())["3"]
    keys = answer_keys(record)
    assert keys == ["response", "response 0", "response 1", "response 2", "response 3", "response 4"]
    [t] = [t for t in coloring_ts if t.strategy == FIRST and t.instance_id == "coloring-instance-3"]
    assert [r.text for r in t.rounds] == [record[k] for k in keys]
    assert [c.response for c in t.calls] == [record[k] for k in keys]
    assert t.calls[0].messages == [{"role": "user", "content": record["query"]}]
    # Each later call is the conversation so far: the answer, then the `backprompt i` sent after it.
    for i, call in enumerate(t.calls[1:]):
        assert call.messages[-2:] == [{"role": "assistant", "content": record[keys[i]]},
                                      {"role": "user", "content": record[f"backprompt {i}"]}]
        assert len(call.messages) == 1 + 2 * (i + 1)
    # veriloop's verifier agrees with the authors' stored verdicts; the loop stopped at the first acceptance.
    assert [r.verdict.ok for r in t.rounds] == [stored[k] for k in keys] == [False] * 5 + [True]
    assert (t.correct, t.stop_reason, t.model, t.final_text) == (True, "verifier_accepted", "gpt-4",
                                                                 record["response 4"])


def test_candidates_carry_gpt4s_judgement_as_a_verify_call(coloring_ts, shared_data):
    candidates = [t for t in coloring_ts if t.strategy.startswith("candidates:")]
    assert len(candidates) == 500
    assert {tuple((c.role, c.round, c.model) for c in t.calls) for t in candidates} == {
        (("generate", 1, None), ("verify", 1, "gpt-4"))}
    # GPT-4 accepted (said "Verifier confirmed success") as many of each kind as Table 2 counts.
    accepted = {kind: sum(ACCEPTED in t.calls[1].response for t in candidates if t.strategy == f"candidates:{kind}")
                for kind in KINDS}
    assert accepted == {"correct": 2, "ablated": 5, "non-optimal": 5, "random": 3, "llm": 15}
    folder = shared_data / "self_verification_outputs" / "color_verification" / "gpt-4" / "llm"
    record = json.loads((folder / "responses.json").read_text())["1"]
    [t] = [t for t in candidates if t.strategy == "candidates:llm" and t.instance_id == "coloring-instance-1"]
    assert t.calls[1].messages == [{"role": "user", "content": record["query"]}]
    assert t.calls[1].response == record["response"]
    assert t.rounds[0].text == t.calls[0].response == proposed_colouring(record["query"], "here")


def test_the_viewer_reads_the_import_with_the_summarys_figures(coloring):
    _, out = coloring
    payload = data.build_payload(data.load([out]))
    summary = json.loads((out / "summary.json").read_text())["strategies"]
    assert [(g["strategy"], g["n"], g["correct"], g["calls"], g["prompt_tokens"], g["stop_reasons"])
            for g in payload["groups"]] == [
        (name, s["n"], s["correct"], s["model_calls"], 0, s["stop_reasons"]) for name, s in summary.items()]
    assert len(payload["T"]) == 1609


def test_game24_gpt4_conditions(game24_gpt4):
    proc, out = game24_gpt4
    assert proc.returncode == 0, proc.stderr
    assert counts(out) == {
        "standard:temperature=0": (17, 100), BINARY: (61, 100), FIRST: (71, 100), LLM: (36, 97), SAMPLING: (53, 100),
    }
    assert proc.stdout.splitlines()[-2] == (
        f"497 of 497 recorded lines imported; 59 replies not readable as answers; records in {out}/")


def test_game24_gpt4_0613_lists_format(game24_0613, shared_data):
    proc, out = game24_0613
    assert proc.returncode == 0, proc.stderr
    binary = "backprompt:feedback=binary,max_rounds=25,temperature=0,verifier=sound"
    assert counts(out) == {binary: (61, 100), "authors:backprompting-list-previous": (65, 100),
                           "authors:backprompting-top-temp1.0": (64, 100)}
    folder = shared_data / "self_verification_outputs" / "game24" / "gpt-4-0613" / "backprompting-passfail"
    record = json.loads((folder / "responses.json").read_text())["1"]
    prompts, replies = record["prompts"], record["responses"]
    assert (len(prompts), len(replies)) == (16, 15)
    [t] = [t for t in read_trajectories(out) if t.strategy == binary and t.instance_id == "game24-1-1-4-6"]
    assert [r.text for r in t.rounds] == replies
    assert t.calls[0].messages == [{"role": "user", "content": prompts[0]}]
    # The feedback is what each cumulative prompt adds after the previous prompt and its reply.
    sent = [call.messages[-1]["content"] for call in t.calls[1:]]
    assert sent == [prompts[i + 1][len(prompts[i]) + len(replies[i]):] for i in range(14)]
    assert sent[0] == ("[ANSWER END]\nFeedback: This is not correct. Using the numbers 1 1 4 6 please provide a "
                       "correct expression that evaluates to 24. Write your answer first. At the end of your "
                       "answer, write [ANSWER END]\nAnswer: ")
    assert (t.correct, t.stop_reason, t.model, json.loads((out / "config.json").read_text())["model_name"]) == (
        True, "verifier_accepted", "gpt-4-0613", "gpt-4-0613")


def test_condition_folders_are_named_by_the_strategy_that_runs_them():
    assert condition_name("standard", "gpt-4") == ("standard:temperature=0", "last")
    assert condition_name("backprompting-passfail", "gpt-4") == (BINARY, "first-accepted")
    assert condition_name("backprompting-passfail", "gpt-4-0613") == (
        "backprompt:feedback=binary,max_rounds=25,temperature=0,verifier=sound", "first-accepted")
    assert condition_name("backprompting-llm", "gpt-4") == (LLM, "last")
    assert condition_name("backprompting-15top1", "gpt-4") == (SAMPLING, "first-accepted")
    assert condition_name("backprompting-evil", "gpt-4") == ("authors:backprompting-evil", "first-accepted")
    with pytest.raises(VeriloopError) as error:
        condition_name("backprompting-new", "gpt-4")
    assert str(error.value).startswith("condition folder 'backprompting-new' is not one of the authors' runs "
                                       "(standard, backprompting-passfail, ")


def test_sources_that_hold_no_run_are_one_error(tmp_path):
    with pytest.raises(VeriloopError) as error:
        model_folders(tmp_path, "blocksworld")
    assert str(error.value) == "--format self-verification holds coloring and game24 runs, not 'blocksworld'"
    with pytest.raises(VeriloopError) as error:
        model_folders(tmp_path / "missing", "coloring")
    assert str(error.value) == (f"{tmp_path / 'missing'}: no such folder; give self_verification_outputs or one "
                                "of its folders")
    with pytest.raises(VeriloopError) as error:
        model_folders(tmp_path, "game24")
    assert str(error.value) == (f"{tmp_path} holds none of the authors' game24 runs (game24/gpt-4); give "
                                "self_verification_outputs or one of its folders")
    (tmp_path / "graph_coloring" / "gpt-4").mkdir(parents=True)
    assert model_folders(tmp_path, "coloring") == [tmp_path / "graph_coloring" / "gpt-4"]
    assert model_folders(tmp_path / "graph_coloring", "coloring") == [tmp_path / "graph_coloring" / "gpt-4"]
    assert model_folders(tmp_path / "graph_coloring" / "gpt-4", "coloring") == [tmp_path / "graph_coloring" / "gpt-4"]


PUZZLE_PROMPT = "Use numbers and basic arithmetic operations to obtain 24.\nInput: 1 1 4 6\n"


def hostile_source(root: Path, records: object = None) -> Path:
    """A self_verification_outputs holding one Game of 24 condition (standard), its
    responses.json the JSON of `records` (None: left for the test to make)."""
    folder = root / "game24" / "gpt-4" / "standard"
    folder.mkdir(parents=True)
    if records is not None:
        (folder / "responses.json").write_text(json.dumps(records))
    return folder / "responses.json"


def import_hostile(root: Path) -> object:
    return veriloop("import", str(root), "--domain", "game24", "--format", "self-verification",
                    "--out", str(root / "run"))


@pytest.mark.parametrize(("make", "reason"), [
    (lambda p: p.mkdir(), "a folder, not a file; give self_verification_outputs as the authors released it"),
    (lambda p: p.symlink_to(p), "cannot be read (Too many levels of symbolic links); give self_verification_outputs as "
                                "the authors released it"),
    (lambda p: p.symlink_to("/dev/zero"), "a device, pipe or socket, not a file; give self_verification_outputs"),
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "not the authors' JSON (arrays or objects nested too "
                                                            "deeply: line 1 column 100000 (char 99999))"),
], ids=["folder", "symlink-loop", "dev-zero", "deep-nesting"])
def test_a_hostile_responses_file_is_one_error_naming_it(tmp_path, make, reason):
    responses = hostile_source(tmp_path)
    make(responses)
    assert_one_line_error(import_hostile(tmp_path), f"error: {responses}: {reason}")
    assert not (tmp_path / "run").exists()


def test_a_responses_file_over_the_cap_is_refused_before_it_is_read(tmp_path):
    responses = hostile_source(tmp_path)
    with responses.open("wb") as handle:
        handle.truncate((256 << 20) + 1)  # sparse
    assert_one_line_error(import_hostile(tmp_path), f"error: {responses}: more than 256 MiB; give "
                          "self_verification_outputs as the authors released it (their files hold at most 4 MiB)")


def test_keys_and_values_outside_the_authors_layout_are_one_line_each(tmp_path):
    responses = hostile_source(tmp_path, {
        "1": {"query": PUZZLE_PROMPT, "response": "(1 + 1) * ...", "response ²": "ignored", "response ": "ignored",
              "response 0": "Answer: 6 / (1 - 1 / 4)"},
        "2": {"prompts": 5, "responses": ["x"]},
        "3": {"prompts": [PUZZLE_PROMPT, {"deep": [[1]]}], "responses": ["x"]},
        "4": {"query": ["not", "a", "string"], "response": "x"},
        "5": {"query": PUZZLE_PROMPT, "response": 24},
        "6": [1, 2],
        "../7": {"query": PUZZLE_PROMPT, "response": "x"},
    })
    proc = import_hostile(tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"{responses}, instance 2: \"prompts\" is a number, not a list of strings",
        f"{responses}, instance 3: \"prompts\" is a list holding an object, not a list of strings",
        f"{responses}, instance 4: \"query\" is a list, not a string",
        f"{responses}, instance 5: \"response\" is a number, not a string",
        f"{responses}, instance 6: not an object of prompts and responses",
        f"{responses}, instance ../7: the key '../7' is not an instance number (the authors key records 1, 2, ...)",
        f"{responses}, instance 1: reply 1 is not a game24 answer (`(1 + 1) *` is not a well-formed arithmetic "
        "expression.): recorded as a wrong answer",
    ]
    [t] = read_trajectories(tmp_path / "run")
    assert [r.text for r in t.rounds] == ["(1 + 1) * ...", "Answer: 6 / (1 - 1 / 4)"]
