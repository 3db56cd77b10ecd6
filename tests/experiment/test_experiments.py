"""Experiments as data: the file format and its errors, the matrix, roles, budgets,
resumption and the results files, with scripted models (replies chosen by the test)."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest
from helpers import ISSUE_EXAMPLE

import veriloop
from veriloop import Completion, VeriloopError
from veriloop.experiment.matrix import Cell, path_component
from veriloop.experiment.overrides import find_experiment, load_experiment, parse_experiment
from veriloop.printable import printable
from veriloop.runs.runner import run_experiment
from veriloop.strategies import parse_strategy

JUDGED = (("verifier_model", "judge"),)


def test_the_issue_example_is_six_cells_with_the_judge_in_a_role() -> None:
    spec = parse_experiment(ISSUE_EXAMPLE, "demo.toml")
    assert spec.generator_names() == ["small"]
    strategies = ["standard", "sampling:k=3", "backprompt:verifier=llm,feedback=llm,max_rounds=3"]
    assert spec.cells() == [
        Cell("small", domain, strategy, 0, JUDGED) for domain in ("game24", "coloring") for strategy in strategies
    ]
    assert spec.models_used(spec.cells()) == ["small", "judge"]
    assert [spec.instances_for(d) for d in spec.domain_keys()] == [3, 2]
    assert spec.cells()[2].directory() == Path("small/game24/backprompt_verifier=llm_feedback=llm_max_rounds=3-seed0")


@pytest.mark.parametrize(("edit", "message"), [
    (("base_url", "base_ur"), "demo.toml, line 10: models.judge.base_ur: unknown key; the keys here are: "
                              "verifier_model, critic_model, checker_model, escalation_model, id, base_url,"),
    (('name = "game24"', 'name = "game42"'), "demo.toml, line 16: domains.0.name: unknown domain 'game42'; choose "
                                             "one of: game24, blocksworld,"),
    (("sampling:k=3", "samplin:k=3"), "demo.toml, line 3: strategies.1.spec: unknown strategy 'samplin'; choose one "
                                      "of: standard, backprompt, sampling,"),
    (('verifier_model = "judge"', 'verifier_model = "jduge"'), "demo.toml, line 13: roles.verifier_model: no model "
                                                               "'jduge' under [models]; the models are: small, judge"),
    (("n = 2", "n = 0"), "demo.toml, line 21: domains.1.n: Input should be greater than or equal to 1"),
    (('name = "game24"', ""), "demo.toml, line 15: domains.0.name: required, but missing"),
    (("seeds = [0]", "seeds = [0"), "demo.toml: not valid TOML: Unclosed array (at line 3, column 1)"),
    (("seeds = [0]", "seeds = 0"), "demo.toml, line 2: seeds: Input should be a valid list"),
])
def test_a_malformed_file_is_one_error_naming_the_line_and_the_key(edit, message) -> None:
    with pytest.raises(VeriloopError) as caught:
        parse_experiment(ISSUE_EXAMPLE.replace(*edit), "demo.toml")
    assert str(caught.value).startswith(message)


def test_a_rule_naming_an_unknown_strategy_points_at_its_line() -> None:
    text = ISSUE_EXAMPLE + '\n[[exclude]]\nstrategy = "x"\n'
    with pytest.raises(VeriloopError, match=r"line 24: exclude\.0\.strategy: unknown strategy 'x'; choose one of: "
                                            r"standard, sampling:k=3, backprompt"):
        parse_experiment(text, "demo.toml")


def test_set_overrides_keys_and_list_items_and_is_named_in_its_errors() -> None:
    spec = parse_experiment(ISSUE_EXAMPLE, "demo.toml", ["domains.1.n=7", "models.small.id=qwen2.5-coder-1.5b",
                                                         "seeds=[0, 1]", "budget.max_calls=40", "name=renamed"])
    assert (spec.domains[1].n, spec.models["small"].id, spec.seeds, spec.budget.max_calls, spec.name) == (
        7, "qwen2.5-coder-1.5b", [0, 1], 40, "renamed")
    assert len(spec.cells()) == 12
    with pytest.raises(VeriloopError, match=r"^demo.toml, --set: domains\.1\.n: Input should be a valid integer"):
        parse_experiment(ISSUE_EXAMPLE, "demo.toml", ["domains.1.n=abc"])
    with pytest.raises(VeriloopError, match=r"domains has 2 entries, numbered 0 to 1; '5' is not one of them"):
        parse_experiment(ISSUE_EXAMPLE, "demo.toml", ["domains.5.n=1"])
    with pytest.raises(VeriloopError, match=r"--set 'n' should look like KEY=VALUE"):
        parse_experiment(ISSUE_EXAMPLE, "demo.toml", ["n"])


def test_exclude_drops_and_include_adds_cells_once() -> None:
    text = ISSUE_EXAMPLE + """
[[exclude]]
domain = "coloring"
strategy = ["sampling:k=3", "standard"]

[[include]]
model = "judge"
domain = "game24"
strategy = "standard"

[[include]]
model = "small"
domain = "game24"
strategy = "standard"
"""
    spec = parse_experiment(text, "demo.toml")
    long = "backprompt:verifier=llm,feedback=llm,max_rounds=3"
    assert spec.cells() == [
        Cell("small", "game24", "standard", 0, JUDGED), Cell("small", "game24", "sampling:k=3", 0, JUDGED),
        Cell("small", "game24", long, 0, JUDGED), Cell("small", "coloring", long, 0, JUDGED),
        Cell("judge", "game24", "standard", 0, ()),  # the judge judging itself holds no role apart from it
    ]


def test_a_generator_can_judge_another_and_be_judged_by_it() -> None:
    text = ISSUE_EXAMPLE.replace('[roles]\nverifier_model = "judge"', '[roles]')
    text = text.replace("[models.small]\n", '[models.small]\nverifier_model = "judge"\n').replace(
        'base_url = "URL"\n', 'base_url = "URL"\nverifier_model = "small"\n')
    spec = parse_experiment('generators = ["small", "judge"]\n' + text, "demo.toml")
    cells = spec.cells()
    assert [(c.model, c.roles) for c in cells if c.domain == "game24" and c.strategy == "standard"] == [
        ("small", (("verifier_model", "judge"),)), ("judge", (("verifier_model", "small"),)),
    ]


def test_no_domain_no_generator_and_duplicate_labels_are_refused() -> None:
    body = ISSUE_EXAMPLE.split("[[domains]]")[0]
    with pytest.raises(VeriloopError, match=r"demo.toml, top level: an experiment needs at least one \[\[domains\]\]"):
        parse_experiment(body, "demo.toml")
    with pytest.raises(VeriloopError, match="line 12: roles: no model generates"):
        parse_experiment(ISSUE_EXAMPLE.replace('verifier_model = "judge"', 'verifier_model = "judge"\n'
                                               'critic_model = "small"'), "demo.toml")
    with pytest.raises(VeriloopError, match="two entries have the strategy label 'standard'"):
        parse_experiment(ISSUE_EXAMPLE.replace('"sampling:k=3"', '"standard"'), "demo.toml")


def test_an_experiment_file_that_is_not_there_is_named(tmp_path) -> None:
    with pytest.raises(VeriloopError, match=r"nope\.toml: no such experiment file"):
        load_experiment(tmp_path / "nope.toml")


REFUSED_NAME = ("the name '..' cannot name a directory (each cell's directory is named after its model, domain and "
                "strategy); rename it")


@pytest.mark.parametrize(("edit", "where"), [
    ({"models": {"..": {}, "judge": {"id": "openai/scripted-judge"}}}, "line 3: models...: "),  # a generator
    ({"tasks": [{"file": "data.jsonl", "prompt": "{q}", "label": ".."}]}, "line 5: tasks.0.label: "),
    ({"domains": [{"name": "game24", "label": ".."}], "tasks": []}, "line 6: domains.0.label: "),
    ({"strategies": [{"spec": "standard", "label": ".."}]}, "line 2: strategies.0.label: "),
])
def test_a_name_that_would_leave_the_experiment_directory_is_refused_and_nothing_is_written(
        tmp_path, edit, where) -> None:
    work = tmp_path / "work"
    work.mkdir()
    spec = {**experiment(tmp_path), **edit}
    script = Script()
    models = {name: script.judge if name == "judge" else script.generate for name in spec["models"]}
    with pytest.raises(VeriloopError) as refused:
        veriloop.eval_experiment(spec, out=work / "out", models=models, cache=False, progress=False)
    assert str(refused.value).startswith("experiment, ") and str(refused.value).endswith(where + REFUSED_NAME)
    assert list(work.iterdir()) == []  # refused before anything is written, in --out or beside it
    with pytest.raises(VeriloopError, match=r"cell \.\. · g · s · seed 0: the name '\.\.' cannot name a directory"):
        Cell("..", "g", "s", 0).directory()


@pytest.mark.parametrize("name", ["a/../..", "/etc", "C:\\x", "..a"])
def test_other_names_become_one_directory_inside_the_experiment(name) -> None:
    (part,) = Cell(name, "game24", "standard", 0).directory().parts[:1]
    assert "/" not in part and "\\" not in part and "\0" not in part and part not in (".", "..")
    assert (Path("/out") / part).resolve().parent == Path("/out")


@pytest.mark.parametrize("name", ["nul\0", "m\x1b]0;PWNED\x07", "red\x1b[31m", "csi\x9b2J", "bidi\u202eevil"])
def test_a_name_holding_a_control_character_is_refused(name) -> None:
    # Names reach progress lines and tables: a terminal would obey these characters.
    with pytest.raises(ValueError) as refused:
        path_component(name)
    assert str(refused.value) == f"the name '{printable(name)}' holds a control character; rename it"
    assert "\x1b" not in str(refused.value) and "\x9b" not in str(refused.value)


def test_an_experiment_file_naming_a_model_with_an_escape_sequence_is_one_line(tmp_path) -> None:
    spec = {**experiment(tmp_path), "models": {"m\x1b]0;title\x07": {}, "judge": {"id": "openai/scripted-judge"}}}
    with pytest.raises(VeriloopError) as refused:
        veriloop.eval_experiment(spec, out=tmp_path / "out", models={}, cache=False, progress=False)
    assert str(refused.value).endswith("the name 'm\\x1b]0;title\\x07' holds a control character; rename it")
    assert not (tmp_path / "out").exists()


def test_names_that_differ_only_outside_a_plain_directory_name_get_directories_of_their_own() -> None:
    # The shipped CRITIC experiment has both: once, their cells shared one directory.
    assert path_component("CRITIC") == "CRITIC"
    assert path_component("CRITIC*") == "CRITIC_-5cc335b7"
    assert path_component("backprompt:verifier=llm,max_rounds=3") == "backprompt_verifier=llm_max_rounds=3"
    assert path_component("LLM judge") == "LLM_judge"


def test_two_names_that_would_share_a_directory_are_refused() -> None:
    text = ISSUE_EXAMPLE.replace('name = "coloring"', 'name = "coloring"\nlabel = "game 24"').replace(
        'name = "game24"', 'name = "game24"\nlabel = "game_24"').replace('"URL"', '"http://127.0.0.1:9/v1"')
    with pytest.raises(VeriloopError, match="line 22: domains.1.label: 'game_24' and 'game 24' would share the "
                                            "directory 'game_24'; rename one of them"):
        parse_experiment(text, "demo.toml")


def test_every_cell_of_the_shipped_experiments_has_a_directory_of_its_own() -> None:
    for name in ("critic", "humaneval", "impossible", "self-verification", "selfcheck"):
        cells = load_experiment(find_experiment(name)).cells()
        assert len({cell.directory() for cell in cells}) == len(cells), name


def test_the_shipped_impossible_experiment_is_three_loops_with_and_without_the_warning() -> None:
    spec = load_experiment(find_experiment("impossible"))
    strategies = ["Standard", "Visible first", "Sampling k=3 visible"]
    assert spec.cells() == [Cell("main", domain, strategy, 0) for domain in ("impossible", "impossible-warned")
                            for strategy in strategies]
    assert [s.spec for s in spec.strategies] == [
        "standard", "backprompt:verifier=visible,feedback=first", "sampling:k=3,verifier=visible"]
    assert [(d.name, d.options, spec.instances_for(d.key)) for d in spec.domains] == [
        ("humaneval-impossible", {"warn": False}, 20), ("humaneval-impossible", {"warn": True}, 20)]
    assert (spec.max_rounds, spec.seeds, spec.models["main"].id) == (3, [0], "qwen2.5-coder-1.5b")


# ---- running, with scripted models -------------------------------------------------------

QUESTIONS = [{"q": "1+1", "a": "2"}, {"q": "2+2", "a": "4"}, {"q": "3+3", "a": "6"}]


class Script:
    """A generator that answers "0" to a first prompt and the right sum after feedback,
    and a judge that accepts anything but "0"; each counts what it was asked."""

    def __init__(self) -> None:
        self.generator_calls: list[list[dict[str, str]]] = []
        self.judge_calls: list[list[dict[str, str]]] = []

    def generate(self, messages):
        self.generator_calls.append(messages)
        question = messages[0]["content"] if messages[0]["role"] == "user" else messages[1]["content"]
        left, right = question.split("+")
        text = str(int(left) + int(right)) if len(messages) > 1 else "0"
        return Completion(text=text, finish_reason="stop", prompt_tokens=10, completion_tokens=5)

    def judge(self, messages):
        self.judge_calls.append(messages)
        accepted = "Proposed answer:\n0\n" not in messages[-1]["content"]
        return Completion(text=json.dumps({"correct": accepted, "errors": [] if accepted else ["wrong"]}),
                          finish_reason="stop", prompt_tokens=100, completion_tokens=20)


def experiment(tmp_path: Path, **extra) -> dict:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    return {
        "name": "sums",
        "strategies": ["standard", "sampling:k=2", {"spec": "backprompt:verifier=llm,feedback=binary,max_rounds=2",
                                                   "label": "LLM judge"}],
        "models": {
            # no ids: the test passes these models from Python
            "gen": {"price": {"prompt": 1.0, "completion": 2.0}},
            "judge": {"id": "openai/scripted-judge", "price": {"prompt": 10.0, "completion": 20.0}},
        },
        "roles": {"verifier_model": "judge"},
        "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "n": 3, "label": "sums"}],
        **extra,
    }


def run(tmp_path: Path, script: Script, out: str = "exp", cache: str = "calls.sqlite", **extra):
    models = {
        "gen": veriloop.model(script.generate, name="gen", identity="scripted-gen-v1", cache=False),
        "judge": veriloop.model(script.judge, name="judge", identity="scripted-judge-v1", cache=False),
    }
    return veriloop.eval_experiment(experiment(tmp_path, **extra), out=tmp_path / out, models=models,
                                    cache=tmp_path / cache, progress=False)


def rows_of(result) -> list[tuple]:
    return [(r.model, r.domain, r.strategy, r.n, r.correct, r.model_calls, r.prompt_tokens, r.completion_tokens,
             round(r.usd, 6), r.status) for r in result.rows]


def test_cells_run_with_the_judge_in_its_role_and_a_rerun_calls_no_model(tmp_path) -> None:
    script = Script()
    result = run(tmp_path, script)
    assert rows_of(result) == [
        ("gen", "sums", "standard", 3, 0, 3, 30, 15, 0.00006, "complete"),
        ("gen", "sums", "sampling:k=2", 3, 0, 6, 60, 30, 0.00012, "complete"),
        # generate "0", judged wrong, binary feedback, the right sum, judged right: 2 + 2 calls
        ("gen", "sums", "LLM judge", 3, 3, 12, 660, 150, 0.00852, "complete"),  # judge: 6 x (100 x $10 + 20 x $20)
    ]
    assert (result.stopped, result.incomplete_cells, result.new_trajectories) == (None, [], 9)
    # backprompt's first answer is standard's call (temperature 0): the cache answers it
    assert (len(script.generator_calls), len(script.judge_calls), result.backend_calls) == (12, 6, 18)
    assert all("Proposed answer" not in m[-1]["content"] for m in script.generator_calls)
    judged = veriloop.runs.runner.load_trajectories(
        tmp_path / "exp" / "gen" / "sums" / "LLM_judge-seed0" / "trajectories.jsonl")
    assert [[(c.role, c.model) for c in t.calls] for t in judged] == [
        [("generate", None), ("verify", "judge"), ("generate", None), ("verify", "judge")]
    ] * 3
    config = json.loads((tmp_path / "exp" / "gen" / "sums" / "LLM_judge-seed0" / "config.json").read_text())
    assert (config["roles"], config["cell"]["roles"], config["spec"]["roles"]["verifier_model"]["id"]) == (
        {"verify": "scripted-judge-v1"}, {"verifier_model": "judge"}, "openai/scripted-judge")
    assert config["veriloop_version"] == veriloop.__version__

    again = run(tmp_path, Script())
    assert (again.backend_calls, again.new_trajectories, rows_of(again)) == (0, 0, rows_of(result))


def test_the_results_files_have_one_row_per_cell(tmp_path) -> None:
    run(tmp_path, Script())
    out = tmp_path / "exp"
    with open(out / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert list(table[0])[:14] == ["model", "domain", "strategy", "seed", "n", "accuracy", "ci_low", "ci_high",
                                   "mean_rounds", "model_calls", "prompt_tokens", "completion_tokens", "seconds",
                                   "usd"]
    assert [(r["strategy"], r["accuracy"], r["ci_low"], r["ci_high"], r["mean_rounds"], r["verifier_model"])
            for r in table] == [
        ("standard", "0", "0", "0.561497", "1", "judge"),
        ("sampling:k=2", "0", "0", "0.561497", "2", "judge"),
        ("LLM judge", "1", "0.438503", "1", "2", "judge"),
    ]
    payload = json.loads((out / "results.json").read_text())
    assert (payload["experiment"], len(payload["cells"]), payload["stopped"]) == ("sums", 3, None)
    md = (out / "results.md").read_text()
    assert "| gen | sums | LLM judge | 0 | 3/3 = 100% | 44%-100% | 2.00 | 12 | 810 |" in md
    assert "### sums · gen" in md and "| LLM judge | 3/3 = 100% @ 270 |" in md
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "experiment.json").read_text())["name"] == "sums"


def test_the_results_files_compare_each_pair_of_strategies_on_the_same_instances(tmp_path) -> None:
    run(tmp_path, Script())
    out = tmp_path / "exp"
    paired = json.loads((out / "results.json").read_text())["paired"]
    # standard and sampling solve none of the 3 sums, the judged loop all 3: every one of
    # its instances is discordant, so every resample's difference is +1, and McNemar's
    # exact p is 2 / 2**3.
    assert [(c["model"], c["domain"], c["seed"], c["a"], c["b"], c["n"], c["a_only"], c["b_only"], c["difference"],
             c["difference_ci95"], c["p_value"]) for c in paired] == [
        ("gen", "sums", 0, "standard", "sampling:k=2", 3, 0, 0, 0.0, [0.0, 0.0], 1.0),
        ("gen", "sums", 0, "standard", "LLM judge", 3, 0, 3, 1.0, [1.0, 1.0], 0.25),
        ("gen", "sums", 0, "sampling:k=2", "LLM judge", 3, 0, 3, 1.0, [1.0, 1.0], 0.25),
    ]
    md = (out / "results.md").read_text()
    assert "## Paired comparisons" in md
    assert "| gen | sums | 0 | standard | LLM judge | 3 | 0/3 = 0% | 3/3 = 100% | +100 (+100 to +100) | 0 | 3 | 0.250 |" in md
    # Each cell is a run directory of one strategy: nothing to pair inside it.
    assert json.loads((out / "gen" / "sums" / "standard-seed0" / "summary.json").read_text())["paired"] == []


def test_the_results_files_score_each_cells_verifier_against_ground_truth(tmp_path) -> None:
    run(tmp_path, Script())
    out = tmp_path / "exp"
    verifiers = json.loads((out / "results.json").read_text())["verifiers"]
    assert [(v["strategy"], v["score"]["n"], v["score"]["false_positives"], v["score"]["negatives"],
             v["score"]["false_negatives"], v["score"]["positives"]) for v in verifiers] == [
        # standard judges nothing; sampling's check rejects its 6 wrong samples; the judge
        # rejects each first "0" and accepts each corrected sum.
        ("sampling:k=2", 6, 0, 6, 0, 0),
        ("LLM judge", 6, 0, 3, 0, 3),
    ]
    # The check's module name gains a prefix when another test loaded a file of that name.
    assert [v["verifiers"] for v in verifiers][1] == ["llm"] and verifiers[0]["verifiers"][0].endswith("sums_check:check")
    md = (out / "results.md").read_text()
    assert ("| gen | sums | 0 | LLM judge | llm | 6 | 6/6 = 100% (61%-100%) | 0/3 = 0% (0%-56%) | 0/3 = 0% (0%-56%) | 0 |"
            in md.split("## Verifiers against ground truth")[1])


def test_a_spent_experiment_budget_stops_cleanly_and_a_higher_cap_continues_without_repeating_a_call(tmp_path):
    uncapped = Script()
    run(tmp_path, uncapped, out="whole", cache="whole.sqlite")

    script = Script()
    first = run(tmp_path, script, budget={"max_calls": 6})
    # standard: 3 calls; sampling: 2 for the first question, then the second's first sample
    # is the 6th call; its second is refused and that trajectory is dropped
    assert first.stopped == "the experiment budget is spent (6 of 6 calls; max_calls)"
    assert [(r.strategy, r.n, r.status) for r in first.rows] == [
        ("standard", 3, "complete"), ("sampling:k=2", 1, "incomplete"), ("LLM judge", 0, "incomplete")]
    assert first.incomplete_cells == ["gen · sums · sampling:k=2 · seed 0", "gen · sums · LLM judge · seed 0"]
    assert (first.backend_calls, len(script.generator_calls)) == (6, 6)
    md = (tmp_path / "exp" / "results.md").read_text()
    assert "\nStopped early: the experiment budget is spent (6 of 6 calls; max_calls).\n\nIncomplete cells (2): gen · " \
           "sums · sampling:k=2 · seed 0; gen · sums · LLM judge · seed 0.\n" in md
    assert "| gen | sums | sampling:k=2 | 0 | 0/1 = 0% | 0%-79% | 2.00 | 2 | 30 |" in md and "| incomplete 1/3 |" in md

    same = run(tmp_path, script, budget={"max_calls": 6})
    assert (same.backend_calls, same.stopped) == (0, first.stopped)

    more = run(tmp_path, script, budget={"max_calls": 100})
    assert (more.stopped, more.incomplete_cells) == (None, [])
    assert rows_of(more) == rows_of(run(tmp_path, Script(), out="whole", cache="whole.sqlite"))
    # the dropped trajectory's first sample came back from the cache: every prompt reached
    # a model exactly as often as in the run without a cap
    assert len(script.generator_calls) + len(script.judge_calls) == first.backend_calls + more.backend_calls == 18
    assert sorted(map(str, script.generator_calls)) == sorted(map(str, uncapped.generator_calls))


def test_a_spent_cell_budget_moves_on_to_the_next_cell(tmp_path) -> None:
    first = run(tmp_path, Script(), cell_budget={"max_calls": 4})
    assert first.stopped is None
    # sampling: two questions (4 calls); the LLM judge cell: one question (4 calls)
    assert [(r.strategy, r.n, r.model_calls) for r in first.rows] == [
        ("standard", 3, 3), ("sampling:k=2", 2, 4), ("LLM judge", 1, 4)]
    tokens = run(tmp_path, Script(), out="tok", cell_budget={"max_tokens": 100})
    # 15 tokens a generator call: the call that starts at 90 tokens may end above the cap
    assert [(r.strategy, r.n, r.prompt_tokens + r.completion_tokens) for r in tokens.rows] == [
        ("standard", 3, 45), ("sampling:k=2", 3, 90), ("LLM judge", 0, 0)]
    # a generator call costs $0.00002: nine of them, then the judge's call finds the cap spent
    dollars = run(tmp_path, Script(), out="usd", budget={"max_usd": 0.0002})
    assert [(r.strategy, r.n) for r in dollars.rows] == [("standard", 3), ("sampling:k=2", 3), ("LLM judge", 0)]
    assert dollars.stopped == "the experiment budget is spent ($0.0002 of $0.0002; max_usd)"
    assert run(tmp_path, Script(), cell_budget={"max_calls": 40}).incomplete_cells == []


def test_a_run_directory_of_a_cell_refuses_another_judge(tmp_path) -> None:
    run(tmp_path, Script())
    other = experiment(tmp_path)
    other["models"]["judge"]["id"] = "openai/another-judge"
    models = {"gen": veriloop.model(Script().generate, name="gen", identity="scripted-gen-v1", cache=False),
              "judge": veriloop.model(Script().judge, name="judge", identity="scripted-judge-v1", cache=False)}
    message = (r"exp/gen/sums/standard-seed0 holds a run made with models in roles "
               r'\{"verifier_model": "openai/scripted-judge"\}, not \{"verifier_model": "openai/another-judge"\}')
    with pytest.raises(VeriloopError, match=message):
        veriloop.eval_experiment(other, out=tmp_path / "exp", models=models, cache=tmp_path / "c.sqlite",
                                 progress=False)


def test_models_given_by_name_must_be_in_the_experiment(tmp_path) -> None:
    with pytest.raises(VeriloopError, match="models= names nope, not under the experiment's models: gen, judge"):
        veriloop.eval_experiment(experiment(tmp_path), out=tmp_path / "x", models={"nope": Script().generate})
    with pytest.raises(VeriloopError, match=r"models.gen has no id: give it one .* models=\{'gen': \.\.\.\}"):
        veriloop.eval_experiment(experiment(tmp_path), out=tmp_path / "x", models={"judge": Script().judge})


def test_an_unknown_model_id_is_an_error_of_the_file() -> None:
    with pytest.raises(VeriloopError, match=r"^demo.toml, line 6: models.small.id: unknown model 'smollm3'; use a "
                                            r"pack \(qwen2.5-coder-1.5b, "):
        parse_experiment(ISSUE_EXAMPLE.replace('"smollm2-135m"', '"smollm3"'), "demo.toml")


def test_critic_and_checker_roles_go_to_their_models(tmp_path) -> None:
    """feedback=llm's critique goes to critic_model and SelfCheck's checks to
    checker_model; the generator answers only its own calls."""
    script, critic, checker = Script(), [], []

    def critique(messages):
        critic.append(messages)
        return "The sum is wrong; add the two numbers again."

    def check(messages):
        checker.append(messages)
        return "The step is correct."

    spec = experiment(tmp_path, strategies=[
        "backprompt:verifier=sound,feedback=llm,max_rounds=2", "selfcheck:n=2,max_steps=1"])
    del spec["models"]["judge"]
    spec["models"].update({"critic": {}, "checker": {}})
    spec["roles"] = {"critic_model": "critic", "checker_model": "checker"}
    spec["tasks"][0]["n"] = 1
    models = {
        "gen": veriloop.model(script.generate, name="gen", identity="g", cache=False),
        "critic": veriloop.model(critique, name="critic", identity="c", cache=False),
        "checker": veriloop.model(check, name="checker", identity="k", cache=False),
    }
    result = veriloop.eval_experiment(spec, out=tmp_path / "roles", models=models, cache=False, progress=False)
    assert [(r.strategy, r.critic_model, r.checker_model, r.status) for r in result.rows] == [
        ("backprompt:verifier=sound,feedback=llm,max_rounds=2", "critic", "checker", "complete"),
        ("selfcheck:n=2,max_steps=1", "critic", "checker", "complete"),
    ]
    records = {p.cell.strategy: veriloop.runs.runner.load_trajectories(p.run_dir / "trajectories.jsonl")[0]
               for p in result.plans}
    backprompt, selfcheck = records.values()
    assert [(c.role, c.model) for c in backprompt.calls] == [("generate", None), ("critique", "critic"),
                                                            ("generate", None)]
    assert {(c.role, c.model) for c in selfcheck.calls} == {("generate", None), ("check", "checker")}
    assert len(critic) == 1 and len(checker) == sum(c.role == "check" for c in selfcheck.calls) > 0
    assert len(script.generator_calls) == 4  # two backprompt answers, and a function answers one sample a call


def test_one_progress_line_names_the_cell_and_counts_trajectories_calls_and_tokens(tmp_path) -> None:
    import asyncio
    import io

    from rich.console import Console

    from veriloop.experiment.engine import Progress, load_models, plan, run_eval
    from veriloop.experiment.overrides import experiment_from_data
    from veriloop.progress import ProgressReporter

    script = Script()
    exp = experiment_from_data(experiment(tmp_path, strategies=["standard", "sampling:k=2"]))
    plans = plan(exp, tmp_path / "p")
    models = load_models(exp, ["gen", "judge"], use_cache=False, given={
        "gen": veriloop.model(script.generate, name="gen", identity="g", cache=False),
        "judge": veriloop.model(script.judge, name="judge", identity="j", cache=False)})
    console = Console(file=io.StringIO(), width=120, color_system=None)
    reporter = ProgressReporter("sums", live=False, console=console, now=lambda: 0.0)

    async def go() -> None:
        with reporter:
            await run_eval(exp, tmp_path / "p", models, Progress(reporter.update_stage, reporter.tokens_done), plans)

    asyncio.run(go())
    first, second = "cell 1/2: gen · sums · standard · seed 0", "cell 2/2: gen · sums · sampling:k=2 · seed 0"
    assert console.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        f"{first}: 0/6, 0 calls, 0:00:00, eta ?",
        f"{first}: 1/6, 1 call, 15 tok, 0:00:00, eta 0:00:00",
        f"{first}: 2/6, 2 calls, 30 tok, 0:00:00, eta 0:00:00",
        f"{first}: 3/6, 3 calls, 45 tok, 0:00:00, eta 0:00:00",
        f"{second}: 3/6, 3 calls, 45 tok, 0:00:00, eta ?",
        f"{second}: 4/6, 5 calls, 75 tok, 0:00:00, eta 0:00:00",
        f"{second}: 5/6, 7 calls, 105 tok, 0:00:00, eta 0:00:00",
        f"{second}: 6/6, 9 calls, 135 tok, 0:00:00, eta 0:00:00",
    ]


def test_a_function_model_without_a_cache_is_counted(tmp_path):
    calls: list[int] = []

    def answer(messages):
        calls.append(1)
        return "8"

    domain = veriloop.Task.from_records(
        [{"q": "two plus two"}, {"q": "three plus five"}], prompt="{q}", check=lambda row, answer: answer == "8"
    )
    strategies = [parse_strategy("standard"), parse_strategy("self-consistency:k=3")]
    model = veriloop.model(answer, identity="eight", cache=False)
    result = asyncio.run(run_experiment(model, domain, strategies, domain.load_instances(None), tmp_path))
    # 2 instances x (1 standard + 3 self-consistency samples): every sample is a function call.
    assert len(calls) == 8
    assert result.backend_calls == 8
    assert json.loads((tmp_path / "summary.json").read_text())["backend_calls_this_run"] == 8
