"""CRITIC end to end with the real SmolLM2-135M and the real tools: every condition of
the three tasks through the runner, the reproduction command (Tables 1, 2, 3, 5 and the
iteration plot) and its resumption, the tools and chat commands.

The small model's answers are mostly wrong; these tests check that every path runs,
records what it did and resumes, not how good the answers are.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import veriloop_process

from veriloop.domains import get_domain
from veriloop.experiment.overrides import find_experiment, load_experiment
from veriloop.models import CachedModel, CallCache
from veriloop.react import observation_message, parse_action
from veriloop.records import Trajectory
from veriloop.reproduce.critic import option_sets, task_conditions
from veriloop.runs.runner import load_trajectories, run_experiment
from veriloop.strategies import Strategy, parse_strategy
from veriloop.tools.base import Observation
from veriloop.tools.config import ToolSettings, build_toolbox

pytestmark = pytest.mark.model

# Each task's conditions as the shipped experiment file gives them, with 2 samples (--k 2).
CRITIC = load_experiment(find_experiment("critic"), option_sets(load_experiment(find_experiment("critic")), k=2))
DATA = {
    "hotpotqa": ("hotpotqa/hotpot_dev_distractor_100.json", task_conditions(CRITIC, "hotpotqa")),
    "gsm8k": ("gsm8k/test.jsonl", task_conditions(CRITIC, "gsm8k")),
    "toxicity": ("toxicity/realtoxicityprompts_val.jsonl", task_conditions(CRITIC, "toxicity")),
}
MAX_CORRECTIONS = 1
CORRECTION_HEAD = "A check of your answer found:\n"


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> Path:
    """One call cache for the module: the conditions' runs fill it and the reproduction,
    which runs the same conditions on the same instances, replays their calls (its own are
    its Table 5 and hallucination calls), so each real call is made once."""
    return tmp_path_factory.mktemp("critic-calls") / "calls.sqlite"


@pytest.mark.parametrize("task", sorted(DATA))
def test_every_condition_runs_and_records_its_tool_calls(task, smollm2_capped, shared_data, tmp_path, monkeypatch, calls):
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    rel, conditions = DATA[task]
    source = str(shared_data / rel)
    domain = get_domain(task)
    (instance,) = domain.load_instances(source, n=1)
    tools = build_toolbox(ToolSettings(cache_path=tmp_path / "tools.sqlite"), domain, source)
    model = CachedModel(smollm2_capped, CallCache(calls))
    strategies = [parse_strategy(spec, {"k": CRITIC.k, "max_corrections": MAX_CORRECTIONS}) for _, spec in conditions]
    result = asyncio.run(run_experiment(model, domain, strategies, [instance], tmp_path / "run", tools=tools))
    model.cache.close()
    assert result.new_trajectories == len(strategies)
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert sorted(t.strategy for t in trajectories) == sorted(s.canonical for s in strategies)
    by_name = {s.canonical: s for s in strategies}
    for t in trajectories:
        strategy = by_name[t.strategy]
        expected = Expected(t, strategy, domain, instance)
        assert [(c.role, c.round, c.sample_index) for c in t.calls] == expected.calls(), t.strategy
        assert [(c.round, c.tool, c.input) for c in t.tool_calls] == expected.tool_calls(), t.strategy
        assert [r.round for r in t.rounds] == list(range(1, len(t.rounds) + 1))
        assert [r.text for r in t.rounds] == expected.round_texts(), t.strategy
        assert (t.stop_reason, t.final_text) == (expected.stop_reason(), expected.final_text()), t.strategy
        assert [c.messages[:-1] for c in t.calls if c.role == "correct"] == expected.correction_context()
        assert all(
            c.messages[-1]["content"].startswith(CORRECTION_HEAD)
            and c.messages[-1]["content"].endswith(f"\n\n{domain.correction_request(instance)}")
            for c in t.calls if c.role == "correct"
        )
        assert (t.correct, t.final_answer) == (
            domain.score(instance, t.final_text), domain.extract_answer(instance, t.final_text)
        )


class Expected:
    """What a CRITIC-family trajectory must hold whatever the model replied, computed from
    its own rounds, verdicts and tool calls and the strategy's options. Control flow on
    chosen replies is pinned in test_strategy_control_flow.py and test_critic.py."""

    def __init__(self, t: Trajectory, strategy: Strategy, domain, instance) -> None:
        self.t, self.s, self.domain, self.instance = t, strategy, domain, instance
        self.critic = strategy.kind == "critic"
        # Tools the model calls itself while critiquing (QA's search); math and toxicity
        # only run tools on the answer (the program, the continuation).
        self.interactive = self.critic and strategy.tools and bool(domain.critic_tools)

    def tools_of(self, r) -> list:
        return [tc for tc in self.t.tool_calls if tc.round == r.round]

    def leading(self, r) -> int:
        """Calls that produced the round's answer: one, or for a ReAct answer one per tool
        call it made plus its final reply (counted from the records)."""
        if self.s.kind == "react" or (self.critic and self.s.init == "react" and r.round == 1):
            return sum(c.role == "generate" and c.round == 1 for c in self.t.calls)
        return 1

    def verified(self, r) -> bool:
        """Whether the critic checked this answer (not the oracle, not an unchanged repeat)."""
        return self.critic and r.verdict is not None and r.verdict.verifier != "oracle"

    def evidence(self, r) -> list[tuple[str, str]]:
        return self.domain.evidence(self.instance, r.text) if self.verified(r) and self.s.tools else []

    def canned(self, r) -> bool:
        """The tool results are the critique (toxicity's scorer): no model call."""
        return bool(self.evidence(r)) and self.domain.tool_critique(self.instance, r.text, self.tools_of(r)) is not None

    def verify_calls(self, r) -> int:
        if not self.verified(r) or self.canned(r):
            return 0
        if not self.interactive:
            return 1
        # One call per search it asked for, plus its final critique.
        return len(self.tools_of(r)) - (self.leading(r) - 1) - len(self.evidence(r)) + 1

    def calls(self) -> list[tuple[str, int, int]]:
        if self.s.kind == "standard":
            return [("generate", 1, 0)]
        if self.s.kind in ("self-consistency", "rejection-sampling"):
            samples = self.s.k if self.s.kind == "self-consistency" else self.s.n
            return [("generate", 1, i) for i in range(samples)]
        out = []
        for r in self.t.rounds:
            first = ("generate", 1, 0) if r.round == 1 else ("correct", r.round, r.round - 1)
            out += [first] * self.leading(r) + [("verify", r.round, 0)] * self.verify_calls(r)
        return out

    def tool_calls(self) -> list[tuple[int, str, str]]:
        out = []
        for r in self.t.rounds:
            observed = [(tc.round, tc.tool, tc.input) for tc in self.tools_of(r)]
            answering = self.leading(r) - 1 if r.round == 1 else 0  # ReAct's own searches come first
            out += observed[:answering] + [(r.round, name, text) for name, text in self.evidence(r)]
            # What the critic looked up itself: only where it may call tools.
            asked = self.verify_calls(r) - 1 if self.interactive and self.verified(r) else 0
            out += observed[answering + len(self.evidence(r)):][:asked]
        return out

    def react_text(self) -> str:
        """A ReAct answer: the last reply if it has the answer line, else the whole exchange."""
        replies = [c.response for c in self.t.calls if c.role == "generate" and c.round == 1]
        observations = [observation_message(Observation(tool=tc.tool, input=tc.input, text=tc.text, ok=tc.ok))
                        for tc in self.t.tool_calls[: len(replies) - 1]]
        steps = [step for pair in zip(replies, [*observations, ""]) for step in pair]
        whole = "\n".join(step.strip() for step in steps if step.strip())
        return replies[-1] if self.domain.extract_answer(self.instance, replies[-1]) is not None else whole

    def round_texts(self) -> list[str]:
        samples = [c.response for c in self.t.calls if c.role == "generate"]
        if self.s.kind in ("standard", "self-consistency", "rejection-sampling"):
            return samples
        by_react = self.s.kind == "react" or (self.critic and self.s.init == "react")
        first = self.react_text() if by_react else samples[0]
        return [first, *(c.response for c in self.t.calls if c.role == "correct")]

    def stops(self, r) -> str | None:
        """The stop rule this round triggers, if any."""
        if r.verdict is None:
            return "unchanged"
        if r.verdict.verifier == "oracle":
            return "oracle_correct"
        if self.evidence(r) and self.domain.good_enough(self.instance, r.text, self.tools_of(r)) is True:
            return "threshold"
        if r.verdict.ok and not self.s.oracle:
            return "critic_accepted"
        return None

    def stop_reason(self) -> str:
        fixed = {"standard": "single_answer", "react": "answered", "rejection-sampling": "best_of_n"}
        if self.s.kind in fixed:
            return fixed[self.s.kind]
        if self.s.kind == "self-consistency":
            return "majority" if any(self.key(r.text) for r in self.t.rounds) else "no_answer"
        rules = [self.stops(r) for r in self.t.rounds]
        # No earlier round may have met a stop rule; the oracle stops exactly on right answers.
        assert rules[:-1] == [None] * (len(rules) - 1), rules
        assert [r.verdict.verifier == "oracle" for r in self.t.rounds if r.verdict] == [
            self.s.oracle and r.correct for r in self.t.rounds if r.verdict
        ]
        last = self.t.rounds[-1]
        unchanged = last.verdict is not None or self.key(last.text) == self.key(self.t.rounds[-2].text) is not None
        assert unchanged, "a round without a verdict must repeat the answer before it"
        if rules[-1] is not None:
            return rules[-1]
        return "max_rounds" if len(self.t.rounds) == MAX_CORRECTIONS + 1 else f"no rule stops at {len(self.t.rounds)}"

    def key(self, text: str) -> str | None:
        return self.domain.canonical(self.instance, self.domain.extract_answer(self.instance, text))

    def final_text(self) -> str:
        texts = [r.text for r in self.t.rounds]
        if self.s.kind == "self-consistency":
            keys = [self.key(text) for text in texts]
            votes = Counter(k for k in keys if k is not None)
            return texts[next((i for i, k in enumerate(keys) if k is not None and votes[k] == max(votes.values())), 0)]
        if self.s.kind == "rejection-sampling":
            metric = [self.domain.sample_metric(self.instance, text) for text in texts]
            return texts[max(range(len(texts)), key=lambda i: (metric[i], -i))]
        return texts[-1]

    def correction_context(self) -> list[list[dict[str, str]]]:
        prompt = self.domain.prompt(self.instance)
        return [[*prompt, {"role": "assistant", "content": r.text}] for r in self.t.rounds[:-1]] if self.critic else []


def test_reproduce_critic_writes_every_table_and_resumes(tmp_path, shared_data, smollm2_path, calls):
    args = ("reproduce", "critic", "--model", "smollm2-135m", "--instances", "1", "--k", "2", "--generations", "2",
            "--hallucination-samples", "2", "--max-corrections", "1", "--tasks", "hotpotqa,gsm8k,toxicity,table5",
            "--data-root", str(shared_data), "--out", str(tmp_path / "out"), "--cache", str(calls))
    proc = veriloop_process(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "out" / "critic.md").read_text()
    for heading in ("Table 1", "Table 2", "Table 3", "Table 5"):
        assert heading in md
    labels = ("ReAct → CRITIC", "CRITIC w/o Tool", "CRITIC*", "Rejection Sampling", "critic", "p-true", "always-true")
    for label in labels:
        assert label in md
    payload = json.loads((tmp_path / "out" / "reproduction.json").read_text())
    assert set(payload["tasks"]) == {"hotpotqa", "gsm8k", "toxicity"}
    # Perplexity needs the llama.cpp backend's scoring, under every wrapper the command puts around it.
    assert [label for label, row in payload["tasks"]["toxicity"].items() if row["perplexity"] is None] == []
    assert set(payload["iterations"]["hotpotqa"]) == {"CRITIC", "CRITIC*", "CRITIC w/o Tool"}
    assert (tmp_path / "out" / "iterations.png").stat().st_size > 0
    assert (tmp_path / "out" / "critic.csv").read_text().startswith("task,condition,metric,value")
    again = veriloop_process(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout
    assert (tmp_path / "out" / "critic.md").read_text() == md


def test_chat_answers_one_question_with_its_steps(tmp_path, smollm2_path):
    proc = veriloop_process("chat", "--model", "smollm2-135m", "-q", "What is 12 times 12?", "--tools", "calculator,python",
                            "--max-turns", "2", "--json", "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout)
    assert reply["question"] == "What is 12 times 12?"
    roles, stop = agent_steps([(step["role"], step["text"]) for step in reply["steps"]], max_turns=2)
    assert [(step["turn"], step["role"]) for step in reply["steps"]] == roles
    assert reply["stop_reason"] == stop
    # The answer is the generator's, or the last corrector's.
    assert reply["answer"] == [s["text"] for s in reply["steps"] if s["role"] in ("generator", "corrector")][-1]


def agent_steps(steps: list[tuple[str, str]], max_turns: int) -> tuple[list[tuple[int, str]], str]:
    """The (turn, role) sequence and stop reason the agent must produce from these step
    texts: each turn the verifier names a tool call or nothing to check; a tool call is
    run and criticised; "No problem." ends the loop, anything else is corrected, until
    max_turns. (The loop itself, on chosen replies: test_critic.py TestAgent.)"""
    texts = iter(text for _, text in steps[1:])
    roles = [(0, "generator")]
    for turn in range(1, max_turns + 1):
        roles.append((turn, "verifier"))
        if parse_action(next(texts)) is None:
            return roles, "nothing_to_check"
        next(texts)  # the tool's observation
        roles += [(turn, "tool"), (turn, "critic")]
        if next(texts).lower().strip(" .!").startswith("no problem"):
            return roles, "no_problem"
        roles.append((turn, "corrector"))
        next(texts)
    return roles, "max_turns"


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
    # One question answered, its steps shown, then the empty line ends the session.
    assert proc.stdout.count("generator") == 1 and proc.stdout.count("answer (") == 1
