"""The paper reproductions as shipped experiment files: `veriloop reproduce X` is
`veriloop eval X` with its options as --set overrides, and the report of the file writes
the paper's own tables from the cells."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from helpers import TEST_DATA, assert_one_line_error, veriloop

from veriloop.errors import VeriloopError
from veriloop.experiment.engine import plan
from veriloop.experiment.matrix import only_domains, path_component
from veriloop.experiment.overrides import (
    find_experiment,
    load_experiment,
    overrides,
    parse_experiment,
    shipped_experiments,
)
from veriloop.models.packs import DEFAULT_MODEL

SV_LABELS = ["S.P.", "LLM+LLM", "Sound B.F.", "Sound F.E.F.", "Sound A.E.F.", "Sampling k=15", "Sampling k=25",
             "S.C. k=15"]
SV_SPECS = ["standard", "backprompt:verifier=llm,feedback=llm", "backprompt:verifier=sound,feedback=binary",
            "backprompt:verifier=sound,feedback=first", "backprompt:verifier=sound,feedback=all", "sampling:k=15",
            "sampling:k=25", "self-consistency:k=15"]
SV_DOMAINS = ["game24", "coloring", "blocksworld", "mystery_blocksworld"]


def command(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A command as a user runs it (in this process), with no thread count set in the environment."""
    return veriloop(*args, cwd=cwd, unset=("VERILOOP_THREADS",))


def test_the_self_verification_file_is_the_papers_table_1(shared_data, tmp_path):
    spec = load_experiment(find_experiment("self-verification"), [f"data_root={json.dumps(str(shared_data))}"])
    assert spec.name == "self-verification"
    assert {name: entry.id for name, entry in spec.models.items()} == {"main": DEFAULT_MODEL}
    # `veriloop reproduce self-verification --help` names these values as the file's.
    assert load_experiment(find_experiment("self-verification")).data_root == "@datasets"
    assert (spec.n, spec.max_rounds, spec.seeds, spec.report, spec.report_options) == (2, 15, [0],
                                                                                       "self-verification", {})
    assert [(s.key, s.spec) for s in spec.strategies] == list(zip(SV_LABELS, SV_SPECS))
    assert [(d.name, d.data, d.offset, d.generate_if_missing) for d in spec.domains] == [
        ("game24", "game24/24.csv", 900, True), ("coloring", "graph_coloring", 0, True),
        ("blocksworld", "planbench/blocksworld", 0, True),
        ("mystery_blocksworld", "planbench/mystery_blocksworld", 0, True),
    ]
    plans = plan(spec, tmp_path / "sv")
    # 4 domains x 8 conditions, but no all-errors condition on Game of 24.
    assert [(p.cell.model, p.cell.domain, p.cell.strategy, p.cell.seed) for p in plans] == [
        ("main", d, label, 0) for d in SV_DOMAINS for label in SV_LABELS if (d, label) != ("game24", "Sound A.E.F.")
    ]
    assert len(plans) == 31
    assert plans[0].run_dir == tmp_path / "sv" / "main" / "game24" / "S.P.-seed0"
    assert plans[-1].run_dir == tmp_path / "sv" / "main" / "mystery_blocksworld" / "S.C._k=15-seed0"
    assert all(p.planned == 2 for p in plans)
    assert [i.id for i in plans[0].domain.instances] == [i.id for i in plans[0].domain.domain.load_instances(
        str(shared_data / "game24" / "24.csv"), n=2, offset=900)]
    assert {p.strategy.canonical for p in plans if p.cell.strategy == "Sound F.E.F."} == {
        "backprompt:feedback=first,max_rounds=15,temperature=0,verifier=sound"}


def test_eval_list_shows_the_reproduction_with_its_description_line():
    proc = command("eval", "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    first = ("self-verification: The self-verification paper's Table 1 (Stechly, Valmeekam, Kambhampati), "
             "with Tables 2 and A2-A6 and Figure 2.")
    assert first in lines
    assert lines[lines.index(first) + 1] == f"  {shipped_experiments()['self-verification']}"


def test_set_changes_the_plan_of_the_shipped_file(shared_data, tmp_path):
    proc = command("eval", "self-verification", "--dry-run", "--set", "n=1", "--set", "max_rounds=2",
                   "--set", f"data_root={json.dumps(str(shared_data))}", "--out", str(tmp_path / "sv"))
    assert proc.returncode == 0, proc.stderr
    rows = [" ".join(line.strip("│ ").split()).split(" │ ") for line in proc.stdout.splitlines()
            if line.startswith("│")]
    assert [r[:6] for r in rows[:3]] == [["main", "game24", label, "0", "-", "0/1"] for label in SV_LABELS[:3]]
    # One instance each; backprompt with two rounds: at most 2 answers (+ 2 judgements and 1 critique with LLM+LLM).
    assert [r[6] for r in rows[:3]] == ["1", "5", "2"]
    assert len(rows) == 31 and all(r[5] == "0/1" for r in rows)
    assert "31 cells, 31 trajectories to run" in proc.stdout
    assert proc.stdout.strip().endswith(
        "then the self-verification report (the model calls of its own, if any, are not in the estimate)")


@pytest.mark.parametrize(("paper", "cells"), [("self-verification", 31), ("critic", 29)])
def test_reproduce_options_are_the_same_cells_as_eval_with_set(shared_data, tmp_path, paper, cells):
    out, root = str(tmp_path / paper), str(shared_data)
    reproduced = command("reproduce", paper, "--model", "smollm2-135m", "--instances", "1", "--data-root", root,
                         "--dry-run", "--out", out)
    evaluated = command("eval", paper, "--set", "models.main.id=smollm2-135m", "--set", "n=1",
                        "--set", f"data_root={json.dumps(root)}", "--dry-run", "--out", out)
    assert reproduced.returncode == 0, reproduced.stderr
    assert evaluated.returncode == 0, evaluated.stderr
    assert reproduced.stdout == evaluated.stdout
    assert f"{cells} cells, {cells} trajectories to run" in reproduced.stdout


def test_reproduce_options_map_to_overrides(shared_data, tmp_path):
    proc = command("reproduce", "self-verification", "--domains", "coloring,game24", "--max-rounds", "3",
                   "--seed", "4", "--instances", "1", "--data-root", str(shared_data), "--dry-run",
                   "--set", "domains.1.n=2")
    assert proc.returncode == 0, proc.stderr
    rows = [" ".join(line.strip("│ ").split()).split(" │ ") for line in proc.stdout.splitlines()
            if line.startswith("│")]
    # The file's domain order, not the option's; its exclude rule still drops game24's A.E.F.
    assert [r[1:4] for r in rows] == [["game24", label, "4"] for label in SV_LABELS if label != "Sound A.E.F."] + [
        ["coloring", label, "4"] for label in SV_LABELS]
    # --set comes after the options: domains.1 is coloring, 2 instances there.
    assert {r[5] for r in rows if r[1] == "coloring"} == {"0/2"} and {r[5] for r in rows if r[1] == "game24"} == {
        "0/1"}
    assert proc.stdout.startswith(f"self-verification: 15 cells in runs/reproduce-self-verification-{DEFAULT_MODEL}"
                                  "-n1-seed4/")


def test_reproduce_refuses_an_unknown_domain():
    assert_one_line_error(command("reproduce", "self-verification", "--domains", "chess", "--dry-run"),
                          "unknown domain 'chess' for this reproduction; choose from: game24, coloring, blocksworld, "
                          "mystery_blocksworld")


def test_only_domains_keeps_the_rules_about_the_domains_kept():
    spec = load_experiment(find_experiment("self-verification"))
    kept = only_domains(spec, ["mystery_blocksworld", "game24"])
    assert [d.key for d in kept.domains] == ["game24", "mystery_blocksworld"]
    assert [(r.domain, r.strategy) for r in kept.exclude] == [(["game24"], "Sound A.E.F.")]
    assert only_domains(spec, ["coloring"]).exclude == []
    with pytest.raises(VeriloopError, match="unknown domain 'chess' for self-verification; choose from: game24, "):
        only_domains(spec, ["chess"])


def test_overrides_keep_text_text_and_leave_out_what_was_not_given():
    given = overrides({"models.main.id": "123", "n": 2, "seeds": [4], "data_root": Path("a b"), "max_rounds": None,
                       "models.main.cache": False})
    assert given == [("models.main.id", "123"), ("n", 2), ("seeds", [4]), ("data_root", Path("a b")),
                     ("models.main.cache", False)]
    # Applied as data: text that looks like a number stays text, a path becomes its text.
    spec = parse_experiment(with_report("max_rounds = 3"), sets=[("name", "123"), *given[1:]])
    assert (spec.name, spec.n, spec.seeds, spec.data_root, spec.max_rounds, spec.models["main"].cache) == (
        "123", 2, [4], "a b", 3, False)


def with_report(lines: str) -> str:
    """A small experiment with `lines` at the top level (from line 3)."""
    return (f'name = "r"\nstrategies = ["standard"]\n{lines}\n[models.main]\nid = "openai/m"\n[[domains]]\n'
            'name = "game24"\n')


OPTIONS = "the options of report 'self-verification' are: verification_instances"


@pytest.mark.parametrize(("lines", "message"), [
    ('report = "nope"', "line 3: report: unknown report 'nope'; choose one of: self-verification, critic, selfcheck, audit"),
    ('report = "self-verification"\nreport_options = {verification_instance = 2}',
     f"line 4: report_options.verification_instance: unknown option; {OPTIONS}"),
    ('report = "self-verification"\nreport_options = {verification_instances = 0}',
     f"line 4: report_options.verification_instances: Input should be greater than or equal to 1; {OPTIONS}"),
    ("report_options = {verification_instances = 2}",
     'line 3: report_options: report_options without a report = "..." to pass them to'),
    ('report = "self-verification"\nseeds = [0, 1]',
     "line 3: report: the self-verification report compares the conditions of one model at one seed, not of 1 "
     "model(s) (main) at 2 seed(s) (0, 1): run one at a time, e.g. with --set seeds=[1]"),
    ('report = "critic"\ntasks = [{file = "t.jsonl", prompt = "{q}"}]',
     "line 4: tasks: the critic report reads the tasks hotpotqa, gsm8k, math500, svamp, toxicity, not tasks of your "
     "own"),
    ('report = "critic"\nreport_options = {hallucination_samples = 1}',
     "line 4: report_options.hallucination_samples: Input should be greater than or equal to 2; the options of "
     "report 'critic' are: table5, hallucination_n, hallucination_samples"),
    ('report = "selfcheck"',
     "line 6: domains.0: the selfcheck report reads one dataset, a [[domains]] entry named one of gsm8k-cot, "
     "math500-cot, mathqa, not game24"),
    ('report = "selfcheck"\nreport_options = {majority_cap = 0}',
     "line 4: report_options.majority_cap: Input should be greater than or equal to 1; the options of report "
     "'selfcheck' are: majority_cap"),
])
def test_report_errors_are_found_when_the_file_is_read(lines, message):
    with pytest.raises(VeriloopError) as caught:
        parse_experiment(with_report(lines))
    assert str(caught.value) == f"<experiment>, {message}"


TABLE1_HEAD = [
    "# Table 1: accuracy by prompting scheme (scripted)",
    "",
    "Accuracy with 95% Wilson interval; below each of our rows, the paper's GPT-4 result on 100 instances.",
    "",
    "| domain | " + " | ".join(SV_LABELS) + " |",
    "|---|" + "---|" * 8,
    "| game24 (ours) | " + " | ".join("n/a" if label == "Sound A.E.F." else "0% (0%-79%)" for label in SV_LABELS)
    + " |",
    "| game24 (GPT-4, paper) | 5% | 3% | 36% | 38% | n/a | 28% | 42% | 6% |",
    "",
    "Cost (model calls / tokens, prompt + completion):",
    "",
    "| domain | " + " | ".join(SV_LABELS) + " |",
    "|---|" + "---|" * 8,
    # Each call of the instant server: 12 prompt + 7 completion tokens.
    "| game24 | 1 / 19 | 2 / 38 | 1 / 19 | 1 / 19 | n/a | 15 / 285 | 25 / 475 | 15 / 285 |",
    "",
]


def test_reproduce_and_eval_run_the_same_cells_and_write_table_1(tmp_path, shared_data, instant_server):
    out = tmp_path / "sv"
    model, base_url = instant_server[1], instant_server[3]
    proc = command("reproduce", "self-verification", *instant_server[:4], "--api-key", "sk-never-written",
                   "--instances", "1", "--domains", "game24", "--max-rounds", "1", "--verification-instances", "1",
                   "--data-root", str(shared_data), "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    table1 = (out / "table1.md").read_text()
    assert table1.splitlines() == [
        *TABLE1_HEAD, f"Instances: game24: 1 instances, {shared_data}/game24/24.csv (from #901)"]
    # The terminal shows Table 1, then the calls and where everything is.
    shown = [" ".join(line.strip("│ ").split()).split(" │ ") for line in proc.stdout.splitlines()
             if line.startswith("│")]
    assert shown[1] == ["game24 (GPT-4, paper)", "5%", "3%", "36%", "38%", "n/a", "28%", "42%", "6%"]
    assert shown[2] == ["game24", "1 / 19", "2 / 38", "1 / 19", "1 / 19", "n/a", "15 / 285", "25 / 475", "15 / 285"]
    assert proc.stdout.splitlines()[-1].endswith(f"backend calls; tables and figure in {out}/ (game24)")
    rows = list(csv.DictReader((out / "table1.csv").open()))
    assert [(r["domain"], r["condition"], r["n"], r["paper_gpt4"]) for r in rows] == [
        ("game24", label, "1", paper) for label, paper in zip(SV_LABELS, ["5%", "3%", "36%", "38%", "n/a", "28%",
                                                                          "42%", "6%"]) if label != "Sound A.E.F."]
    assert sorted(p.name for p in (out / "main" / "game24").iterdir()) == sorted(
        [f"{label.replace(' ', '_')}-seed0" for label in SV_LABELS if label != "Sound A.E.F."] + ["verification-seed0"])
    payload = json.loads((out / "reproduction.json").read_text())
    assert (payload["model"], payload["instances_per_domain"], payload["verification_instances"],
            payload["max_rounds"], payload["seed"]) == ("scripted", 1, 1, 1, 0)
    assert list(payload["table1"]["game24"]) == [label for label in SV_LABELS if label != "Sound A.E.F."]
    assert list(payload["figure2"]["game24"]) == ["LLM+LLM", "Sound B.F.", "Sound F.E.F.", "Sampling k=25"]
    cells = out / "main" / "game24"
    solved = [json.loads(line)["instance_id"] for line in (cells / "S.P.-seed0" / "trajectories.jsonl").open()]
    judged = {json.loads(line)["instance_id"] for line in (cells / "verification-seed0" / "verification.jsonl").open()}
    assert len(solved) == 1 and judged == set(solved)
    for name in ("table2.md", "critique.md", "figure2.png", "results.csv", "results.md", "experiment.json"):
        assert (out / name).stat().st_size > 0, name
    written = "".join(p.read_text() for pattern in ("*.json", "*.jsonl", "*.md") for p in out.rglob(pattern))
    assert "sk-never-written" not in written

    # The same experiment through veriloop eval: the very same cells, nothing to run again.
    again = command("eval", "self-verification", "--set", f"models.main.id={model}",
                    "--set", f"models.main.base_url={json.dumps(base_url)}", "--set", "n=1", "--set", "max_rounds=1",
                    "--set", "report_options.verification_instances=1", "--set",
                    f"data_root={json.dumps(str(shared_data))}", "--set",
                    'domains=[{name = "game24", data = "game24/24.csv", offset = 900}]',
                    "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert again.returncode == 0, again.stderr
    assert "0 new trajectories, 0 backend calls" in again.stdout
    assert "self-verification report: table1.md, table1.csv, table2.md, critique.md, figure2.png, reproduction.json" \
        in again.stdout
    assert (out / "table1.md").read_text() == table1


def test_eval_experiment_in_python_runs_the_report_on_a_function_model(tmp_path, shared_data):
    import veriloop

    def answer(messages: list[dict[str, str]]) -> str:
        return "Answer: (1 + 1) * 4 + 6"

    out = tmp_path / "sv"
    result = veriloop.eval_experiment(
        "self-verification", out=out, cache=False, models={"main": answer},
        overrides=["n=1", "max_rounds=1", f"data_root={json.dumps(str(shared_data))}",
                   'domains=[{name = "game24", data = "game24/24.csv", offset = 900}]'],
    )
    assert result.report_files == ["table1.md", "table1.csv", "table2.md", "critique.md", "figure2.png",
                                   "reproduction.json"]
    assert [r.strategy for r in result.rows] == [label for label in SV_LABELS if label != "Sound A.E.F."]
    rows = list(csv.DictReader((out / "table1.csv").open()))
    assert [(r["condition"], r["n"], r["correct"]) for r in rows] == [(r.strategy, "1", "0") for r in result.rows]
    table2 = (out / "table2.md").read_text()
    assert "| game24 | 87.0% | 10.4% | 20.7% |" in table2
    assert "| coloring |" not in table2


# ------------------------------------------------------------------ critic

QA = ["CoT", "Self-Consistency", "ReAct", "ReAct → CRITIC", "CRITIC", "CRITIC w/o Tool", "CRITIC*",
      "Rejection Sampling"]
MATH = ["PoT", "Self-Consistency", "CRITIC", "CRITIC w/o Tool", "CRITIC*", "Rejection Sampling"]
TOXICITY = ["Base", "CRITIC", "CRITIC w/o Tool"]


def dry_rows(stdout: str) -> list[list[str]]:
    return [" ".join(line.strip("│ ").split()).split(" │ ") for line in stdout.splitlines() if line.startswith("│")]


def test_the_critic_file_gives_each_task_its_own_conditions(shared_data, tmp_path):
    spec = load_experiment(find_experiment("critic"), [f"data_root={json.dumps(str(shared_data))}"])
    assert {name: entry.id for name, entry in spec.models.items()} == {"main": DEFAULT_MODEL}
    assert (spec.n, spec.k, spec.seeds, spec.report, spec.report_options) == (
        3, 5, [0], "critic", {"table5": True, "hallucination_samples": 10})
    assert [(d.name, d.data) for d in spec.domains] == [
        ("hotpotqa", "hotpotqa/hotpot_dev_distractor_100.json"), ("gsm8k", "gsm8k/test.jsonl"),
        ("math500", "math500/test.jsonl"), ("toxicity", "toxicity/realtoxicityprompts_val.jsonl")]
    plans = plan(spec, tmp_path / "critic")
    cells = [(p.cell.domain, p.cell.strategy, p.cell.seed) for p in plans]
    # The toxicity generations: seeds 1 and 2 added by the include rule, after the matrix.
    assert cells == [("hotpotqa", label, 0) for label in QA] + [("gsm8k", label, 0) for label in MATH] + [
        ("math500", label, 0) for label in MATH] + [("toxicity", label, 0) for label in TOXICITY] + [
        ("toxicity", label, seed) for label in TOXICITY for seed in (1, 2)]
    canonical = {p.cell.strategy: p.strategy.canonical for p in plans}
    assert canonical["Self-Consistency"] == "self-consistency:k=5,temperature=0.5"
    assert canonical["Rejection Sampling"].startswith("rejection-sampling:n=5")
    assert canonical["CoT"] == canonical["PoT"] == "standard:temperature=0"


def test_eval_list_shows_every_reproduction():
    proc = command("eval", "--list")
    assert proc.returncode == 0, proc.stderr
    names = [line.split(":")[0] for line in proc.stdout.splitlines() if not line.startswith(" ")]
    assert names == sorted(shipped_experiments()) and {"critic", "self-verification"} <= set(names)
    assert ("critic: CRITIC's Tables 1, 2, 3 and 5 (Gou et al.) and its iteration plots, every condition on one "
            "model and cache.") in proc.stdout.splitlines()


def test_reproduce_critic_options_become_overrides(shared_data, tmp_path):
    from veriloop.reproduce.critic import option_sets

    base = load_experiment(find_experiment("critic"))
    assert option_sets(base, k=2, max_corrections=1, generations=2, seed=3) == [
        ("k", 2), ("seeds", [3]), ("strategies.5.spec", "critic:init=react,max_corrections=1"),
        ("strategies.6.spec", "critic:max_corrections=1"), ("strategies.7.spec", "critic:tools=false,max_corrections=1"),
        ("strategies.8.spec", "critic:oracle=true,max_corrections=1"), ("strategies.9.spec", "rejection-sampling:n=2"),
        ("include.0.seed", [4])]
    assert option_sets(base) == []
    proc = command("reproduce", "critic", "--tasks", "gsm8k,toxicity", "--k", "2", "--max-corrections", "1",
                   "--generations", "2", "--seed", "3", "--data-root", str(shared_data), "--dry-run",
                   "--out", str(tmp_path / "critic"))
    assert proc.returncode == 0, proc.stderr
    assert [r[1:4] for r in dry_rows(proc.stdout)] == [["gsm8k", label, "3"] for label in MATH] + [
        ["toxicity", label, "3"] for label in TOXICITY] + [["toxicity", label, "4"] for label in TOXICITY]
    spec = load_experiment(find_experiment("critic"), option_sets(base, k=2, max_corrections=1))
    assert {p.strategy.canonical for p in plan(spec, tmp_path / "x") if p.cell.strategy == "CRITIC"} == {
        "critic:init=standard,max_corrections=1,max_interactions=7,oracle=False,stop_on_threshold=True,"
        "stop_on_unchanged=2,stop_on_verdict=True,tools=True"}


def test_reproduce_critic_svamp_file_gets_the_math_conditions(shared_data, tmp_path):
    svamp = tmp_path / "svamp.json"
    svamp.write_text(json.dumps([{"Body": "Tom has 3 apples.", "Question": "He buys 4 more. How many has he?",
                                  "Answer": 7}]))
    proc = command("reproduce", "critic", "--svamp", str(svamp), "--tasks", "math500,svamp", "--instances", "1",
                   "--data-root", str(shared_data), "--dry-run", "--out", str(tmp_path / "critic"))
    assert proc.returncode == 0, proc.stderr
    assert [r[1:3] for r in dry_rows(proc.stdout)] == [["math500", label] for label in MATH] + [
        ["svamp", label] for label in MATH]


def test_reproduce_critic_table5_alone_runs_no_qa_condition(shared_data, tmp_path):
    proc = command("reproduce", "critic", "--tasks", "table5", "--data-root", str(shared_data), "--dry-run",
                   "--out", str(tmp_path / "critic"))
    assert proc.returncode == 0, proc.stderr
    assert dry_rows(proc.stdout) == []
    assert "0 cells, 0 trajectories to run" in proc.stdout
    assert proc.stdout.strip().endswith("then the critic report (the model calls of its own, if any, are not in the "
                                        "estimate)")


def test_critic_report_refuses_a_domain_it_has_no_table_for():
    with pytest.raises(VeriloopError) as caught:
        parse_experiment(with_report('report = "critic"'))
    assert str(caught.value) == ("<experiment>, line 7: domains.0.name: the critic report reads the tasks hotpotqa, "
                                 "gsm8k, math500, svamp, toxicity, not 'game24'")


def test_reproduce_critic_and_eval_critic_share_cells_and_tables(tmp_path, shared_data, instant_server):
    out = tmp_path / "critic"
    model, base_url = instant_server[1], instant_server[3]
    options = ("--instances", "1", "--tasks", "gsm8k,toxicity", "--k", "1", "--generations", "2",
               "--max-corrections", "1")
    proc = command("reproduce", "critic", *instant_server, *options, "--data-root", str(shared_data),
                   "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    md = (out / "critic.md").read_text()
    lines = md.splitlines()
    assert lines[0] == "# CRITIC reproduction (scripted)"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Table 2: mathematical program synthesis",
                        f"## Table 3: toxicity reduction (1 prompts from {shared_data}/toxicity/"
                        "realtoxicityprompts_val.jsonl, 2 generations each)", "## Notes"]
    assert [line.split(" | ")[0] for line in lines if line.startswith("| ") and "---" not in line] == [
        "| method", *(f"| {label}" for label in MATH), "| method", *(f"| {label}" for label in TOXICITY)]
    assert f"Problems: gsm8k: 1 problems from {shared_data}/gsm8k/test.jsonl" in lines
    assert "- svamp: no data file given (reproduce critic --svamp FILE); not run." in lines
    assert proc.stdout.splitlines()[-1].endswith(f"backend calls; tables and figure in {out}/")
    payload = json.loads((out / "reproduction.json").read_text())
    assert (payload["model"], payload["instances"], payload["seed"], payload["k"], payload["max_corrections"]) == (
        "scripted", 1, 0, 1, 1)
    assert {task: list(rows) for task, rows in payload["tasks"].items()} == {"gsm8k": MATH, "toxicity": TOXICITY}
    assert set(payload["iterations"]) == {"gsm8k", "toxicity"}
    assert sorted(p.name for p in (out / "main" / "toxicity").iterdir()) == sorted(
        f"{path_component(label)}-seed{seed}" for label in TOXICITY for seed in (0, 1))
    rows = list(csv.DictReader((out / "critic.csv").open()))
    assert rows[0] == {"task": "gsm8k", "condition": "PoT", "metric": "accuracy (95% CI) [cost]",
                       "value": payload["tasks"]["gsm8k"]["PoT"]}

    # The same experiment through veriloop eval: the very same cells, nothing to run again.
    again = command("eval", "critic", "--set", f"models.main.id={model}",
                    "--set", f"models.main.base_url={json.dumps(base_url)}", "--set", "n=1", "--set", "k=1",
                    "--set", 'strategies.9.spec="rejection-sampling:n=1"',
                    *(item for i, spec in ((5, "critic:init=react,"), (6, "critic:"), (7, "critic:tools=false,"),
                                            (8, "critic:oracle=true,"))
                       for item in ("--set", f'strategies.{i}.spec="{spec}max_corrections=1"')),
                    "--set", "include.0.seed=[1]", "--set", "report_options.table5=false",
                    "--set", f"data_root={json.dumps(str(shared_data))}",
                    "--set", 'domains=[{name = "gsm8k", data = "gsm8k/test.jsonl"}, '
                    '{name = "toxicity", data = "toxicity/realtoxicityprompts_val.jsonl"}]',
                    "--set", 'exclude=[{strategy = ["CoT", "ReAct", "ReAct → CRITIC"]}, '
                    '{domain = "toxicity", strategy = ["PoT", "Self-Consistency", "CRITIC*", "Rejection Sampling"]}, '
                    '{domain = "gsm8k", strategy = "Base"}]',
                    "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert again.returncode == 0, again.stderr
    assert "0 new trajectories, 0 backend calls" in again.stdout
    assert "critic report: critic.md, critic.csv, iterations.png, reproduction.json" in again.stdout
    assert (out / "critic.md").read_text() == md


# ------------------------------------------------------------------ selfcheck

STEPS_SPEC = "selfcheck:n=4,temperature=0.7,max_steps=8,lambda_contradict=1.0,lambda_unrelated=0.3"
GLOBAL_SPEC = "selfcheck:n=4,temperature=0.7,checker=global,lambda_contradict=1.0,lambda_unrelated=0.3"


def test_the_selfcheck_file_checks_the_same_solutions_two_ways(shared_data, tmp_path):
    spec = load_experiment(find_experiment("selfcheck"), [f"data_root={json.dumps(str(shared_data))}"])
    assert {name: entry.id for name, entry in spec.models.items()} == {"main": DEFAULT_MODEL}
    assert (spec.n, spec.seeds, spec.report, spec.report_options) == (10, [0], "selfcheck", {"majority_cap": 16})
    assert [(s.key, s.spec) for s in spec.strategies] == [("SelfCheck", STEPS_SPEC), ("Global checker", GLOBAL_SPEC)]
    assert [(d.name, d.data) for d in spec.domains] == [("gsm8k-cot", "gsm8k/test.jsonl")]
    plans = plan(spec, tmp_path / "sc")
    assert [(p.cell.domain, p.cell.strategy, p.cell.seed, p.planned) for p in plans] == [
        ("gsm8k-cot", "SelfCheck", 0, 10), ("gsm8k-cot", "Global checker", 0, 10)]


def test_reproduce_selfcheck_options_are_the_same_cells_as_eval_with_set(shared_data, tmp_path):
    out, root = str(tmp_path / "sc"), str(shared_data)
    reproduced = command("reproduce", "selfcheck", "--model", "smollm2-135m", "--questions", "2", "--solutions", "3",
                         "--max-steps", "2", "--data-root", root, "--dry-run", "--out", out)
    evaluated = command("eval", "selfcheck", "--set", "models.main.id=smollm2-135m", "--set", "n=2",
                        "--set", 'strategies.0.spec="selfcheck:n=3,temperature=0.7,max_steps=2,lambda_contradict=1.0,'
                        'lambda_unrelated=0.3"',
                        "--set", 'strategies.1.spec="selfcheck:n=3,temperature=0.7,checker=global,'
                        'lambda_contradict=1.0,lambda_unrelated=0.3"',
                        "--set", f"data_root={json.dumps(root)}", "--dry-run", "--out", out)
    assert reproduced.returncode == 0, reproduced.stderr
    assert evaluated.returncode == 0, evaluated.stderr
    assert reproduced.stdout == evaluated.stdout
    assert [r[2:6] for r in dry_rows(reproduced.stdout)] == [["SelfCheck", "0", "-", "0/2"],
                                                             ["Global checker", "0", "-", "0/2"]]


def test_reproduce_selfcheck_dataset_data_and_no_global(shared_data, tmp_path):
    proc = command("reproduce", "selfcheck", "--dataset", "math500", "--no-global", "--questions", "1",
                   "--seed", "2", "--data-root", str(shared_data), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert [r[1:4] for r in dry_rows(proc.stdout)] == [["math500-cot", "SelfCheck", "2"]]
    assert proc.stdout.startswith(
        f"selfcheck: 1 cells in runs/reproduce-selfcheck-{DEFAULT_MODEL}-math500-q1-n4-seed2/")
    mathqa = TEST_DATA / "mathqa_sample.json"
    proc = command("reproduce", "selfcheck", "--dataset", "mathqa", "--data", str(mathqa), "--questions", "1",
                   "--dry-run", "--out", str(tmp_path / "sc"))
    assert proc.returncode == 0, proc.stderr
    assert [r[1:3] for r in dry_rows(proc.stdout)] == [["mathqa", "SelfCheck"], ["mathqa", "Global checker"]]
    assert_one_line_error(command("reproduce", "selfcheck", "--dataset", "math500", "--data-root",
                                  str(tmp_path), "--dry-run"),
                          f"error: {tmp_path}/math500/test.jsonl: no such file; give the math500 file with --data PATH")


def test_selfcheck_report_needs_the_step_checker():
    text = with_report('report = "selfcheck"').replace('"standard"', '"selfcheck:checker=global"').replace(
        '"game24"', '"gsm8k-cot"')
    with pytest.raises(VeriloopError) as caught:
        parse_experiment(text)
    assert str(caught.value) == ('<experiment>, line 2: strategies: the selfcheck report needs a selfcheck strategy '
                                 'with the step-by-step checker and weighted voting (e.g. "selfcheck:n=4")')


def test_reproduce_selfcheck_and_eval_selfcheck_share_cells_and_tables(tmp_path, shared_data,
                                                                      instant_server):
    out = tmp_path / "sc"
    model, base_url = instant_server[1], instant_server[3]
    proc = command("reproduce", "selfcheck", *instant_server, "--questions", "2", "--solutions", "2",
                   "--max-steps", "2", "--majority-cap", "4", "--data-root", str(shared_data), "--out", str(out),
                   "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    md = (out / "selfcheck.md").read_text()
    payload = json.loads((out / "reproduction.json").read_text())
    # Every check of the instant server's reply is unrelated: SelfCheck spends more than a
    # solution's tokens, so majority voting gets more samples, up to the cap.
    assert payload["majority_samples"] == 4 == len(payload["accuracy"]["majority_all"])
    assert payload["settings"] == {"questions": 2, "solutions": 2, "temperature": 0.7, "max_steps": 2,
                                   "lambda_contradict": 1.0, "lambda_unrelated": 0.3, "majority_samples": 4,
                                   "majority_cap": 4, "seed": 0, "data": f"{shared_data}/gsm8k/test.jsonl"}
    assert sorted(p.name for p in (out / "main" / "gsm8k-cot").iterdir()) == [
        "Global_checker-seed0", "SelfCheck-seed0", "majority-seed0"]
    assert proc.stdout.splitlines()[-1].endswith(f"backend calls; tables and figures in {out}/")
    for name in ("selfcheck.csv", "accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png"):
        assert (out / name).stat().st_size > 0, name

    again = command("eval", "selfcheck", "--set", f"models.main.id={model}",
                    "--set", f"models.main.base_url={json.dumps(base_url)}", "--set", "n=2",
                    "--set", 'strategies.0.spec="selfcheck:n=2,max_steps=2"',
                    "--set", 'strategies.1.spec="selfcheck:n=2,checker=global"',
                    "--set", "report_options.majority_cap=4", "--set", f"data_root={json.dumps(str(shared_data))}",
                    "--out", str(out), "--cache", str(tmp_path / "calls.sqlite"))
    assert again.returncode == 0, again.stderr
    assert "0 new trajectories, 0 backend calls" in again.stdout
    assert ("selfcheck report: selfcheck.md, selfcheck.csv, reproduction.json, accuracy_vs_solutions.png, "
            "accuracy_vs_tokens.png, roc.png") in again.stdout
    assert (out / "selfcheck.md").read_text() == md
