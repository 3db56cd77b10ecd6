"""`veriloop view`'s page in a real browser: the system Chromium (Debian's package, which
`scripts/setup.sh --browser` installs; VERILOOP_CHROMIUM names another) driven headless
by Playwright. The report is opened from disk with every other request refused, as a user
opens the file: the overview shows the run's figures, hostile replies show as text and run
nothing, filters update their counts, a trajectory's timeline and the side-by-side view
are drawn, with CRITIC's tool calls and SelfCheck's step checks. Each test leaves
screenshots in its pytest temporary directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from view_runs import FEEDBACK, HOSTILE, PROGRAM_QUESTION, PUZZLE, STEP_CHECKS, STEP_QUESTION, TOOL_CALLS, write_run

from veriloop.stats.metrics import summarise
from veriloop.view import data
from veriloop.view.report import build

if TYPE_CHECKING:
    from playwright.sync_api import PlaywrightContextManager

pytestmark = pytest.mark.browser


def sync_playwright() -> PlaywrightContextManager:
    # Imported when a test opens a browser: at the top, every xdist worker paid 0.25 s of its
    # collection for tests that are out of the fast tier.
    from playwright.sync_api import sync_playwright

    return sync_playwright()


@pytest.fixture(scope="module")
def smollm2_run(tmp_path_factory, smollm2_path) -> Path:
    """A real run of the tiny model: two strategies on two Game of 24 puzzles."""
    out = tmp_path_factory.mktemp("smollm2") / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "veriloop.cli", "run", "--model", "smollm2-135m", "-n", "2", "--strategy",
         "standard;backprompt:feedback=first,max_rounds=2", "--out", str(out), "--cache", str(out.parent / "c.sqlite")],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"see every trajectory: veriloop view {out}" in proc.stdout
    return out


def open_report(p, chromium: Path, report: Path):
    browser = p.chromium.launch(executable_path=str(chromium))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    seen: dict[str, list[str]] = {"requests": [], "dialogs": [], "errors": []}

    def route(r):
        seen["requests"].append(r.request.url)
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.goto(report.as_uri())
    page.wait_for_selector(".row:not(.head)")
    return browser, page, seen


def test_overview_of_a_real_run_and_a_scripted_one(tmp_path, chromium, smollm2_run, run_dir):
    report = tmp_path / "report.html"
    report.write_text(build([smollm2_run, run_dir], references=False).html, encoding="utf-8")
    loaded = data.load([smollm2_run, run_dir])
    groups: dict[tuple[str, str, int], list] = {}
    for source, t in loaded.trajectories:
        groups.setdefault((source.label, t.strategy, t.seed), []).append(t)
    with sync_playwright() as p:
        browser, page, seen = open_report(p, chromium, report)
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
        heads = page.locator("table.results thead th").all_text_contents()
        rows = [r.locator("td").all_text_contents() for r in page.locator("table.results tbody tr").all()]
        browser.close()
    assert len(rows) == len(groups)
    shown = {}
    for cells in rows:
        row = dict(zip(heads, cells))
        shown[(row["run"], row["strategy"], int(row["seed"]))] = row
    assert len(shown) == len(rows)
    for (label, strategy, seed), trajectories in groups.items():
        s = summarise(strategy, trajectories)
        row = shown[(label, strategy, seed)]
        assert row["n"] == str(s.n)
        assert row["accuracy"].startswith(f"{s.correct}/{s.n} = ")
        assert row["calls"] == str(s.model_calls)
        assert row["tokens (prompt+completion)"] == (
            f"{s.prompt_tokens + s.completion_tokens} ({s.prompt_tokens}+{s.completion_tokens})")
    # The real run: 2 puzzles under each of its 2 strategies.
    run_label = smollm2_run.parent.name + "/run"
    assert sorted(len(ts) for (label, _, _), ts in groups.items() if label == run_label) == [2, 2]
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith("file:") for url in seen["requests"])


@pytest.fixture
def browser_page(run_dir, chromium, tmp_path):
    report = run_dir / "report.html"
    report.write_text(build([run_dir], references=False).html, encoding="utf-8")
    with sync_playwright() as p:
        browser, page, seen = open_report(p, chromium, report)
        yield page, report, seen
        page.screenshot(path=str(tmp_path / "last.png"), full_page=True)
        browser.close()


def index_of(page, strategy_prefix: str, instance: str, seed: int = 0) -> int:
    return page.evaluate(
        """([prefix, inst, seed]) => {
            const d = JSON.parse(document.getElementById("veriloop-data").textContent);
            return d.T.findIndex(t => t.i === inst && d.groups[t.g].strategy.startsWith(prefix)
                                      && d.groups[t.g].seed === seed);
        }""", [strategy_prefix, instance, seed])


def test_hostile_reply_shows_as_text_and_runs_nothing(browser_page):
    page, report, seen = browser_page
    i = page.evaluate(
        """hostile => {
            const d = JSON.parse(document.getElementById("veriloop-data").textContent);
            return d.T.findIndex(t => d.S[t.ft] === hostile);
        }""", HOSTILE)
    assert i >= 0
    page.goto(f"{report.as_uri()}#view=t&t={i}")
    page.wait_for_selector(".round")
    texts = page.locator("pre").all_text_contents()
    assert HOSTILE in texts
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    assert page.evaluate("document.scripts.length") == 2
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith("file:") for url in seen["requests"])


def test_filters_update_the_counts(browser_page):
    page, _, seen = browser_page
    count = page.locator(".count b")
    assert count.inner_text() == "5"
    outcome = page.locator("select[name=outcome]")
    assert outcome.locator("option").all_text_contents() == ["all", "solved (3)", "unsolved (2)"]
    outcome.select_option("solved")
    assert count.inner_text() == "3"
    assert page.locator(".row:not(.head)").count() == 3
    verifier = page.locator("select[name=verifier]")
    # Counted among the solved ones: the false reject and the sound loop's agreement.
    assert verifier.locator("option").all_text_contents() == [
        "all", "agreed every round (1)", "false accept (0)", "false reject (1)", "no verdict (1)"]
    verifier.select_option("false reject")
    assert count.inner_text() == "1"
    page.locator(".filters input[type=search]").fill("nothing-like-this")
    assert count.inner_text() == "0"
    assert seen["errors"] == []


def test_timeline_shows_verdicts_feedback_and_diff(browser_page, played):
    page, report, seen = browser_page
    i = index_of(page, "backprompt:feedback=first,max_rounds=3", PUZZLE.id)
    page.goto(f"{report.as_uri()}#view=t&t={i}")
    page.wait_for_selector(".round")
    assert page.locator(".round").count() == 2
    assert FEEDBACK in page.locator(".verdict pre").all_text_contents()
    assert page.locator(".diff .del").first.inner_text().strip() != ""
    assert page.locator(".card .hd .badge").all_text_contents() == [c.role for c in played["sound"].calls]
    for seed, accepts, rejects in [(1, 1, 0), (0, 0, 1)]:  # the judge's false accept, then its false reject
        j = index_of(page, "backprompt:feedback=first,max_rounds=2", PUZZLE.id, seed)
        page.goto(f"{report.as_uri()}#view=t&t={j}")
        page.wait_for_selector(".round")
        badges = (page.locator(".round .badge.fa").count(), page.locator(".round .badge.fr").count())
        assert badges == (accepts, rejects)
    assert seen["errors"] == []


def test_side_by_side(browser_page):
    page, report, seen = browser_page
    a = index_of(page, "standard", PUZZLE.id)
    b = index_of(page, "backprompt:feedback=first,max_rounds=3", PUZZLE.id)
    page.goto(f"{report.as_uri()}#view=t&t={a}")
    page.wait_for_selector(".round")
    page.locator("a", has_text="side by side").first.click()
    page.wait_for_selector(".cols")
    columns = page.locator(".cols > div")
    assert columns.count() == 2
    page.goto(f"{report.as_uri()}#view=cmp&a={a}&b={b}")
    page.wait_for_selector(".cols .round")
    assert "standard" in columns.nth(0).locator("h3").first.inner_text()
    assert "backprompt" in columns.nth(1).locator("h3").first.inner_text()
    assert seen["errors"] == []


# CRITIC runs the program between writing it and critiquing it, in each round.
EXPECTED_CRITIC_ORDER = ["generate", "tool · python", "verify", "correct", "tool · python", "verify"]


def timeline_order(trajectory) -> list[str]:
    """The cards' badges in the page's order: a tool call just before the first call of its
    round whose prompt holds its observation, the others after the round's calls."""
    placed: set[int] = set()
    order: list[str] = []
    for n in sorted({c.round for c in trajectory.calls} | {x.round for x in trajectory.tool_calls}):
        for call in (c for c in trajectory.calls if c.round == n):
            for k, tool in enumerate(trajectory.tool_calls):
                seen = any(tool.text and tool.text in m["content"] for m in call.messages)
                if tool.round == n and k not in placed and seen:
                    order.append(f"tool · {tool.tool}")
                    placed.add(k)
            order.append(call.role + (f" · {call.stage}" if call.stage else ""))
        order += [f"tool · {t.tool}" for k, t in enumerate(trajectory.tool_calls) if t.round == n and k not in placed]
    return order


def test_tool_calls_and_step_checks_are_shown(tmp_path, chromium, checked_dir, checked):
    report = checked_dir / "report.html"
    report.write_text(build([checked_dir], references=False).html, encoding="utf-8")
    with sync_playwright() as p:
        browser, page, seen = open_report(p, chromium, report)
        page.goto(f"{report.as_uri()}#view=t&t={index_of(page, 'critic:', PROGRAM_QUESTION.id)}")
        page.wait_for_selector(".round")
        page.screenshot(path=str(tmp_path / "critic.png"), full_page=True)
        badges = page.locator(".round .card .hd .badge:first-child").all_text_contents()
        tools = page.locator(".card").filter(has=page.locator(".hd .badge", has_text="tool · "))
        shown_tools = [(card.locator(".hd .badge").inner_text(), card.locator(".hd .yes").all_text_contents(),
                        card.locator(".bd .role").all_text_contents(), card.locator(".bd pre").all_text_contents())
                       for card in tools.all()]
        page.goto(f"{report.as_uri()}#view=t&t={index_of(page, 'selfcheck:', STEP_QUESTION.id)}")
        page.wait_for_selector("table.steps")
        page.screenshot(path=str(tmp_path / "selfcheck.png"), full_page=True)
        checks = page.locator(".card").filter(has=page.locator("table.steps"))
        heads = [card.locator(".hd span").all_text_contents() for card in checks.all()]
        tables = [[row.locator("th, td").all_text_contents() for row in card.locator("table.steps tr").all()]
                  for card in checks.all()]
        collects = page.locator(".card").filter(has=page.locator(".hd .badge", has_text="check · collect"))
        shown_collects = [(card.locator(".hd span").nth(1).inner_text(), card.locator(".bd pre").last.inner_text())
                          for card in collects.all()]
        browser.close()
    assert badges == timeline_order(checked["critic"]) == EXPECTED_CRITIC_ORDER
    assert shown_tools == [("tool · python", ["ok"], ["input", "observation"], [tool_input, observation])
                           for _, _, tool_input, observation in TOOL_CALLS]
    assert heads == [["SelfCheck · steps", "steps checked 2/2", "confidence 0.538", "contradicted: 2"],
                     ["SelfCheck · steps", "steps checked 2/2", "confidence 0.851", "unrelated: 1"]]
    header = ["step", "text", "target", "information used", "regenerated", "comparison", "verdict"]
    verdicts = {1: "supports (+1)", -1: "contradicts (\u22121)", 0: "unrelated (0)"}
    assert tables == [
        [header, *[[str(index), text, target, f"facts {', '.join(map(str, facts)) or 'none'}; steps "
                    f"{', '.join(map(str, used)) or 'none'}", regenerated, comparison, verdicts[result]]
                   for index, text, target, _, facts, used, regenerated, comparison, result in steps]]
        for steps in STEP_CHECKS.values()
    ]
    assert shown_collects == [(f"step {step[0]}", step[3]) for steps in STEP_CHECKS.values() for step in steps]
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith("file:") for url in seen["requests"])


def test_a_calls_reasoning_and_what_was_sent_are_shown_folded(tmp_path, chromium, played):
    first = played["sound"].calls[0].model_copy(update={
        "reasoning": "<i>3 + 4 is 7</i>", "reasoning_tokens": 12, "cached_prompt_tokens": 30,
        "sent": {"model": "o3-mini", "max_completion_tokens": 64}})
    run = write_run(tmp_path / "reasoned", [played["sound"].model_copy(
        update={"calls": [first, *played["sound"].calls[1:]]})])
    report = run / "report.html"
    report.write_text(build([run], references=False).html, encoding="utf-8")
    with sync_playwright() as p:
        browser, page, seen = open_report(p, chromium, report)
        page.goto(f"{report.as_uri()}#view=t&t=0")
        page.wait_for_selector(".round")
        card = page.locator(".card").first
        header = card.locator(".hd").inner_text()
        summaries = card.locator("details summary").all_text_contents()
        card.locator("details.reasoning summary").click()
        shown = card.locator("details.reasoning pre").inner_text()
        browser.close()
    assert f"{first.prompt_tokens + first.completion_tokens} tokens" in header
    assert "12 reasoning" in header and "30 prompt cached" in header
    assert summaries[-2:] == ["parameters sent", "the model's reasoning (12 tokens)"]
    assert shown == "<i>3 + 4 is 7</i>" and seen["errors"] == []
