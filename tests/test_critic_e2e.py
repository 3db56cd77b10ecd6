"""CRITIC end to end with the real SmolLM2-135M and the real tools: every condition of
the three tasks through the runner, the reproduction command (Tables 1, 2, 3, 5 and the
iteration plot) and its resumption, the tools and chat commands.

The small model's answers are mostly wrong; these tests check that every path runs,
records what it did and resumes, not how good the answers are.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from test_cli import veriloop
from veriloop.domains import get_domain
from veriloop.experiment.runner import load_trajectories, run_experiment
from veriloop.models import CachedModel, CallCache
from veriloop.reproduce.critic import MATH_CONDITIONS, QA_CONDITIONS, TOXICITY_CONDITIONS
from veriloop.strategies import parse_strategy
from veriloop.tools.config import ToolSettings, build_toolbox

pytestmark = pytest.mark.model

STOP_REASONS = {"critic_accepted", "unchanged", "max_rounds", "oracle_correct", "threshold", "answered", "best_of_n",
                "single_answer", "majority", "no_answer", "context_overflow"}
DATA = {
    "hotpotqa": ("hotpotqa/hotpot_dev_distractor_100.json", QA_CONDITIONS),
    "gsm8k": ("gsm8k/test.jsonl", MATH_CONDITIONS),
    "toxicity": ("toxicity/realtoxicityprompts_val.jsonl", TOXICITY_CONDITIONS),
}


@pytest.mark.parametrize("task", sorted(DATA))
def test_every_condition_runs_and_records_its_tool_calls(task, smollm2, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    rel, conditions = DATA[task]
    source = str(shared_data / rel)
    domain = get_domain(task)
    instances = domain.load_instances(source, n=1)
    tools = build_toolbox(ToolSettings(cache_path=tmp_path / "tools.sqlite"), domain, source)
    model = CachedModel(smollm2, CallCache(tmp_path / "calls.sqlite"))
    strategies = [parse_strategy(spec.format(k=2), {"max_corrections": 1}) for _, spec in conditions]
    result = asyncio.run(run_experiment(model, domain, strategies, instances, tmp_path / "run", tools=tools))
    assert result.new_trajectories == len(strategies)
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    for t in trajectories:
        assert t.stop_reason in STOP_REASONS, (t.strategy, t.stop_reason)
        assert t.rounds and t.calls and t.final_text is not None
    with_tools = [t for t in trajectories if t.strategy.startswith("critic") and "tools=True" in t.strategy]
    if task in ("gsm8k", "toxicity"):
        # The program is always run / the text always scored before the critique.
        for t in with_tools:
            if t.stop_reason != "oracle_correct":
                assert t.tool_calls and t.tool_calls[0].tool == {"gsm8k": "python", "toxicity": "toxicity"}[task]
    for t in trajectories:
        if "tools=False" in t.strategy:
            assert t.tool_calls == []
    model.cache.close()


def test_reproduce_critic_writes_every_table_and_resumes(tmp_path, shared_data, smollm2_path):
    args = ("reproduce", "critic", "--model", "smollm2-135m", "--instances", "1", "--k", "2", "--generations", "2",
            "--hallucination-samples", "2", "--max-corrections", "1", "--tasks", "hotpotqa,gsm8k,toxicity,table5",
            "--data-root", str(shared_data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "calls.sqlite"))
    proc = veriloop(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "out" / "critic.md").read_text()
    for heading in ("Table 1", "Table 2", "Table 3", "Table 5"):
        assert heading in md
    for label in ("ReAct → CRITIC", "CRITIC w/o Tool", "CRITIC*", "Rejection Sampling", "critic", "p-true", "always-true"):
        assert label in md
    payload = json.loads((tmp_path / "out" / "reproduction.json").read_text())
    assert set(payload["tasks"]) == {"hotpotqa", "gsm8k", "toxicity"}
    assert set(payload["iterations"]["hotpotqa"]) == {"CRITIC", "CRITIC*", "CRITIC w/o Tool"}
    assert (tmp_path / "out" / "iterations.png").stat().st_size > 0
    assert (tmp_path / "out" / "critic.csv").read_text().startswith("task,condition,metric,value")
    again = veriloop(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout
    assert (tmp_path / "out" / "critic.md").read_text() == md


def test_chat_answers_one_question_with_its_steps(tmp_path, smollm2_path):
    proc = veriloop("chat", "--model", "smollm2-135m", "-q", "What is 12 times 12?", "--tools", "calculator,python",
                    "--max-turns", "2", "--json", "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout)
    assert reply["question"] == "What is 12 times 12?" and reply["answer"]
    assert reply["steps"][0]["role"] == "generator"
    assert reply["stop_reason"] in {"no_problem", "max_turns", "nothing_to_check"}


def test_chat_reads_questions_until_an_empty_line(tmp_path, smollm2_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "veriloop.cli", "chat", "--model", "smollm2-135m", "--tools", "calculator",
         "--max-turns", "1", "--cache", str(tmp_path / "calls.sqlite")],
        input="What is 2+2?\n\n", capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "generator" in proc.stdout and "answer" in proc.stdout
