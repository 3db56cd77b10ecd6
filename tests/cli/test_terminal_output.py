"""What a user sees in the terminal: every table whole at 80 columns, progress during
long work (with model calls and the time left), and llama.cpp's thread count."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import veriloop, veriloop_process
from rich.console import Console, Group
from scripted import ScriptedModel

from veriloop.errors import VeriloopError
from veriloop.progress import ProgressReporter, count_calls
from veriloop.stats.metrics import StrategySummary
from veriloop.tables import fit_table, markdown_blocks, render_text, summary_text

ELLIPSIS = "\u2026"


def veriloop80(*args: str, columns: str | None = "80", env: dict[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A command as run with COLUMNS=80 and its output piped (not a terminal), in this process."""
    return veriloop(*args, columns=columns, env=env, unset=("VERILOOP_THREADS",), cwd=cwd)


def veriloop80_process(*args: str, columns: str | None = "80", env: dict[str, str] | None = None,
                       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """veriloop80 in a real process (helpers.veriloop_process), for the commands that load a model."""
    return veriloop_process(*args, columns=columns, env=env, unset=("VERILOOP_THREADS",), cwd=cwd)


def assert_fits(text: str, width: int = 80) -> None:
    assert text.strip()
    assert ELLIPSIS not in text
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, too_long


def markdown_cells(text: str) -> list[str]:
    """The cells of every Markdown table in `text` (bold and escapes undone), but the
    first column's header: a block of rows names each row, not the column."""
    cells: list[str] = []
    header = True
    for line in text.splitlines():
        if not line.startswith("|"):
            header = True
        elif not set(line) <= set("|-: "):
            row = [c.strip().replace("\\*", "*").replace("**", "") for c in line.strip().strip("|").split("|")]
            cells += row[1:] if header else row
            header = False
    return [c for c in cells if c]


def assert_every_word_shown(cells: list[str], printed: str) -> None:
    shown = {word.rstrip(":") for word in printed.split()}  # a header is shown as "header: value"
    for cell in cells:
        for word in cell.split():
            assert word.rstrip(":") in shown, (word, cell)


def summary(strategy: str, correct: int, n: int, rounds: float, calls: int, hits: int, prompt: int, completion: int,
            seconds: float) -> StrategySummary:
    return StrategySummary(
        strategy=strategy, n=n, correct=correct, accuracy=correct / n, accuracy_ci95=(0.0571, 0.5098),
        mean_rounds=rounds, model_calls=calls, cache_hits=hits, prompt_tokens=prompt, completion_tokens=completion,
        seconds=seconds, stop_reasons={},
    )


MAIN_JOB = [  # a main-job table as an earlier README gave it (any realistic figures do here)
    summary("standard", 0, 10, 1.0, 10, 0, 1752, 162, 9.3),
    summary("backprompt:verifier=llm,feedback=llm", 0, 10, 1.4, 32, 17, 8146, 1430, 38.9),
    summary("backprompt:verifier=sound,feedback=first", 0, 10, 5.0, 50, 10, 18246, 798, 60.9),
    summary("sampling:k=5", 2, 10, 4.6, 46, 0, 8062, 679, 37.9),
]


def figures(s: StrategySummary) -> list[str]:
    return [
        s.strategy, f"{s.correct}/{s.n}", f"{s.mean_rounds:.2f}", str(s.model_calls), str(s.cache_hits),
        str(s.prompt_tokens), str(s.completion_tokens), str(s.prompt_tokens + s.completion_tokens), f"{s.seconds:.1f}",
    ]


def has_figure(text: str, figure: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(figure)}(?![\w.])", text) is not None


# ------------------------------------------------------------------ tables, pure


@pytest.mark.parametrize("width", [40, 80, 160])
def test_run_table_shows_every_figure_at_any_width(width):
    text = summary_text(MAIN_JOB, width, title="game24 on qwen2.5-coder-1.5b: 10 instances (g1 .. g10), seed 0")
    assert_fits(text, width)
    for s in MAIN_JOB:
        for figure in figures(s):
            assert has_figure(text, figure), (width, figure)


def test_run_table_is_a_grid_when_wide_and_blocks_when_narrow():
    wide = summary_text(MAIN_JOB, 160).splitlines()
    assert any(line.startswith("\u2503 strategy") and "tokens (prompt+completion)" in line for line in wide)
    assert any(re.fullmatch(r"\u2502 standard +\u2502 +0/10 = 0% \u2502 +6%-51% \u2502 +1\.00 \u2502 +10 \u2502 +0 \u2502"
                            r" +1914 \(1752\+162\) \u2502 +9\.3 \u2502", line) for line in wide)
    narrow = summary_text(MAIN_JOB[3:], 80, title="a title").splitlines()
    assert narrow == [
        "a title",
        "sampling:k=5",
        "  accuracy: 2/10 = 20%",
        "  95% CI: 6%-51%",
        "  mean rounds: 4.60",
        "  model calls: 46",
        "  cache hits: 0",
        "  tokens (prompt+completion): 8741 (8062+679)",
        "  seconds: 37.9",
    ]


def test_a_table_between_grid_and_blocks_wraps_headers_not_figures():
    headers = ["t", "SelfCheck TPR", "FPR", "balanced acc.", "global TPR", "FPR", "balanced acc.", "paper FPR"]
    rows = [["0.5", "0.73", "1.00", "0.52", "1.00", "0.96", "0.50", "0.98"]]
    text = render_text(fit_table(headers, rows, 72), 72)
    assert_fits(text, 72)
    assert "\u2502 0.5 \u2502" in text and "0.73" in text and "0.98" in text
    assert "balanced" in text and "acc." in text and "balanced acc." not in text  # the header wrapped


def test_a_long_word_never_gets_an_ellipsis():
    path = "/a/very/long/path/to/some/model/weights/that/is/wider/than/the/line/qwen2.5-coder-1.5b-instruct.gguf"
    text = render_text(fit_table(["name", "path"], [["qwen", path]], 40), 40)
    assert_fits(text, 40)
    assert "".join(line.strip() for line in text.splitlines()[1:]) == f"path: {path}"


def test_markdown_report_tables_fit_80_columns_with_every_cell():
    report = (
        "# Table 1: accuracy by prompting scheme (m)\n\nA paragraph that is longer than eighty characters, so that "
        "the console has to wrap it somewhere.\n\n"
        "| domain | S.P. | LLM+LLM | Sound B.F. | Sound F.E.F. | Sound A.E.F. | Sampling k=15 | Sampling k=25 | S.C. k=15 |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| game24 (ours, n=2) | 0% (0-66%) | 0% | 0% | 0% | n/a | 0% | 0% | 0% |\n"
        "| blocksworld (ours, n=2) | 0% (0-66%) | 0% | 0% | 0% | 0% | 0% | **50% (9-91%)** | 0% |\n"
        "| CRITIC\\* | 30.0 (10.8-60.3) | 37.5 (7.2-67.8) | | | | | | |\n"
    )
    text = render_text(Group(*markdown_blocks(report, 80)), 80)
    assert_fits(text)
    assert_every_word_shown(markdown_cells(report), text)
    assert "\n".join([
        "blocksworld (ours, n=2)", "  S.P.: 0% (0-66%)", "  LLM+LLM: 0%", "  Sound B.F.: 0%", "  Sound F.E.F.: 0%",
        "  Sound A.E.F.: 0%", "  Sampling k=15: 0%", "  Sampling k=25: 50% (9-91%)", "  S.C. k=15: 0%",
        "CRITIC*", "  S.P.: 30.0 (10.8-60.3)", "  LLM+LLM: 37.5 (7.2-67.8)",  # empty cells are left out
    ]) in text


def test_console_width_follows_columns_and_stays_wide_when_piped(monkeypatch):
    from veriloop.cli.common import _stdout_width

    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    monkeypatch.setenv("COLUMNS", "80")
    assert _stdout_width() == 80
    monkeypatch.setenv("COLUMNS", "not a width")
    assert _stdout_width() == 160
    monkeypatch.delenv("COLUMNS")
    assert _stdout_width() == 160


# ------------------------------------------------------------------ tables, real commands


def test_models_list_and_tools_list_fit_80_columns():
    from veriloop.models.packs import PACKS, pack_path

    listed = veriloop80("models", "list")
    assert listed.returncode == 0, listed.stderr
    assert_fits(listed.stdout)
    for name, pack in PACKS.items():
        assert has_figure(listed.stdout, f"{pack.size / 1e6:.0f}")
        assert name in listed.stdout.split()
        assert f"  path: {pack_path(name)}" in listed.stdout.splitlines()
    wide = veriloop80("models", "list", columns=None)
    assert max(len(line) for line in wide.stdout.splitlines()) > 80  # piped without COLUMNS: one wide grid
    tools = veriloop80("tools", "list")
    assert tools.returncode == 0, tools.stderr
    assert_fits(tools.stdout)


def test_verify_prints_one_json_line_whatever_the_width():
    # verify prints verdicts for programs, not a table: a line must stay one JSON document.
    proc = veriloop80("verify", "game24", "--instance", "1 1 4 6",
                                 "--answer", "(1 + 1) * 4 * 6 / 2 - 1 - 1 + 1 + 1")
    assert proc.returncode == 1
    (line,) = proc.stdout.splitlines()
    assert json.loads(line)["ok"] is False and len(line) > 80


@pytest.mark.model
def test_run_at_80_columns_shows_every_figure_of_the_summary(tmp_path, smollm2_path):
    args = ("run", "--model", "smollm2-135m", "-n", "1", "-s", "standard", "-s", "sampling:k=2",
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "calls.sqlite"))
    proc = veriloop80_process(*args)
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout)
    lines = proc.stdout.splitlines()
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())["strategies"]
    labels = {"standard:temperature=0": "standard", "sampling:k=2,temperature=1,verifier=sound": "sampling:k=2"}
    assert set(saved) == set(labels)
    for canonical, s in saved.items():
        block = lines[lines.index(labels[canonical]):][:8]
        assert block[1] == f"  accuracy: {s['correct']}/{s['n']} = {s['accuracy']:.0%}"
        assert block[2] == f"  95% CI: {s['accuracy_ci95'][0]:.0%}-{s['accuracy_ci95'][1]:.0%}"
        assert block[3] == f"  mean rounds: {s['mean_rounds']:.2f}"
        assert block[4] == f"  model calls: {s['model_calls']}"
        assert block[5] == f"  cache hits: {s['cache_hits']}"
        total = s["prompt_tokens"] + s["completion_tokens"]
        assert block[6] == f"  tokens (prompt+completion): {total} ({s['prompt_tokens']}+{s['completion_tokens']})"
        assert block[7] == f"  seconds: {s['seconds']:.1f}"
    # Progress reached stderr with the trajectories, the model calls, their tokens and the time left.
    calls = sum(s["model_calls"] for s in saved.values())
    tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in saved.values())
    assert re.search(rf"^game24 x 2 strategies: 2/2, {calls} calls, {tokens} tok, \d+:\d\d:\d\d, eta 0:00:00$",
                     proc.stderr, re.M)
    wide = veriloop80_process(*args, columns=None)  # piped without COLUMNS: the resumed run, one wide grid
    assert wide.returncode == 0, wide.stderr
    assert max(len(line) for line in wide.stdout.splitlines()) > 80
    assert "\u2503 strategy" in wide.stdout


def test_study_at_80_columns_shows_every_cell_and_reports_each_judgement(tmp_path, instant_server):
    out = tmp_path / "study"
    proc = veriloop80("study", "verification", "-n", "2", *instant_server, "--out", str(out),
                      "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout)
    assert_every_word_shown(markdown_cells((out / "table2.md").read_text()), proc.stdout)
    judged = len((out / "verification.jsonl").read_text().splitlines())
    assert re.search(rf"^game24: verification study: 0/{judged}, \d+ calls, ", proc.stderr, re.M)  # total known first
    assert re.search(rf"^game24: verification study: {judged}/{judged}, \d+ calls, .*, eta 0:00:00$", proc.stderr,
                     re.M)


@pytest.mark.parametrize(("command", "options", "report", "stages"), [
    ("self-verification", ("--instances", "1", "--domains", "game24", "--max-rounds", "1"), "table1.md",
     ("cell 1/7: main · game24 · S.P. · seed 0: ", "cell 7/7: main · game24 · S.C. k=15 · seed 0: ",
      "game24: verification study: ")),
    ("critic", ("--instances", "1", "--tasks", "gsm8k", "--k", "1"), "critic.md",
     ("cell 1/6: main · gsm8k · PoT · seed 0: ", "cell 6/6: main · gsm8k · Rejection Sampling · seed 0: ")),
    ("selfcheck", ("--questions", "1", "--solutions", "1", "--majority-cap", "1"), "selfcheck.md",
     ("cell 1/2: main · gsm8k-cot · SelfCheck · seed 0: ", "cell 2/2: main · gsm8k-cot · Global checker · seed 0: ")),
])
def test_reproduce_at_80_columns(tmp_path, instant_server, shared_data, command, options, report, stages):
    out = tmp_path / command
    proc = veriloop80("reproduce", command, *instant_server, *options, "--data-root", str(shared_data),
                      "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout)
    assert_every_word_shown(markdown_cells((out / report).read_text()), proc.stdout)
    assert [stage for stage in stages if stage not in proc.stderr] == []  # each stage's progress was shown


def test_selfcheck_at_80_columns_shows_each_step_and_its_progress(tmp_path, instant_server):
    solution = "Step 1: Tom starts with 3 apples.\nStep 2: He buys 4, so 3 + 4 = 7.\nAnswer: 7"
    proc = veriloop80("selfcheck", "--question", "Tom has 3 apples and buys 4 more. How many has he?",
                      "--solution", solution, *instant_server, "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr  # both steps unrelated: confidence 0.709, above 0.6
    assert_fits(proc.stdout)
    lines = proc.stdout.splitlines()
    assert lines[:6] == [
        "SelfCheck with openai/scripted",
        "1. Tom starts with 3 apples.",
        "  aims to: Step 1: 3 + 4 = 7.",
        "  uses: info 1, info 2",
        "  independent redo: Step 1: 3 + 4 = 7. answer = 7 Answer: 7 Verdict: correct",
        "  result: not related (unreadable)",
    ]
    assert lines[-2].startswith("confidence 0.709 (0 contradicted, 2 unrelated of 2 steps)")
    assert re.search(r"^selfcheck: steps checked: 0/2, 0 calls, ", proc.stderr, re.M)
    assert re.search(r"^selfcheck: steps checked: 2/2, 8 calls, .*, eta 0:00:00$", proc.stderr, re.M)


# ------------------------------------------------------------------ progress


def test_study_reports_each_judgement_with_its_total_before_the_first_instance_is_done(tmp_path):
    from veriloop.domains import get_domain
    from veriloop.studies.verification import run_verification_study

    domain = get_domain("game24")
    instances = domain.load_instances(None, n=2)
    model = ScriptedModel(["Answer: 1 + 1"] * 200)
    reports: list[tuple[int, int, int]] = []

    def on_progress(done: int, total: int) -> None:
        reports.append((done, total, model.requests))

    items = asyncio.run(run_verification_study(model, domain, instances, tmp_path / "study", on_progress=on_progress))
    total = len(items)
    first_instance = sum(i.instance_id == instances[0].id for i in items)
    assert 0 < first_instance < total
    # Two greedy answers first, then one call per judgement, each reported as it is done.
    assert reports == [(done, total, len(instances) + done) for done in range(total + 1)]
    reports.clear()
    asyncio.run(run_verification_study(model, domain, instances, tmp_path / "study", on_progress=on_progress))
    assert reports == [(total, total, 2 * len(instances) + total)]  # resumed: only the greedy answers again


def test_model_calls_are_counted_as_each_comes_back(tmp_path):
    from veriloop.domains import get_domain
    from veriloop.runs.runner import run_experiment
    from veriloop.strategies import parse_strategy

    domain = get_domain("game24")
    instance = domain.load_instances(None, n=1)
    seen: list[int] = []

    class Watched(ScriptedModel):
        async def generate(self, messages, params):  # type: ignore[no-untyped-def]
            seen.append(reporter.calls)
            return await super().generate(messages, params)

    finished: list[tuple[int, int, int]] = []
    model = Watched(["Answer: 1 + 1"] * 3)
    strategy = parse_strategy("backprompt:feedback=first,max_rounds=3")
    with ProgressReporter("run", live=False, plain_lines=False) as reporter:
        asyncio.run(run_experiment(model, domain, [strategy], instance, tmp_path / "run",
                                   on_progress=lambda d, t: finished.append((d, t, reporter.calls))))
    assert seen == [0, 1, 2]  # the count moved inside the one trajectory, call by call
    assert finished == [(0, 1, 0), (1, 1, 3)]
    count_calls(5)  # no reporter open any more: nothing to count into
    assert reporter.calls == 3


def test_status_gives_units_calls_time_and_eta_from_this_stage():
    clock = [100.0]
    console = Console(file=io.StringIO(), width=80, color_system=None)
    reporter = ProgressReporter("study", live=False, console=console, now=lambda: clock[0])
    with reporter:
        reporter.update(2, 10)  # two units resumed from disk: they took no time here
        clock[0] = 130.0
        count_calls(7)
        reporter.update(4, 10)
        assert reporter.eta() == 90.0  # two units in 30 s, six to go
        reporter.set_stage("second stage")
        reporter.update(0, 3)
        clock[0] = 160.0
        reporter.update(1, 3)
    assert console.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        "study: 2/10, 0 calls, 0:00:00, eta ?",
        "study: 4/10, 7 calls, 0:00:30, eta 0:01:30",
        "second stage: 0/3, 7 calls, 0:00:30, eta ?",
        "second stage: 1/3, 7 calls, 0:01:00, eta 0:01:00",
    ]


def test_work_that_calls_no_model_shows_no_call_count():
    clock = [0.0]
    console = Console(file=io.StringIO(), width=80, color_system=None)
    with ProgressReporter("assembling pack (bytes)", live=False, console=console, now=lambda: clock[0],
                          counts_calls=False) as reporter:
        reporter.update(0, 200)
        clock[0] = 10.0
        reporter.update(100, 200)
    assert console.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        "assembling pack (bytes): 0/200, 0:00:00, eta ?",
        "assembling pack (bytes): 100/200, 0:00:10, eta 0:00:10",
    ]


def test_live_bar_line_fits_80_columns():
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    clock = [0.0]
    reporter = ProgressReporter("mystery_blocksworld: verification study", live=False, plain_lines=False,
                                console=console, now=lambda: clock[0])
    reporter.update(3, 45)
    clock[0] = 60.0
    reporter.update(13, 45)
    reporter.calls_done(37)
    reporter._bar.update(reporter._task, completed=13, total=45)
    console.print(reporter._bar.make_tasks_table(reporter._bar.tasks))
    (line,) = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert len(line) <= 80 and ELLIPSIS not in line
    assert line.startswith("mystery_blocksworld: verification study ")
    assert line.endswith(" 13/45, 37 calls, 0:01:00, eta 0:03:12")


def test_selfcheck_reports_each_step_checked():
    from veriloop.selfcheck import CheckSettings, check_solution

    model = ScriptedModel(["The step aims to add.", "Information: 1; Steps: none", "3 + 4 = 7", "supports"] * 2)
    reports: list[tuple[int, int, int]] = []
    solution = "Step 1: 3 + 4 = 7.\nStep 2: So 7 apples.\nStep 3: not checked."
    asyncio.run(check_solution(model, "Tom has 3 apples and buys 4.", solution, CheckSettings(max_steps=2),
                               on_progress=lambda d, t: reports.append((d, t, model.requests))))
    assert reports == [(0, 2, 0), (1, 2, 4), (2, 2, 8)]


# ------------------------------------------------------------------ llama.cpp threads


def test_thread_count_precedence_and_bad_values(monkeypatch):
    from veriloop.models.llamacpp import llama_threads

    monkeypatch.delenv("VERILOOP_THREADS", raising=False)
    assert llama_threads() == max(1, os.cpu_count() or 1)
    monkeypatch.setenv("VERILOOP_THREADS", "3")
    assert llama_threads() == 3
    assert llama_threads(5) == 5
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("VERILOOP_THREADS", bad)
        with pytest.raises(VeriloopError, match=rf"^VERILOOP_THREADS: .* 1 or more, not '{re.escape(bad)}'$"):
            llama_threads()
    for bad_arg in (0, -2, 1.5, True):
        with pytest.raises(VeriloopError, match=r"^threads: .* 1 or more"):
            llama_threads(bad_arg)  # type: ignore[arg-type]


def model_commands() -> list[tuple[str, ...]]:
    import typer
    from typer.core import TyperGroup

    from veriloop.cli import app

    found: list[tuple[str, ...]] = []

    def walk(command: typer.core.TyperCommand | TyperGroup, path: tuple[str, ...]) -> None:
        if isinstance(command, TyperGroup):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
        elif any("--model" in p.opts for p in command.params):
            found.append(path)

    walk(typer.main.get_command(app), ())
    return found


def test_every_command_that_loads_a_model_takes_threads():
    from typer.testing import CliRunner

    from veriloop.cli import app

    commands = model_commands()
    assert set(commands) == {("run",), ("study", "verification"), ("reproduce", "self-verification"),
                             ("reproduce", "critic"), ("reproduce", "selfcheck"), ("selfcheck",), ("chat",),
                             ("rescore",), ("audit",)}
    for path in commands:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        assert "--threads N Threads of a local (llama.cpp) model (or VERILOOP_THREADS; default: the CPU count)." in text


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_threads_option_is_one_line_naming_the_option(value):
    proc = veriloop80("run", "--threads", value)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: --threads: the number of llama.cpp threads must be a whole number, 1 or more, not '{value}'"
    ]


@pytest.mark.model
def test_bad_threads_variable_is_one_line_naming_the_variable(smollm2_path, tmp_path):
    proc = veriloop80_process("run", "--model", "smollm2-135m", "-n", "1", "--out", str(tmp_path / "run"),
                              env={"VERILOOP_THREADS": "lots"})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: VERILOOP_THREADS: the number of llama.cpp threads must be a whole number, 1 or more, not 'lots'"
    ]


def loaded_llama(model: object) -> object:
    while hasattr(model, "inner"):  # under a cache or a counter
        model = model.inner
    return model._main.llm  # type: ignore[attr-defined]


@pytest.mark.model
def test_the_loaded_llama_computes_with_the_thread_count_given(monkeypatch, smollm2_path):
    import veriloop
    from veriloop.cli.common import ModelChoice
    from veriloop.models import load_backend

    monkeypatch.setenv("VERILOOP_THREADS", "1")
    by_variable = loaded_llama(load_backend("smollm2-135m"))
    assert (by_variable.n_threads, by_variable.context_params.n_threads,  # type: ignore[attr-defined]
            by_variable.context_params.n_threads_batch) == (1, 1, 1)  # type: ignore[attr-defined]
    by_option = loaded_llama(ModelChoice("smollm2-135m", use_cache=False, threads="3").load())
    assert (by_option.n_threads, by_option.context_params.n_threads,  # type: ignore[attr-defined]
            by_option.context_params.n_threads_batch) == (3, 3, 3)  # type: ignore[attr-defined]
    by_api = veriloop.model("smollm2-135m", threads=3, cache=False)
    assert loaded_llama(by_api) is by_option  # the same threads share one loaded model
    monkeypatch.delenv("VERILOOP_THREADS")
    default = loaded_llama(load_backend("smollm2-135m"))
    assert default.n_threads == max(1, os.cpu_count() or 1)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ paired comparisons


def test_paired_block_fits_80_columns_one_pair_per_line_when_it_can():
    from veriloop.stats.paired import paired_comparison
    from veriloop.tables import paired_text

    none, two = [False] * 10, [False, True, False, True] + [False] * 6  # the README's main job: sampling solved 2
    pairs = [paired_comparison(none, two, names=("standard", "sampling:k=5")),
             paired_comparison(none, none, names=("backprompt:verifier=llm,feedback=llm",
                                                  "backprompt:verifier=sound,feedback=first"))]
    narrow = paired_text(pairs, 80)
    assert_fits(narrow)
    assert narrow.splitlines()[0].startswith("Paired, on the 10 instances both finished: ")
    # A pair that does not fit one line: the pair (wrapped), then its figures.
    assert narrow.splitlines()[3:] == [
        "  sampling:k=5 vs standard: +20 points (+0 to +50), won 2, lost 0, p = 0.500",
        "  backprompt:verifier=sound,feedback=first vs",
        "      backprompt:verifier=llm,feedback=llm",
        "    +0 points (+0 to +0), won 0, lost 0, p = 1.000",
    ]
    wide = paired_text(pairs, 160).splitlines()
    assert wide[-1] == ("  backprompt:verifier=sound,feedback=first vs backprompt:verifier=llm,feedback=llm: "
                        "+0 points (+0 to +0), won 0, lost 0, p = 1.000")
    assert paired_text([], 80) == ""


def test_run_prints_its_paired_comparisons_after_the_table(tmp_path, instant_server):
    out = tmp_path / "run"
    proc = veriloop80("run", *instant_server, "-n", "3", "-s", "standard", "-s", "sampling:k=2", "--out", str(out),
                      "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout)
    (paired,) = json.loads((out / "summary.json").read_text())["paired"]
    assert (paired["a"], paired["b"], paired["n"]) == ("standard:temperature=0",
                                                       "sampling:k=2,temperature=1,verifier=sound", 3)
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Paired, on the 3 instances both finished"))
    assert lines[start - 1] == ""
    # The scripted server's one reply solves nothing: no instance tells the two apart.
    assert (paired["a_only"], paired["b_only"], paired["difference_ci95"], paired["p_value"]) == (0, 0, [0, 0], 1.0)
    assert "  sampling:k=2 vs standard: +0 points (+0 to +0), won 0, lost 0, p = 1.000" in lines[start:]


def test_printable_escapes_what_a_terminal_obeys_and_nothing_else():
    from veriloop.printable import printable

    obeyed = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x61C, 0x200E, 0x200F, 0x2028, 0x2029,
                               *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))
    shown = printable(obeyed)
    assert shown == "".join(f"\\x{ord(c):02x}" if ord(c) <= 0xFF else f"\\u{ord(c):04x}" for c in obeyed)
    assert printable("naïve C:\\runs 24 ≥ 5 émoji 🎲 עברית") == "naïve C:\\runs 24 ≥ 5 émoji 🎲 עברית"
    assert printable("a\tb\nc\x1b", keep="\n") == "a\\x09b\nc\\x1b"
