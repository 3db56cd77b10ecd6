"""Fixtures of the report viewer's tests: the scripted runs of view_runs.py, played once
per module, and run directories holding them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import booby_trapped_check
from scripted import play
from view_runs import (
    AUDIT_FAMILIES,
    CRITIQUE,
    DRESSED_MARKUP,
    EIGHT,
    FEEDBACK,
    FOOLED,
    GAME24,
    GSM8K,
    GSM8K_COT,
    HOSTILE,
    JUDGE,
    JUDGE_ACCEPTS,
    JUDGE_REJECTS,
    OTHER,
    PROGRAM_QUESTION,
    PUZZLE,
    RIGHT,
    RIGHT_PROGRAM,
    RIGHT_STEPS,
    SOUND,
    STEP_CHECKS,
    STEP_QUESTION,
    WRONG_PROGRAM,
    WRONG_STEPS,
    write_run,
)

from veriloop.records import Trajectory
from veriloop.tools import get_tool
from veriloop.tools.base import Toolbox


@pytest.fixture(scope="module")
def played() -> dict[str, Trajectory]:
    standard, _ = play("standard", GAME24, PUZZLE, [RIGHT])
    sound, sound_model = play(SOUND, GAME24, PUZZLE, [EIGHT, RIGHT])
    accepted, _ = play(JUDGE, GAME24, PUZZLE, [EIGHT, JUDGE_ACCEPTS], seed=1)
    rejected, _ = play(JUDGE, GAME24, PUZZLE, [RIGHT, JUDGE_REJECTS, RIGHT, JUDGE_ACCEPTS])
    hostile, _ = play("standard", GAME24, OTHER, [HOSTILE])
    # What the scripted model was really sent in round 2: the feedback the page must show.
    assert sound_model.asked[1][0][-1]["content"] == FEEDBACK
    return {"standard": standard, "sound": sound, "accepted": accepted, "rejected": rejected, "hostile": hostile}



@pytest.fixture(scope="module")
def checked() -> dict[str, Trajectory]:
    """The verifiers' own work: CRITIC's tool calls and SelfCheck's step checks."""
    critic, _ = play("critic", GSM8K, PROGRAM_QUESTION, [
        f"```python\n{WRONG_PROGRAM}\n```", CRITIQUE, f"```python\n{RIGHT_PROGRAM}\n```", "Verdict: correct",
    ], tools=Toolbox([get_tool("python")]))
    stages = [reply for steps in STEP_CHECKS.values() for step in steps for reply in (step[2], step[3], *step[6:8])]
    selfcheck, model = play("selfcheck:n=2", GSM8K_COT, STEP_QUESTION, [WRONG_STEPS, RIGHT_STEPS, *stages])
    assert model.replies == []
    return {"critic": critic, "selfcheck": selfcheck}



@pytest.fixture
def checked_dir(tmp_path: Path, checked: dict[str, Trajectory]) -> Path:
    return write_run(tmp_path / "checked", list(checked.values()))



@pytest.fixture
def run_dir(tmp_path: Path, played: dict[str, Trajectory]) -> Path:
    return write_run(tmp_path / "run", list(played.values()))


def write_config(run: Path, spec: dict, **settings: object) -> None:
    """A config.json as `veriloop run` writes it: the settings and the whole experiment it
    filled from its flags (`spec`), from which the run's domain could be rebuilt."""
    from veriloop.experiment.schema import Experiment

    dumped = Experiment.model_validate({
        "name": "run", "models": {"main": {"id": "openai/scripted"}}, "strategies": ["standard"], **spec,
    }).model_dump(mode="json")
    (run / "config.json").write_text(json.dumps({"model": "openai/scripted", "seed": 0, **settings, "spec": dumped}))


@pytest.fixture
def task_run(tmp_path: Path, played: dict[str, Trajectory]) -> tuple[Path, Path]:
    """A run directory handed over by someone else: its config.json is a `--task` run's,
    naming a check file that writes a marker file when it is imported. Returns the run
    and the marker's path."""
    check, marker = booby_trapped_check(tmp_path)
    tasks = tmp_path / "sums.jsonl"
    tasks.write_text('{"q": "1+1", "a": "2"}\n')
    run = write_run(tmp_path / "task-run", [played["standard"]])
    write_config(run, {"tasks": [{"file": str(tasks), "prompt": "{q}", "check": f"python:{check}:check",
                                  "reference_field": "a"}], "n": 1},
                 task=str(tasks), check=f"python:{check}:check", domain="sums")
    return run, marker


@pytest.fixture
def huge_run(tmp_path: Path, played: dict[str, Trajectory]) -> Path:
    """A run directory whose config.json asks for 10^8 generated graph colouring instances."""
    run = write_run(tmp_path / "huge-run", [played["standard"]])
    write_config(run, {"domains": [{"name": "coloring"}], "n": 10**8}, domain="coloring", data=None)
    return run


# The page's script run by Node on a stand-in for the few DOM calls it makes: enough to
# draw the overview and read back what the filters offer, without a browser.
FAKE_DOM = r"""
const fs = require("fs"), vm = require("vm");
const script = fs.readFileSync(process.argv[2], "utf8"), data = fs.readFileSync(process.argv[3], "utf8");
class Node {
  constructor(tag, text) { this.tag = tag; this.kids = []; this.style = {}; this.own = text === undefined ? null : text;
    this.value = ""; this.scrollTop = 0; this.clientHeight = 600; }
  appendChild(k) { this.kids.push(k); return k; }
  removeChild(k) { this.kids = this.kids.filter(function (x) { return x !== k; }); return k; }
  replaceChildren() { this.kids = []; for (const k of arguments) this.appendChild(typeof k === "object" ? k : new Node("#text", String(k))); }
  setAttribute(k, v) { if (k === "value") this.value = String(v); }
  get firstChild() { return this.kids[0] || null; }
  get textContent() { return this.own !== null ? this.own : this.kids.map(function (k) { return k.textContent; }).join(""); }
  set textContent(v) { this.kids = []; this.own = String(v); }
}
const app = new Node("div");
const listeners = [];  // [node, event, handler]: the harness fires "toggle" on every <details>
Node.prototype.addEventListener = function (ev, fn) { listeners.push([this, ev, fn]); };
const document = {
  getElementById: function (id) { return id === "veriloop-data" ? { textContent: data } : app; },
  createElement: function (t) { return new Node(t); }, createElementNS: function (ns, t) { return new Node(t); },
  createTextNode: function (s) { return new Node("#text", s); },
};
const window = { innerHeight: 800, addEventListener() {}, requestAnimationFrame() {}, scrollTo() {} };
vm.runInNewContext(script, { document: document, window: window, location: { hash: "", protocol: "file:" },
  history: { replaceState() {}, pushState() {} }, URLSearchParams: URLSearchParams, setInterval() {} });
listeners.forEach(function (l) { if (l[1] === "toggle") { l[0].open = true; l[2](); } });
const selects = [], texts = [];
(function walk(n) {
  if (n.tag === "select") selects.push(n.kids.map(function (o) { return o.textContent; }));
  if (["h2", "h3", "th", "td", "summary", "pre", "b", "span", "p"].indexOf(n.tag) >= 0) texts.push(n.textContent);
  n.kids.forEach(walk);
})(app);
process.stdout.write(JSON.stringify({ selects: selects, texts: texts }));
"""


@pytest.fixture
def drawn(tmp_path: Path):
    """drawn(payload): what the page's script draws on its first page (Node on a stand-in
    DOM, every <details> opened): {"selects": the options of each filter, in order,
    "texts": the text of each heading, cell, summary, pre, b, span and p, in page order}."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js (the Debian package nodejs)")
    harness = tmp_path / "fake_dom.js"
    harness.write_text(FAKE_DOM)

    def run(payload: dict) -> list[list[str]]:
        from veriloop.view import page

        data = tmp_path / "payload.json"
        data.write_text(json.dumps(payload))
        script = tmp_path / "view.js"
        script.write_text(page.asset("view.js"))
        proc = subprocess.run([node, str(harness), str(script), str(data)], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return run


@pytest.fixture
def filter_options(drawn):
    """filter_options(payload): the options of each filter the page draws, in order."""
    return lambda payload: drawn(payload)["selects"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real audit of Game of 24 by the sound checker (2 instances, two families), then
    edited as a fooled judge would have judged: on every instance the claim-correct
    answer 0 is accepted, on the second instance its plain answer too, and the first
    accepted text is markup meant to break out of the page. audit.json is rewritten from
    the edited records by the audit's own report code."""
    import veriloop
    from veriloop.audits import get_family
    from veriloop.audits.engine import RECORDS, AuditItem
    from veriloop.audits.report import REPORT_JSON, audit_rows, write_report

    out = tmp_path_factory.mktemp("audit")
    veriloop.audit("game24", "sound", out=out, n=2, families=AUDIT_FAMILIES, progress=False)
    items = [AuditItem.model_validate_json(line) for line in (out / RECORDS).read_text().splitlines()]
    instances = sorted({i.instance_id for i in items})
    for item in items:
        if item.answer == 0 and (item.family == FOOLED or (item.family == "plain" and item.instance_id == instances[1])):
            item.accepted = True
        if item.answer == 0 and item.family == FOOLED and item.instance_id == instances[0]:
            item.text = DRESSED_MARKUP
    (out / RECORDS).write_text("".join(i.model_dump_json() + "\n" for i in items))
    meta = json.loads((out / REPORT_JSON).read_text())
    del meta["rows"]
    write_report(out, audit_rows(items, ["sound"], [get_family(f) for f in AUDIT_FAMILIES]), meta)
    return out


@pytest.fixture
def audit_dir(tmp_path: Path, audited: Path) -> Path:
    """A copy of the audit fixture's directory, for a test to change."""
    import shutil

    return Path(shutil.copytree(audited, tmp_path / "audit-seed0"))
