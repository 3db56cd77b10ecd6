"""The executor seam (experiment/executor.py): executors found by name, the local one
loading and closing its own models, the Ray one refusing what only this process can run
before it starts anything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from scripted import Adder

from veriloop import VeriloopError
from veriloop.experiment.engine import ExecutorOptions, execute, plan, run_eval
from veriloop.experiment.executor import EXECUTORS, open_executor
from veriloop.experiment.overrides import parse_experiment
from veriloop.experiment.schema import Experiment


def sums(tmp_path: Path) -> Experiment:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"q": f"{i}+{i}", "a": str(2 * i)}) + "\n" for i in range(3)))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    return parse_experiment(f"""
name = "sums"
strategies = ["standard", "sampling:k=2"]
[models.gen]
price = {{prompt = 1.0, completion = 2.0}}
[[tasks]]
file = {json.dumps(str(data))}
prompt = "{{q}}"
check = {json.dumps(f"python:{check}:check")}
label = "sums"
""", "sums.toml")


def figures(result) -> list[tuple]:
    return [(r.strategy, r.n, r.correct, r.model_calls, r.prompt_tokens, r.completion_tokens, round(r.usd, 8), r.status)
            for r in result.rows]


def test_the_executors_are_local_and_ray_and_an_unknown_name_lists_them(tmp_path) -> None:
    assert [(name, EXECUTORS.source(name)) for name in EXECUTORS] == [("local", "veriloop"), ("ray", "veriloop")]
    with pytest.raises(VeriloopError, match=r"^unknown executor 'slurm'; choose one of: local, ray$"):
        open_executor("slurm", sums(tmp_path), ["gen"], ExecutorOptions())


def test_the_local_executor_by_name_runs_as_run_eval_does_and_leaves_a_given_model_open(tmp_path) -> None:
    experiment = sums(tmp_path)
    given = Adder()
    direct = asyncio.run(run_eval(experiment, tmp_path / "direct", {"gen": given}, None,
                                  plan(experiment, tmp_path / "direct")))
    named = asyncio.run(execute(experiment, tmp_path / "named", executor="local",
                                options=ExecutorOptions(use_cache=False, given={"gen": given})))
    assert figures(named) == figures(direct) == [
        ("standard", 3, 3, 3, 30, 15, 0.00006, "complete"), ("sampling:k=2", 3, 3, 3, 30, 15, 0.00006, "complete"),
    ]
    assert (named.backend_calls, named.cluster) == (direct.backend_calls, direct.cluster) == (6, None)
    assert given.closed == 0  # the caller's model: the caller closes it


def test_the_local_executor_refuses_an_address_or_a_shard_size(tmp_path) -> None:
    for options in (ExecutorOptions(address="auto"), ExecutorOptions(shard_size=4)):
        with pytest.raises(VeriloopError, match="go with the ray executor: drop them, or choose ray"):
            open_executor("local", sums(tmp_path), ["gen"], options)


def test_the_ray_executor_refuses_a_model_given_from_python_before_it_starts_anything(tmp_path) -> None:
    with pytest.raises(VeriloopError, match="a model passed from Python runs only with the local executor"):
        open_executor("ray", sums(tmp_path), ["gen"], ExecutorOptions(given={"gen": Adder()}))
