"""`veriloop import` on the command line: what it prints, its exit status (0: every line
imported, 1: some skipped, 2: none, or a one-line error), the directories it refuses, and
`veriloop view` on what it wrote. The answers file is tests/data/recorded/game24.jsonl
(its lines are pinned one by one in tests/recorded/test_importer.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import TEST_DATA, assert_one_line_error, read_trajectories, veriloop

from veriloop.view import data

GAME24 = TEST_DATA / "recorded" / "game24.jsonl"
RIGHT = {"instance_id": "game24-g1", "response": "Answer: 1 + 11 + 13 - 1"}


def write_lines(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def embedded_payload(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="veriloop-data">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("import") / "run"
    return veriloop("import", str(GAME24), "--domain", "game24", "--out", str(out)), out


def test_some_lines_skipped_exits_1_and_lists_each_in_one_line(imported):
    proc, out = imported
    assert proc.returncode == 1, proc.stderr
    # Lines not imported first, then replies imported as wrong answers, each in one line and in
    # import.json (whose lines test_importer pins); nothing else.
    report = json.loads((out / "import.json").read_text())
    assert (len(report["skipped"]), len(report["unreadable_replies"])) == (12, 2)
    assert proc.stderr.splitlines() == report["skipped"] + report["unreadable_replies"]
    assert proc.stderr.splitlines()[0] == f"{GAME24}:3: not JSON (Expecting value at column 42)"
    lines = proc.stdout.splitlines()
    assert lines[0] == f"imported from {GAME24} (answers, game24)"
    rows = [[cell.strip() for cell in line.split("│")[1:4]] for line in lines if line.startswith("│")]
    assert rows == [["imported", "2/4 = 50%", "15%-85%"], ["sampling", "2/3 = 67%", "21%-94%"],
                    ["backprompt", "0/1 = 0%", "0%-79%"], ["backprompt-stopped", "1/1 = 100%", "21%-100%"]]
    assert lines[-2:] == [
        f"9 of 21 recorded lines imported, 12 skipped (listed above); 2 replies not readable as answers; "
        f"records in {out}/",
        f"see every trajectory: veriloop view {out}",
    ]


def test_every_line_imported_exits_0(tmp_path):
    source = write_lines(tmp_path / "a.jsonl", RIGHT, {"instance_id": "game24-g2", "response": "I give up."})
    proc = veriloop("import", str(source), "--domain", "game24", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    # A reply the domain cannot read is imported (a wrong answer): noted, not a skipped line.
    assert proc.stderr.splitlines() == [
        f"{source}:2: the reply is not a game24 answer (No arithmetic expression was found; end the reply with a "
        "line `Answer: <expression>`.): recorded as a wrong answer"]
    assert proc.stdout.splitlines()[-2] == (
        f"2 of 2 recorded lines imported; 1 reply not readable as an answer; records in {tmp_path / 'run'}/")
    assert [(t.instance_id, t.correct) for t in read_trajectories(tmp_path / "run")] == [
        ("game24-g1", True), ("game24-g2", False)]


def test_the_default_directory_is_named_by_source_and_domain(tmp_path):
    source = write_lines(tmp_path / "my answers.jsonl", RIGHT)
    proc = veriloop("import", str(source), "--domain", "game24", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = Path("runs") / "import-my_answers-game24"
    assert proc.stdout.splitlines()[-1] == f"see every trajectory: veriloop view {out}"
    assert [t.instance_id for t in read_trajectories(tmp_path / out)] == ["game24-g1"]


def test_nothing_imported_exits_2_in_one_line(tmp_path):
    source = write_lines(tmp_path / "bad.jsonl", "[1, 2]", {"instance_id": "game24-g0", "response": "24"})
    proc = veriloop("import", str(source), "--domain", "game24", "--out", str(tmp_path / "run"))
    assert_one_line_error(proc)
    assert proc.stderr.strip() == (f"error: nothing to import: 2 line(s) read, none imported: {source}:1: the line is "
                                   "a list, not an object with instance_id and response(s)")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--format", "bogus"], "error: --format 'bogus' is not one of answers, self-verification, inspect"),
    (["--domain", "nodomain"], "error: unknown domain 'nodomain'; choose one of: game24, "),
])
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    source = write_lines(tmp_path / "a.jsonl", RIGHT)
    options = ["--domain", "game24", *args] if args[0] != "--domain" else args
    proc = veriloop("import", str(source), *options, "--out", str(tmp_path / "run"))
    assert_one_line_error(proc)
    assert proc.stderr.strip().startswith(message)


def test_a_source_that_is_not_an_answers_file_is_a_one_line_error(tmp_path):
    proc = veriloop("import", str(tmp_path / "missing.jsonl"), "--domain", "game24", "--out", str(tmp_path / "run"))
    assert_one_line_error(proc)
    assert proc.stderr.strip() == f"error: {tmp_path / 'missing.jsonl'}: no such file; give an answers file (JSON lines)"
    proc = veriloop("import", str(tmp_path), "--domain", "game24", "--out", str(tmp_path / "run"))
    assert proc.stderr.strip() == f"error: {tmp_path} is a folder; --format answers reads one JSON lines file"
    proc = veriloop("import", str(tmp_path), "--domain", "game24", "--format", "self-verification")
    assert_one_line_error(proc)
    assert proc.stderr.strip() == (f"error: {tmp_path} holds none of the authors' game24 runs (game24/gpt-4); give "
                                   "self_verification_outputs or one of its folders")


def test_reimporting_the_same_source_replaces_and_another_source_is_refused(imported, tmp_path):
    _, out = imported
    before = (out / "trajectories.jsonl").read_text()
    again = veriloop("import", str(GAME24), "--domain", "game24", "--out", str(out))
    assert again.returncode == 1, again.stderr
    assert (out / "trajectories.jsonl").read_text() == before
    assert len(read_trajectories(out)) == 9
    other = write_lines(tmp_path / "other.jsonl", RIGHT)
    proc = veriloop("import", str(other), "--domain", "game24", "--out", str(out))
    assert_one_line_error(proc)
    assert proc.stderr.strip() == (f"error: {out} holds answers imported from {GAME24}, not {other}; choose "
                                   f"another --out (importing {GAME24} again replaces them)")
    assert (out / "trajectories.jsonl").read_text() == before


def test_an_import_and_a_run_never_share_a_directory(instant_server, tmp_path):
    run = tmp_path / "run"
    made = veriloop("run", *instant_server, "--domain", "game24", "-n", "1", "-s", "standard", "--out", str(run),
                    home=tmp_path / "home")
    assert made.returncode == 0, made.stderr
    proc = veriloop("import", str(write_lines(tmp_path / "a.jsonl", RIGHT)), "--domain", "game24", "--out", str(run))
    assert_one_line_error(proc)
    assert proc.stderr.strip() == (f"error: {run} holds a run veriloop made, which an import would replace; choose "
                                   "another --out")
    # And the other way round: a run would add its trajectories to the import's.
    imported = tmp_path / "imported"
    assert veriloop("import", str(tmp_path / "a.jsonl"), "--domain", "game24", "--out", str(imported)).returncode == 0
    proc = veriloop("run", *instant_server, "--domain", "game24", "-n", "1", "-s", "standard", "--out", str(imported),
                    home=tmp_path / "home")
    assert_one_line_error(proc, f"{imported} holds a run made with model recorded in {tmp_path / 'a.jsonl'}, not "
                                "openai/scripted")
    assert [t.strategy for t in read_trajectories(imported)] == ["imported"]


def test_view_writes_the_report_of_an_import_with_its_summarys_figures(imported, tmp_path):
    _, out = imported
    report = tmp_path / "report.html"
    proc = veriloop("view", str(out), "--out", str(report))
    assert proc.returncode == 0, proc.stderr
    size = report.stat().st_size
    assert proc.stdout.strip() == f"wrote {report}: 9 trajectories, {size} bytes ({size / 9:.0f} per trajectory)"
    payload = embedded_payload(report.read_text())
    summary = json.loads((out / "summary.json").read_text())["strategies"]
    assert [(g["strategy"], g["model"], g["n"], g["correct"], g["mean_rounds"], g["calls"], g["prompt_tokens"],
             g["completion_tokens"], g["stop_reasons"]) for g in payload["groups"]] == [
        ("imported", "other-llm", 1, 1, 1.0, 1, 0, 0, {"recorded": 1}),
        ("imported", "imported", 3, 1, 1.0, 3, 0, 0, {"recorded": 3}),
        *[(name, "imported", s["n"], s["correct"], s["mean_rounds"], s["model_calls"], 0, 0, s["stop_reasons"])
          for name, s in summary.items() if name != "imported"],
    ]
    assert sum(g["n"] for g in payload["groups"]) == sum(s["n"] for s in summary.values()) == 9
    # The feedback each loop was sent is shown after the round it followed.
    [loop] = [t for t in payload["T"] if payload["groups"][t["g"]]["strategy"] == "backprompt"]
    assert [payload["S"][r[6]] if r[6] is not None else None for r in loop["r"]] == [
        "That makes 12, not 24.", "Now use only two of the numbers.", None]
    assert data.accuracy_by_round(read_trajectories(out)[5:6], 3) == [0.0, 1.0, 0.0]


# A name that, printed raw, sets the terminal's title, clears the screen, turns what follows
# red (CSI as one C1 byte) and reverses the rest of the line.
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31mred\u202eevil"
HOSTILE_SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x9b31mred\\u202eevil"
OBEYED = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def hostile_import(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    source = write_lines(folder / "answers.jsonl", {**RIGHT, "condition": HOSTILE, "model": HOSTILE},
                         {"instance_id": "game24-g2", "response": "\x1b[2J\x9b31m", "condition": HOSTILE},
                         {**RIGHT, "condition": HOSTILE})
    out = folder / "run"
    return veriloop("import", str(source), "--domain", "game24", "--out", str(out)), out


def test_names_from_the_file_reach_the_terminal_with_control_characters_escaped(hostile_import):
    proc, _ = hostile_import
    assert proc.returncode == 1, proc.stderr
    assert OBEYED.findall(proc.stdout + proc.stderr) == []
    rows = [line.split("│")[1].strip() for line in proc.stdout.splitlines() if line.startswith("│")]
    assert rows == [HOSTILE_SHOWN]
    assert len(proc.stderr.splitlines()) == 2  # the second line for g1, and g2's unreadable reply


def test_rescore_prints_the_names_escaped(hostile_import, tmp_path):
    _, imported = hostile_import
    proc = veriloop("rescore", str(imported), "--verifier", "sound", "--out", str(tmp_path / "rescored"))
    assert proc.returncode == 0, proc.stderr
    assert OBEYED.findall(proc.stdout + proc.stderr) == []
    assert HOSTILE_SHOWN in proc.stdout


def test_an_error_naming_a_hostile_path_is_escaped(tmp_path):
    proc = veriloop("import", str(tmp_path / f"{HOSTILE}.jsonl"), "--domain", "game24")
    assert_one_line_error(proc, f"{tmp_path / HOSTILE_SHOWN}.jsonl: no such file")
    assert OBEYED.findall(proc.stderr) == []


def test_a_source_over_the_cap_is_refused_before_it_is_hashed(tmp_path, monkeypatch):
    from veriloop.runs import identity

    hashed: list[object] = []
    original = identity.content_sha256
    monkeypatch.setattr(identity, "content_sha256", lambda path: hashed.append(path) or original(path))
    source = tmp_path / "big.jsonl"
    with source.open("wb") as handle:
        handle.truncate((1 << 30) + 1)  # sparse: hashing it would read a GiB of zeros
    proc = veriloop("import", str(source), "--domain", "game24", "--out", str(tmp_path / "run"))
    assert_one_line_error(proc, f"{source} holds more than 1 GiB, the most an answers file may hold")
    assert source not in hashed


@pytest.mark.parametrize(("make", "reason"), [
    (lambda p: p.symlink_to("/dev/zero"), "a device, pipe or socket, not a file; it is not a run's config: choose "
                                          "another --out"),
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "is not valid JSON; restore it or choose another --out"),
], ids=["dev-zero", "deep-nesting"])
def test_a_hostile_config_in_the_out_directory_is_one_error(tmp_path, make, reason):
    out = tmp_path / "run"
    out.mkdir()
    make(out / "config.json")
    proc = veriloop("import", str(write_lines(tmp_path / "a.jsonl", RIGHT)), "--domain", "game24", "--out", str(out))
    assert_one_line_error(proc, f"{out / 'config.json'}", reason)
