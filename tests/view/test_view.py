"""`veriloop view`: the report's figures, its compact data, its safety with hostile model
output, its errors, and the live server, on a run a scripted model played (view_runs.py).

The run: on Game of 24's 1 1 4 6 (see test_strategy_control_flow), `standard` answers
right; backprompting with the sound checker answers 8, is told so and answers right;
backprompting with the LLM judge once has the judge accept the 8 (a false accept) and
once has it reject the right answer first (a false reject); and a `standard` run on a
second puzzle replies with markup meant to break out of the page.

A second run holds what the verifiers themselves did: CRITIC on a GSM8K problem runs
the wrong program and then the corrected one with the python tool, and SelfCheck checks
two step-by-step solutions of two steps each, whose verdicts are +1, -1 and then 0, +1.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import veriloop, veriloop_process
from view_runs import (
    CRITIQUE,
    FEEDBACK,
    HOSTILE,
    PUZZLE,
    RIGHT_STEPS,
    STEP_CHECKS,
    TOOL_CALLS,
    WRONG_PROGRAM,
    embedded_payload,
    one_line_error,
    write_run,
)

from veriloop.errors import VeriloopError
from veriloop.selfcheck.scoring import confidence
from veriloop.stats.metrics import summarise
from veriloop.stats.pools import strategy_pools
from veriloop.view import data, page
from veriloop.view.report import build
from veriloop.view.serve import VERSION_PATH, LivePage, ViewServer


def payload_of(run_dir: Path) -> dict:
    return data.build_payload(data.load([run_dir]))


def test_overview_figures_are_the_metrics_of_the_run(run_dir, played):
    payload = payload_of(run_dir)
    rows = {(g["strategy"], g["seed"]): g for g in payload["groups"]}
    assert set(rows) == {("standard:temperature=0", 0), (played["sound"].strategy, 0), (played["accepted"].strategy, 1),
                         (played["rejected"].strategy, 0)}
    groups = {
        ("standard:temperature=0", 0): [played["standard"], played["hostile"]],
        (played["sound"].strategy, 0): [played["sound"]],
        (played["accepted"].strategy, 1): [played["accepted"]],
        (played["rejected"].strategy, 0): [played["rejected"]],
    }
    for key, ts in groups.items():
        s = summarise(key[0], ts)
        row = rows[key]
        assert (row["n"], row["correct"], row["accuracy"], row["ci"]) == (s.n, s.correct, s.accuracy,
                                                                          list(s.accuracy_ci95))
        assert (row["mean_rounds"], row["calls"], row["cache_hits"]) == (s.mean_rounds, s.model_calls, s.cache_hits)
        assert (row["prompt_tokens"], row["completion_tokens"], row["seconds"]) == (
            s.prompt_tokens, s.completion_tokens, s.seconds)
        assert row["stop_reasons"] == s.stop_reasons
    # The scripted model counts 10 prompt and 5 completion tokens a call.
    standard = rows[("standard:temperature=0", 0)]
    assert (standard["n"], standard["correct"], standard["accuracy"]) == (2, 1, 0.5)
    assert standard["tokens_per_trajectory"] == 15.0
    assert standard["by_round"] == [0.5]
    assert rows[(played["sound"].strategy, 0)]["by_round"] == [0.0, 1.0]
    assert rows[(played["accepted"].strategy, 1)]["by_round"] == [0.0]
    assert rows[(played["rejected"].strategy, 0)]["by_round"] == [1.0, 1.0]
    assert rows[(played["rejected"].strategy, 0)]["calls"] == 4


def test_groups_whose_rounds_form_pools_carry_their_pool_curves(run_dir, played):
    rows = {(g["strategy"], g["seed"]): g for g in payload_of(run_dir)["groups"]}
    # One round per trajectory: no pool.
    assert rows[("standard:temperature=0", 0)]["pools"] is None
    assert rows[(played["accepted"].strategy, 1)]["pools"] is None
    # The sound loop's pool: 8 (rejected), then the right answer (accepted). pass@k: 1/2, 1;
    # maj@2: one vote each, 8 first; best-of-2: the accepted one; first@k: round 2.
    sound = rows[(played["sound"].strategy, 0)]["pools"]
    assert (sound["n_instances"], sound["pool_size"], sound["smallest_pool"], sound["largest_pool"]) == (1, 2, 2, 2)
    assert sound["tokens_per_sample"] == 15.0  # the scripted model's 10 + 5 a call, one call a round
    assert {c["metric"]: (c["k"], c["values"]) for c in sound["curves"]} == {
        "pass@k": ([1, 2], [0.5, 1.0]), "maj@k": ([1, 2], [0.5, 0.0]), "best-of-k": ([1, 2], [0.5, 1.0]),
        "first@k": ([1, 2], [0.0, 1.0]),
    }
    # The loop whose judge rejected the right answer once: both rounds right.
    rejected = rows[(played["rejected"].strategy, 0)]["pools"]
    assert all(c["values"] == [1.0, 1.0] for c in rejected["curves"])
    # The figures are stats.pools' on the same trajectories, as the results files have them.
    assert sound == strategy_pools(played["sound"].strategy, [played["sound"]]).model_dump(exclude={"strategy"})


def test_the_page_draws_the_pool_table_and_charts_apart_from_the_results_table():
    js = page.asset("view.js")
    # The results table is counted by the browser tests as `table.results`: the pool table is another.
    assert 'h("table", { cls: "pools" }' in js and "drawPools(root)" in js
    assert 'METRICS = ["pass@k", "maj@k", "best-of-k", "first@k"]' in js


def test_accuracy_by_round_of_an_imported_pool_stops_at_its_first_accepted_answer():
    from veriloop.records import RoundRecord, Trajectory, Verdict

    def pool(oks: list[bool], right: list[bool]) -> Trajectory:
        rounds = [RoundRecord(round=i + 1, text=f"r{i + 1}", answer=f"r{i + 1}", verdict=Verdict(ok=ok), correct=c)
                  for i, (ok, c) in enumerate(zip(oks, right))]
        first = next((r for r in rounds if r.verdict.ok), rounds[-1])
        return Trajectory(strategy="sampling:k=3,temperature=1,verifier=sound", domain="d", model="m",
                          instance_id=f"i{len(oks)}{oks}", seed=0, rounds=rounds, final_text=first.text,
                          correct=first.correct, stop_reason="verifier_accepted" if any(oks) else "max_rounds")

    # Solved at round 1 (then two more recorded samples, one wrong); solved at round 3; never solved.
    ts = [pool([True, False, True], [True, False, True]), pool([False, False, True], [False, False, True]),
          pool([False, False, False], [False, False, False])]
    assert data.accuracy_by_round(ts, 3) == [1 / 3, 1 / 3, 2 / 3]


def test_accuracy_by_round_keeps_the_last_answer_of_a_shorter_loop(played):
    assert data.accuracy_by_round([played["sound"], played["standard"]], 3) == [0.5, 1.0, 1.0]
    assert data.accuracy_by_round([], 3) == []


def test_verifier_against_ground_truth_and_the_feedback_fed_back(run_dir, played):
    payload = payload_of(run_dir)
    by_key = {(payload["groups"][t["g"]]["strategy"], payload["groups"][t["g"]]["seed"], t["i"]): t
              for t in payload["T"]}
    sound = by_key[(played["sound"].strategy, 0, PUZZLE.id)]
    accepted = by_key[(played["accepted"].strategy, 1, PUZZLE.id)]
    rejected = by_key[(played["rejected"].strategy, 0, PUZZLE.id)]
    standard = by_key[("standard:temperature=0", 0, PUZZLE.id)]
    assert [r[5] for r in sound["r"]] == ["agree", "agree"]
    assert [r[5] for r in accepted["r"]] == ["false_accept"]
    assert [r[5] for r in rejected["r"]] == ["false_reject", "agree"]
    assert [r[5] for r in standard["r"]] == [None]
    assert (sound["vf"], accepted["vf"], rejected["vf"], standard["vf"]) == (
        data.HAS_VERDICT, data.HAS_VERDICT | data.FALSE_ACCEPT, data.HAS_VERDICT | data.FALSE_REJECT, 0)
    assert payload["S"][sound["r"][0][6]] == FEEDBACK
    assert sound["r"][1][6] is None  # accepted: nothing fed back
    assert (sound["ok"], sound["sr"], sound["nr"], sound["nc"], sound["tk"]) == (1, played["sound"].stop_reason, 2, 2,
                                                                                 30)


def trajectory_of(payload: dict, strategy_prefix: str) -> dict:
    (found,) = [t for t in payload["T"] if payload["groups"][t["g"]]["strategy"].startswith(strategy_prefix)]
    return found


def test_critic_tool_calls_carry_their_input_and_observation(checked_dir, checked):
    critic = checked["critic"]
    assert (critic.stop_reason, critic.correct) == ("critic_accepted", True)
    assert [(x.round, x.tool, x.input, x.text) for x in critic.tool_calls] == TOOL_CALLS
    assert [(x.ok, x.cached) for x in critic.tool_calls] == [(True, False), (True, False)]
    payload = payload_of(checked_dir)
    S = payload["S"]
    rows = trajectory_of(payload, "critic:")["tc"]
    assert [(r[0], r[1], S[r[2]], S[r[3]]) for r in rows] == TOOL_CALLS
    assert [(r[4], r[5], r[6]) for r in rows] == [(1, round(x.seconds, 3), 0) for x in critic.tool_calls]
    # The critique the corrector was given quotes the observation of the first program.
    assert S[trajectory_of(payload, "critic:")["r"][0][3]["e"][0][1]] == (
        f"Action: python\nAction Input: {WRONG_PROGRAM}\nObservation: Execution: answer = 18\n{CRITIQUE}")
    assert "tc" not in trajectory_of(payload, "selfcheck:")


def test_selfcheck_step_checks_carry_every_stage_and_verdict(checked_dir, checked):
    selfcheck = checked["selfcheck"]
    assert (selfcheck.stop_reason, selfcheck.final_text, selfcheck.correct) == ("weighted_vote", RIGHT_STEPS, True)
    payload = payload_of(checked_dir)
    S = payload["S"]
    t = trajectory_of(payload, "selfcheck:")
    assert [(c["round"], c["checker"], c["total"], c["checked"], c["max"], c["contradicted"], c["unrelated"],
             c["confidence"], c["global"]) for c in t["sc"]] == [
        (1, "steps", 2, 2, 20, [2], 0, confidence(1, 0), None),
        (2, "steps", 2, 2, 20, [], 1, confidence(0, 1), None),
    ]
    for check, (number, steps) in zip(t["sc"], STEP_CHECKS.items()):
        assert [(s[0], S[s[1]], S[s[2]], s[3], s[4], s[5], S[s[6]], S[s[7]], s[8], s[9]) for s in check["steps"]] == [
            (index, text, target, facts, used, 0, regenerated, comparison, result, 0)
            for index, text, target, _, facts, used, regenerated, comparison, result in steps
        ], number
    # The collection stage's own reply is kept with its call (the check keeps the indices).
    stages = [(c[1], c[11], c[10], S[c[4]]) for c in t["c"] if c[0] == "check"]
    assert stages == [
        (number, step[0], stage, reply) for number, steps in STEP_CHECKS.items() for step in steps
        for stage, reply in zip(("target", "collect", "regenerate", "compare"), (step[2], step[3], *step[6:8]))
    ]
    assert "sc" not in trajectory_of(payload, "critic:")


def test_messages_are_stored_once_and_rebuild_exactly(tmp_path, played):
    # Many trajectories over one few-shot prompt, with histories that grow each round.
    ts = [played["sound"].model_copy(update={"instance_id": f"i{k}"}) for k in range(50)] + [played["rejected"]]
    payload = payload_of(write_run(tmp_path / "many", ts))
    calls = [(c, t) for t in ts for c in t.calls]
    rows = [c for t in payload["T"] for c in t["c"]]
    assert len(rows) == len(calls)
    for row, (call, _) in zip(rows, calls):
        assert data.rebuild_messages(payload, row[3]) == call.messages
        assert payload["S"][row[4]] == call.response
    distinct = {(m["role"], m["content"]) for c, _ in calls for m in c.messages}
    assert len(payload["M"]) == len(distinct)
    assert len(payload["S"]) == len(set(payload["S"]))


def test_a_calls_reasoning_tokens_and_what_was_sent_reach_the_page(tmp_path, played):
    first = played["sound"].calls[0].model_copy(update={
        "reasoning": "7 = 3 + 4, so <b>7</b>", "reasoning_tokens": 12, "cached_prompt_tokens": 30,
        "sent": {"model": "o3-mini", "max_completion_tokens": 64, "reasoning_effort": "low"}})
    t = played["sound"].model_copy(update={"calls": [first, *played["sound"].calls[1:]]})
    payload = payload_of(write_run(tmp_path / "reasoned", [t]))
    row, *others = payload["T"][0]["c"]
    assert (payload["S"][row[13]], row[14], row[15]) == ("7 = 3 + 4, so <b>7</b>", 12, 30)
    assert json.loads(payload["S"][row[16]]) == first.sent
    assert {(other[13], other[16]) for other in others} == {(None, None)}  # a local model's calls say none


def test_hostile_model_output_never_reaches_the_page_as_markup(run_dir, played):
    html = build([run_dir], references=False).html
    for fragment in ("<script>alert", "</script><script>", "<img src=x", "onerror=alert(1)>", "<img"):
        assert fragment not in html, fragment
    # Two closing tags: the data block's and the viewer script's; none from the data.
    assert html.count("</script>") == 2
    assert html.lower().count("<script") == 2
    back = embedded_payload(html)
    assert HOSTILE in back["S"]  # and the text itself survives exactly, to be shown as text
    assert back == json.loads(json.dumps(payload_of(run_dir) | {"title": back["title"], "version": ""}))


def test_json_for_script_escapes_every_angle_bracket_and_ampersand():
    text = page.json_for_script({"a": "</script>&<!--\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script>&<!--\u2028"}


def test_the_page_fetches_nothing_and_its_script_assigns_no_html(run_dir):
    html = build([run_dir], references=False).html
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    # The one URL in the page is SVG's namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in html and "connect-src 'self'" in html
    js = page.asset("view.js")
    for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert banned not in js, banned


def test_an_experiment_directory_is_every_cell_in_its_results_order(tmp_path, played):
    exp = tmp_path / "exp"
    write_run(exp / "scripted" / "game24" / "b-seed0", [played["sound"]])
    write_run(exp / "scripted" / "game24" / "a-seed0", [played["standard"]])
    (exp / "results.json").write_text(json.dumps({"cells": [{"run_dir": "scripted/game24/b-seed0"},
                                                            {"run_dir": "scripted/game24/a-seed0"}]}))
    sources = data.discover([exp])
    assert [s.label for s in sources] == ["scripted/game24/b-seed0", "scripted/game24/a-seed0"]
    other = write_run(tmp_path / "other", [played["standard"]])
    assert [s.label for s in data.discover([exp, other])] == [
        "exp/scripted/game24/b-seed0", "exp/scripted/game24/a-seed0", "other"]
    assert [s.experiment for s in sources] == [exp, exp]
    loaded = data.load([exp])
    assert [t.strategy for _, t in loaded.trajectories] == [played["sound"].strategy, played["standard"].strategy]


def test_several_runs_are_told_apart_by_their_paths(tmp_path, played):
    a = write_run(tmp_path / "one" / "run", [played["standard"]])
    b = write_run(tmp_path / "two" / "run", [played["standard"]])
    payload = data.build_payload(data.load([a, b]))
    assert [s["label"] for s in payload["sources"]] == ["one/run", "two/run"]
    assert [g["source"] for g in payload["groups"]] == ["one/run", "two/run"]


def test_a_torn_last_line_is_left_alone(run_dir, played):
    path = run_dir / "trajectories.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + played["standard"].model_dump_json().encode()[:40])
    assert len(data.read_trajectories(path)) == len(played)
    assert path.read_bytes().startswith(whole) and len(path.read_bytes()) == len(whole) + 40


def test_load_errors(tmp_path):
    with pytest.raises(VeriloopError, match="does not exist"):
        data.load([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(VeriloopError, match="holds no trajectories"):
        data.load([tmp_path / "empty"])
    write_run(tmp_path / "fresh", [])
    with pytest.raises(VeriloopError, match="no trajectories yet"):
        data.load([tmp_path / "fresh"])
    assert data.load([tmp_path / "fresh"], allow_empty=True).trajectories == []
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "trajectories.jsonl").write_text('{"not": "a trajectory"}\n')
    with pytest.raises(VeriloopError, match="line 1: not a trajectory record"):
        data.load([bad])


def test_cli_errors_are_one_line(tmp_path):
    assert one_line_error(veriloop("view", str(tmp_path / "nowhere"))) == (
        f"error: {tmp_path / 'nowhere'} does not exist")
    (tmp_path / "empty").mkdir()
    assert one_line_error(veriloop("view", str(tmp_path / "empty"))) == (
        f"error: {tmp_path / 'empty'} holds no trajectories and no audit (no trajectories.jsonl or audit.json in it "
        "or below it)")
    (tmp_path / "notes.txt").write_text("hello")
    assert "is not a run directory" in one_line_error(veriloop("view", str(tmp_path / "notes.txt")))


def test_cli_writes_the_report_into_the_run(run_dir, played):
    proc = veriloop("view", str(run_dir), "--no-references")
    assert proc.returncode == 0, proc.stderr
    report = run_dir / "report.html"
    size = report.stat().st_size
    assert proc.stdout.strip() == (f"wrote {report}: {len(played)} trajectories, {size} bytes "
                                   f"({size / len(played):.0f} per trajectory)")
    assert embedded_payload(report.read_text())["T"][0]["i"] == PUZZLE.id


def test_view_hint_is_a_command_to_paste():
    from veriloop.cli.common import view_hint

    assert view_hint(Path("runs/game24 x")) == "see every trajectory: veriloop view 'runs/game24 x'"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8")


def test_server_rebuilds_the_page_when_a_trajectory_is_appended(run_dir, played):
    built: list[str] = []

    def make(version: str) -> str:
        return build([run_dir], live=True, version=version, references=False).html

    server = ViewServer(LivePage([run_dir], make, on_build=built.append), port=0).start()
    try:
        assert server.url.startswith("http://127.0.0.1:")
        html = get(server.url)
        first = json.loads(get(server.url.rstrip("/") + VERSION_PATH))["version"]
        payload = embedded_payload(html)
        assert payload["live"] is True and payload["version"] == first
        assert len(payload["T"]) == len(played)
        assert json.loads(get(server.url.rstrip("/") + VERSION_PATH))["version"] == first  # nothing changed
        extra = played["standard"].model_copy(update={"instance_id": "appended"})
        with open(run_dir / "trajectories.jsonl", "a") as f:
            f.write(extra.model_dump_json() + "\n")
        second = json.loads(get(server.url.rstrip("/") + VERSION_PATH))["version"]
        assert second != first
        again = embedded_payload(get(server.url))
        assert again["version"] == second and again["T"][-1]["i"] == "appended"
        assert len(built) == 2
        with pytest.raises(urllib.error.HTTPError):
            get(server.url + "elsewhere")
    finally:
        server.stop()


def raw_get(port: int, path: str, host: str | None) -> tuple[str, bytes]:
    """The status line and body of a GET sent as bytes, with exactly the Host header given."""
    request = f"GET {path} HTTP/1.1\r\n" + ("" if host is None else f"Host: {host}\r\n") + "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request.encode())
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), body


def test_server_answers_only_a_host_that_names_this_machine(run_dir):
    # DNS rebinding: a page the user visits points its own name at 127.0.0.1; its requests carry that name.
    page = LivePage([run_dir], lambda version: "<html>every prompt and reply</html>")
    server = ViewServer(page, port=0).start()
    try:
        for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example", "localhost:x", "",
                     None):
            for path in ("/", VERSION_PATH):
                assert raw_get(server.port, path, host) == ("HTTP/1.0 403 Forbidden", b""), (host, path)
        for host in (f"127.0.0.1:{server.port}", "127.0.0.1", "localhost", "LocalHost:9000"):
            status, body = raw_get(server.port, "/", host)
            assert (status, body) == ("HTTP/1.0 200 OK", b"<html>every prompt and reply</html>"), host
    finally:
        server.stop()


def test_cli_serve_answers_and_stops_on_ctrl_c(run_dir):
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "veriloop.cli", "view", str(run_dir), "--serve", "--port", "0",
         "--no-references"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ,
                                                                                                  COLUMNS="200"))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+/) ", line)
        assert found, line
        assert embedded_payload(get(found.group(1)))["live"] is True
        assert (run_dir / "report.html").exists()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
        assert stdout.strip() == "stopped" and "Traceback" not in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ viewing reads data and runs nothing

def test_references_are_the_ones_the_run_recorded(run_dir):
    recorded = PUZZLE.model_copy(update={"reference": "(6 - 1) * 4 + 1 + 3 - 1 - 3"})  # any text the run recorded
    (run_dir / "instances.jsonl").write_text(recorded.model_dump_json() + "\n")
    payload = embedded_payload(build([run_dir]).html)
    shown = {t["i"]: payload["S"][t["ref"]] for t in payload["T"] if "ref" in t}
    assert shown == {PUZZLE.id: recorded.reference}


def test_viewing_a_task_run_imports_no_check_file(task_run):
    run, marker = task_run
    built = build([run])  # references shown, as the command does by default
    assert built.trajectories == 1 and "ref" not in embedded_payload(built.html)["T"][0]
    proc = veriloop("view", str(run))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()


def test_serving_a_task_run_imports_no_check_file(task_run):
    run, marker = task_run
    server = ViewServer(LivePage([run], lambda version: build([run], live=True, version=version).html), port=0).start()
    try:
        assert len(embedded_payload(get(server.url))["T"]) == 1
    finally:
        server.stop()
    assert not marker.exists()


def test_a_config_asking_for_1e8_instances_is_viewed_at_once(huge_run):
    # Rebuilding its domain would generate 10^8 graphs: the command would not end for days.
    proc = veriloop_process("view", str(huge_run), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {huge_run / 'report.html'}: 1 trajectories, ")


def test_serving_a_config_asking_for_1e8_instances_answers_at_once(huge_run):
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "veriloop.cli", "view", str(huge_run), "--serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, COLUMNS="200"))
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "no address within 120 s: the page is still being built"
        found = re.search(r"serving (http://127\.0\.0\.1:\d+/) ", proc.stdout.readline())
        assert found
        assert len(embedded_payload(get(found.group(1)))["T"]) == 1
    finally:
        proc.kill()
        proc.wait()


def test_a_linked_trajectory_file_is_refused_and_left_alone(tmp_path, played):
    outside = write_run(tmp_path / "elsewhere", [played["standard"]]) / "trajectories.jsonl"
    before = outside.read_bytes()
    run = tmp_path / "linked"
    run.mkdir()
    os.symlink(outside, run / "trajectories.jsonl")
    assert one_line_error(veriloop("view", str(run))) == (
        f"error: {run / 'trajectories.jsonl'} is a symbolic link; a run directory's trajectories.jsonl must be a file "
        "in it (copy the file in, or name the directory it points into)")
    cell = tmp_path / "experiment" / "main" / "game24" / "standard-seed0"
    cell.mkdir(parents=True)
    os.symlink(outside, cell / "trajectories.jsonl")
    assert "is a symbolic link" in one_line_error(veriloop("view", str(tmp_path / "experiment")))
    assert outside.read_bytes() == before


def test_a_linked_instances_file_is_refused(run_dir, tmp_path):
    (tmp_path / "theirs.jsonl").write_text(PUZZLE.model_dump_json() + "\n")
    os.symlink(tmp_path / "theirs.jsonl", run_dir / "instances.jsonl")
    with pytest.raises(VeriloopError, match=r"instances\.jsonl is a symbolic link"):
        build([run_dir])
    assert build([run_dir], references=False).trajectories == 5


def test_filters_count_names_that_a_plain_object_would_take_for_its_own(tmp_path, played, filter_options):
    """A condition named "constructor" or "__proto__" (an imported file may name one) is
    counted like any other: as keys of a plain JavaScript object the first read back the
    Object function and the second set the object's prototype and vanished."""
    named = [played["standard"].model_copy(update={"strategy": name}) for name in ("constructor", "__proto__")]
    payload = data.build_payload(data.load([write_run(tmp_path / "named", named)]))
    assert filter_options(payload) == [["all", "__proto__ (1)", "constructor (1)"]]
