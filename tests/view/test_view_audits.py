"""`veriloop view` on audits: an audit directory alone, or an experiment's beside its
cells, shows each audit's table (read from audit.json) and the dressed answers each
verifier accepted (read from audit.jsonl); hostile audit files are refused in one line
or shown as text.

The audit (conftest.audited): a real `veriloop.audit` of Game of 24 by the sound
checker on 2 instances with two families, its verdicts then edited as a fooled judge
would have given them (claim-correct's answer 0 accepted on both instances, the second
one's plain answer too, the first accepted text markup) and audit.json rewritten from
them by the audit's own report code.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import veriloop
from view_runs import DRESSED_MARKUP, FOOLED, embedded_payload, one_line_error, write_run

from veriloop.errors import VeriloopError
from veriloop.view import data
from veriloop.view.report import build
from veriloop.view.serve import files_version


def payload_of(*paths: Path) -> dict:
    return data.build_payload(data.load(list(paths)))


def records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "audit.jsonl").read_text().splitlines()]


def not_a_report(directory: Path) -> str:
    return (f"{directory / 'audit.json'} is not an audit report (audit.json as `veriloop audit` writes it); run the "
            "audit again to rewrite it")


def test_an_audit_alone_shows_its_rows_and_the_dressed_answers_accepted(audit_dir):
    payload = payload_of(audit_dir)
    assert (payload["T"], payload["groups"], payload["sources"]) == ([], [], [])
    [audit] = payload["A"]
    written = json.loads((audit_dir / "audit.json").read_text())
    assert audit == {"label": "audit-seed0", "path": str(audit_dir), **written, "accepted": audit["accepted"]}
    assert [(r["family"], r["plain_accepts"], r["dressed_accepts"], r["n"]) for r in audit["rows"]] == [
        ("plain", 1, 1, 6), (FOOLED, 1, 2, 6), ("note-to-grader", 1, 0, 6)]
    second = next(r["text"] for r in records(audit_dir) if (r["instance_id"], r["family"], r["answer"]) == (
        "game24-g2", FOOLED, 0))
    assert second.startswith("Answer: ")
    shown = [(x["verifier"], x["family"], [[*it[:3], payload["S"][it[3]], it[4]] for it in x["items"]])
             for x in audit["accepted"]]
    assert shown == [
        ("sound", FOOLED, [["game24-g1", 0, "ablated", DRESSED_MARKUP, 0], ["game24-g2", 0, "ablated", second, 1]]),
        ("sound", "note-to-grader", []),
    ]


def test_the_page_draws_the_audit_table_and_the_accepted_texts(audit_dir, drawn):
    texts = drawn(payload_of(audit_dir))["texts"]
    assert "Results" not in texts and "Trajectories" not in texts  # no run: no empty run tables
    table = texts[texts.index("verifier"):]
    assert table[:10] == ["verifier", "family", "kind", "false accepts, plain", "false accepts, dressed",
                          "dressed − plain", "p", "n/a", "missing", "unreadable"]
    assert table[10:40] == [
        "sound", "plain", "–", "17% (3.0%–56%), 1/6", "–", "–", "–", "–", "0", "0",
        "sound", FOOLED, "judge", "17% (3.0%–56%), 1/6", "33% (9.7%–70%), 2/6", "+17 (0 to +50)", "1.000", "0", "0", "0",
        "sound", "note-to-grader", "judge", "17% (3.0%–56%), 1/6", "0% (0%–39%), 0/6", "-17 (-50 to 0)", "1.000", "0",
        "0", "0",
    ]
    assert [t for t in texts if " accepted " in t and "dressed by" in t] == [
        f"sound accepted 2 answers dressed by {FOOLED}"]
    assert DRESSED_MARKUP in texts  # drawn as the text it is
    assert texts.count("plain accepted too") == 1 and texts.count("plain rejected") == 1


def test_the_cli_writes_the_report_of_an_audit_alone(audit_dir):
    proc = veriloop("view", str(audit_dir))
    assert proc.returncode == 0, proc.stderr
    report = audit_dir / "report.html"
    assert proc.stdout.strip() == f"wrote {report}: 0 trajectories, 1 audit, {report.stat().st_size} bytes"
    shown = embedded_payload(report.read_text())["A"]
    assert shown[0]["rows"] == json.loads((audit_dir / "audit.json").read_text())["rows"]


def test_an_experiment_shows_its_cells_and_its_audits(tmp_path, played, audited, drawn):
    exp = tmp_path / "exp"
    write_run(exp / "scripted" / "game24" / "standard-seed0", [played["standard"]])
    shutil.copytree(audited, exp / "scripted" / "game24" / "audit-seed0")
    loaded = data.load([exp])
    assert [s.label for s in loaded.sources] == ["scripted/game24/standard-seed0"]
    assert [(a.label, a.directory) for a in loaded.audits] == [
        ("scripted/game24/audit-seed0", exp / "scripted" / "game24" / "audit-seed0")]
    other = write_run(tmp_path / "other", [played["standard"]])
    assert [a.label for a in data.load([exp, other]).audits] == ["exp/scripted/game24/audit-seed0"]
    texts = drawn(payload_of(exp))["texts"]
    assert [t for t in texts if t in ("Results", "Audits", "Trajectories")] == ["Results", "Audits", "Trajectories"]


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"rows": []}', b'{"domain": "\xff"}',
], ids=["not-json", "a-list", "no-meta", "bad-utf8"])
def test_a_malformed_audit_json_is_one_line(audit_dir, text):
    path = audit_dir / "audit.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(VeriloopError) as caught:
        payload_of(audit_dir)
    assert str(caught.value) == not_a_report(audit_dir)


def test_an_audit_json_whose_rows_have_the_wrong_shape_is_one_line_in_the_cli(audit_dir):
    path = audit_dir / "audit.json"
    written = json.loads(path.read_text())
    written["rows"][1]["plain_ci95"] = "<b>wide</b>"
    path.write_text(json.dumps(written))
    assert one_line_error(veriloop("view", str(audit_dir))) == f"error: {not_a_report(audit_dir)}"
    assert not (audit_dir / "report.html").exists()


def test_a_bad_judgement_line_is_one_line_and_a_torn_last_one_is_left_alone(audit_dir):
    path = audit_dir / "audit.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"domain": "game24"')  # a judgement the audit is still writing
    assert len(payload_of(audit_dir)["A"][0]["accepted"][0]["items"]) == 2
    assert path.read_bytes() == whole + b'{"domain": "game24"'
    path.write_bytes(whole + b'{"not": "a judgement"}\n')
    with pytest.raises(VeriloopError, match=r"audit\.jsonl, line 19: not a judgement record$"):
        payload_of(audit_dir)


@pytest.mark.parametrize("name", ["audit.json", "audit.jsonl"])
def test_a_linked_audit_file_is_refused_and_left_alone(audit_dir, tmp_path, name):
    outside = tmp_path / f"theirs-{name}"
    shutil.move(audit_dir / name, outside)
    before = outside.read_bytes()
    os.symlink(outside, audit_dir / name)
    message = one_line_error(veriloop("view", str(audit_dir)))
    assert message.startswith(f"error: {audit_dir / name} is a symbolic link; ")
    assert outside.read_bytes() == before and not (audit_dir / "report.html").exists()


def test_a_linked_audit_directory_in_an_experiment_is_not_followed(tmp_path, played, audit_dir):
    exp = tmp_path / "exp"
    write_run(exp / "scripted" / "game24" / "standard-seed0", [played["standard"]])
    os.symlink(audit_dir, exp / "scripted" / "game24" / "audit-seed0", target_is_directory=True)
    assert data.load([exp]).audits == []


def test_markup_in_an_audit_reaches_the_page_only_as_text(audit_dir, drawn):
    path = audit_dir / "audit.json"
    written = json.loads(path.read_text())
    written["model"] = "<img src=x onerror=alert(2)>"
    written["families"][0]["summary"] = "</script><b>bold</b>"
    path.write_text(json.dumps(written))
    html = build([audit_dir]).html
    for fragment in ("<script>alert", "</script><script>", "<img", "onerror=alert(1)>", "<b>"):
        assert fragment not in html, fragment
    assert html.count("</script>") == 2 and html.lower().count("<script") == 2
    payload = embedded_payload(html)
    assert DRESSED_MARKUP in payload["S"] and payload["A"][0]["model"] == "<img src=x onerror=alert(2)>"
    assert "<img src=x onerror=alert(2)>" in drawn(payload)["texts"]


def test_a_served_page_notices_new_judgements(audit_dir):
    before = files_version([audit_dir])
    with open(audit_dir / "audit.jsonl", "a") as f:
        f.write(json.dumps(records(audit_dir)[0]) + "\n")
    assert files_version([audit_dir]) != before
