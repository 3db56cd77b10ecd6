"""`veriloop eval` from the command line: the dry run, errors, and the experiment of the
issue run for real (SmolLM2 in-process and through a real OpenAI-compatible server, with
a judge model apart from both generators), resumed with no backend call."""

from __future__ import annotations

import csv
import json

import pytest
from helpers import ISSUE_EXAMPLE, TEST_REPLY_TOKENS, assert_one_line_error, veriloop, veriloop_process
from servers import SECRET

from veriloop import __version__
from veriloop.models.capped import capped_identity
from veriloop.models.packs import PACKS
from veriloop.runs.runner import load_trajectories


def test_dry_run_lists_the_cells_with_an_estimate_and_loads_no_model(tmp_path) -> None:
    path = tmp_path / "demo.toml"
    path.write_text(ISSUE_EXAMPLE.replace("URL", "http://127.0.0.1:9/v1"))
    proc = veriloop("eval", str(path), "--dry-run", "--out", str(tmp_path / "exp"))
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.strip("│ ").split()) for line in proc.stdout.splitlines() if line.startswith("│")]
    assert lines[0].split(" │ ") == ["small", "game24", "standard", "0", "verifier=judge", "0/3", "3", "954"]
    assert [line.split(" │ ")[2] for line in lines] == [
        "standard", "sampling:k=3", "backprompt:verifier=llm,feedback=llm,max_rounds=3"] * 2
    # backprompt, 3 rounds: 3 answers, 3 judgements, 2 critiques an instance
    assert lines[5].split(" │ ")[5:7] == ["0/2", "16"]
    assert proc.stdout.strip().endswith("6 cells, 15 trajectories to run: at most 60 calls, about 26880 tokens")
    assert not (tmp_path / "exp").exists()


def test_set_changes_the_plan(tmp_path) -> None:
    path = tmp_path / "demo.toml"
    path.write_text(ISSUE_EXAMPLE)
    proc = veriloop("eval", str(path), "--dry-run", "--set", "domains.0.n=1", "--set", "seeds=[0, 1]",
                    "--set", 'strategies=["standard"]', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # 2 seeds x (1 game24 puzzle at about 318 tokens + 2 graphs at about 643)
    assert proc.stdout.strip().endswith("4 cells, 6 trajectories to run: at most 6 calls, about 3208 tokens")
    assert proc.stdout.startswith("demo: 4 cells in runs/eval-demo/")


@pytest.mark.parametrize(("args", "fragments"), [
    (("eval",), ["give an experiment file"]),
    (("eval", "missing.toml"), ["missing.toml: no such experiment file"]),
    (("eval", "no-such-shipped-name"), ["no experiment file 'no-such-shipped-name'", "shipped experiments"]),
    (("eval", "demo.toml", "--set", "nokey"), ["--set 'nokey' should look like KEY=VALUE"]),
])
def test_bad_invocations_are_one_line_errors(tmp_path, args, fragments) -> None:
    (tmp_path / "demo.toml").write_text(ISSUE_EXAMPLE)
    assert_one_line_error(veriloop(*args, cwd=tmp_path), *fragments)


def test_a_malformed_file_names_the_line_and_the_key(tmp_path) -> None:
    (tmp_path / "demo.toml").write_text(ISSUE_EXAMPLE.replace('"standard"', '"standrd"'))
    assert_one_line_error(veriloop("eval", "demo.toml", cwd=tmp_path), "demo.toml, line 3: strategies.0.spec: unknown "
                          "strategy 'standrd'; choose one of: standard, backprompt, sampling")


def test_eval_help_explains_the_command() -> None:
    proc = veriloop("eval", "--help")
    assert proc.returncode == 0
    for words in ("--dry-run", "--set", "--list", "results.csv", "frontier.png", "matched token budgets"):
        assert words in " ".join(proc.stdout.split()), words


E2E = """\
name = "e2e"
strategies = ["standard", "sampling:k=2", "backprompt:verifier=llm,feedback=llm,max_rounds=2"]

[models.small]
id = "smollm2-135m"
threads = 2

[models.server]
id = "openai/smollm2"
base_url = "URL"
api_key_env = "E2E_KEY"

[models.judge]
id = "openai/judge"
base_url = "URL"
api_key_env = "E2E_KEY"
price = {prompt = 0.5, completion = 1.5}

[roles]
verifier_model = "judge"

[[domains]]
name = "game24"
n = 1

[[domains]]
name = "coloring"
n = 1
"""


@pytest.mark.model
def test_two_generators_two_domains_three_strategies_with_a_judge_model(tmp_path, instant_server, smollm2_path) -> None:
    # The server generator and the judge are the scripted server (what is checked here is the
    # bookkeeping of cells, roles, tokens and prices); the real server runs this experiment's
    # shape in tests/cluster/test_ray.py, the judge included.
    base_url = instant_server[instant_server.index("--base-url") + 1]
    (tmp_path / "e2e.toml").write_text(E2E.replace("URL", base_url))
    env = {"E2E_KEY": SECRET}
    first = veriloop_process("eval", "e2e.toml", "--out", "exp", "--cache", "calls.sqlite", env=env, cwd=tmp_path, timeout=1800)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "exp"
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    strategies = ["standard", "sampling:k=2", "backprompt:verifier=llm,feedback=llm,max_rounds=2"]
    assert [(r["model"], r["domain"], r["strategy"], r["seed"], r["n"], r["planned"], r["status"],
             r["verifier_model"]) for r in rows] == [
        (model, domain, strategy, "0", "1", "1", "complete", "judge")
        for model in ("small", "server") for domain in ("game24", "coloring") for strategy in strategies
    ]
    backend_calls = 0
    for row in rows:
        (t,) = load_trajectories(out / row["run_dir"] / "trajectories.jsonl")
        prompt, completion = sum(c.prompt_tokens for c in t.calls), sum(c.completion_tokens for c in t.calls)
        judge_tokens = [(c.prompt_tokens, c.completion_tokens) for c in t.calls if c.role == "verify"]
        usd = sum(0.5 * p + 1.5 * c for p, c in judge_tokens) / 1e6
        assert (row["accuracy"], row["model_calls"], row["prompt_tokens"], row["completion_tokens"],
                row["mean_rounds"]) == (str(int(t.correct)), str(len(t.calls)), str(prompt), str(completion),
                                        str(len(t.rounds)))
        assert float(row["usd"]) == pytest.approx(usd, rel=1e-5)
        # the judge answered every judgement, and nothing else; its records name it
        assert [c.model for c in t.calls if c.role == "verify"] == ["judge"] * len(judge_tokens)
        assert {c.model for c in t.calls if c.role != "verify"} == {None}
        if row["strategy"].startswith("backprompt"):
            assert judge_tokens and t.model == ("smollm2-135m" if row["model"] == "small" else "smollm2")
        backend_calls += sum(not c.cached for c in t.calls)
    assert f"12 new trajectories, {backend_calls} backend calls" in first.stdout
    # The last line is the command that opens the viewer on the out directory, as given.
    assert first.stdout.splitlines()[-1] == "see every trajectory: veriloop view exp"
    assert json.loads((out / "results.json").read_text())["stopped"] is None
    assert (out / "frontier.png").stat().st_size > 10_000
    md = (out / "results.md").read_text()
    assert "### game24 · small" in md and "### coloring · server" in md

    again = veriloop_process("eval", "e2e.toml", "--out", "exp", "--cache", "calls.sqlite", env=env, cwd=tmp_path, timeout=1800)
    assert again.returncode == 0, again.stderr
    assert "0 new trajectories, 0 backend calls" in again.stdout
    assert again.stdout.splitlines()[-1] == "see every trajectory: veriloop view exp"
    with open(out / "results.csv") as f:
        assert list(csv.DictReader(f)) == rows


def test_run_records_the_spec_its_flags_filled(tmp_path) -> None:
    """`veriloop run`'s flags fill the same spec as an experiment file (one model, one
    domain, its strategies and one seed)."""
    from veriloop.cli.options import ModelFlags, ToolFlags
    from veriloop.cli.run import run_spec

    spec = run_spec(
        ModelFlags(model="smollm2-135m", threads="2"), ToolFlags(), domain="coloring", task=None, prompt=None,
        check=None, reference_field=None, id_field=None, data=None, offset=3, n=4, options={"max_nodes": 6},
        strategies=["standard", "sampling:k=2"], seed=7, max_rounds=3, k=2, concurrency=None,
    )
    assert (spec.models["main"].id, spec.models["main"].threads, spec.domains[0].name, spec.domains[0].offset,
            spec.domains[0].options, spec.n, spec.seeds, spec.max_rounds, spec.k) == (
        "smollm2-135m", 2, "coloring", 3, {"max_nodes": 6}, 4, [7], 3, 2)
    assert [s.spec for s in spec.strategies] == ["standard", "sampling:k=2"]
    assert [c.strategy for c in spec.cells()] == ["standard", "sampling:k=2"]


@pytest.mark.model
def test_a_run_directory_records_the_whole_resolved_spec(tmp_path) -> None:
    proc = veriloop_process("run", "--model", "smollm2-135m", "-n", "1", "-s", "standard", "--out", "r", "--threads", "2",
                            "--cache", "calls.sqlite", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    spec = config["spec"]
    assert (spec["models"]["main"]["id"], spec["domains"][0]["name"], spec["n"], spec["seeds"],
            [s["spec"] for s in spec["strategies"]], spec["models"]["main"]["threads"]) == (
        "smollm2-135m", "game24", 1, [0], ["standard"], 2)
    assert config["veriloop_version"] == __version__
    # The suite's reply cap (helpers.TEST_REPLY_TOKENS) is part of the model's identity.
    assert config["model_identity"] == capped_identity(PACKS["smollm2-135m"].sha256, TEST_REPLY_TOKENS)
