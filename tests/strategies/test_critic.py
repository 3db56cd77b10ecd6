"""CRITIC's loop, its ReAct protocol, its verdicts, the hallucination-detection measures
and the agent.

Control-flow tests drive the loop with a scripted model (the replies are the test's
input; every other part — the QA domain, BM25 search over a real corpus, the toolbox,
the episode records — is the real one). Model-backed runs are in test_critic_e2e.py.
"""

from __future__ import annotations

import asyncio
import math
import threading

import pytest
from helpers import pairwise_auroc, veriloop
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted import ScriptedModel, search_toolbox

from veriloop.agent import ask
from veriloop.domains import get_domain
from veriloop.episode import Episode
from veriloop.models.base import TokenLogprob
from veriloop.react import OBSERVATION, parse_action
from veriloop.records import Trajectory
from veriloop.strategies import parse_strategy
from veriloop.studies.hallucination import auroc, four_option_confidence, option_probabilities
from veriloop.tools.base import Observation, Toolbox, ToolCache
from veriloop.verdict_text import parse_verdict

CORPUS = [
    {"title": "Paris", "text": "Paris is the capital and most populous city of France."},
    {"title": "Lyon", "text": "Lyon is the third-largest city of France, on the Rhone."},
    {"title": "Berlin", "text": "Berlin is the capital and largest city of Germany."},
]


@pytest.fixture()
def toolbox(tmp_path, monkeypatch) -> Toolbox:
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    return search_toolbox(tmp_path, CORPUS)


def run_strategy(spec: str, replies: list[str], toolbox: Toolbox | None, reference: str = "Paris"):
    domain = get_domain("hotpotqa")
    instance = domain.parse_instance({"question": "What is the capital of France?", "reference": reference})
    model = ScriptedModel(replies)
    t = Trajectory(strategy=spec, domain=domain.name, model="scripted", instance_id=instance.id, seed=0)
    episode = Episode(model=model, domain=domain, instance=instance, seed=0, trajectory=t, tools=toolbox)
    asyncio.run(parse_strategy(spec).run(episode))
    return t, model


ANSWER_LYON = "France's capital is Lyon.\nSo the answer is: Lyon"
ANSWER_PARIS = "The capital of France is Paris.\nSo the answer is: Paris"


class TestCriticLoop:
    def test_critic_that_accepts_stops_after_one_round_with_its_search_recorded(self, toolbox):
        t, model = run_strategy(
            "critic",
            [ANSWER_PARIS, "Action: search\nAction Input: capital of France", "The evidence agrees.\nVerdict: correct"],
            toolbox,
        )
        assert t.stop_reason == "critic_accepted" and t.correct and len(t.rounds) == 1
        assert [c.tool for c in t.tool_calls] == ["search"]
        assert "[Paris]" in t.tool_calls[0].text
        # The observation went back to the model as a user turn, and the model was cut
        # at "Observation:" so it could not write the evidence itself.
        messages, params = model.asked[2]
        assert messages[-1]["role"] == "user" and messages[-1]["content"].startswith(OBSERVATION)
        assert OBSERVATION in model.asked[1][1].stop

    def test_rejected_answer_is_corrected_with_the_critique_and_verified_again(self, toolbox):
        t, model = run_strategy(
            "critic",
            [
                ANSWER_LYON,
                "Action: search\nAction Input: capital of France",
                "The evidence says Paris is the capital.\nVerdict: incorrect",
                ANSWER_PARIS,
                "Verdict: correct",
            ],
            toolbox,
        )
        assert t.stop_reason == "critic_accepted" and t.correct
        assert [r.answer for r in t.rounds] == ["Lyon", "Paris"]
        correction_prompt = model.asked[3][0][-1]["content"]
        assert "Paris is the capital" in correction_prompt and "[Paris]" in correction_prompt
        assert [c.role for c in t.calls] == ["generate", "verify", "verify", "correct", "verify"]

    def test_unchanged_answer_stops_the_loop(self, toolbox):
        t, _ = run_strategy(
            "critic",
            [ANSWER_LYON, "Verdict: incorrect", "I still think so.\nSo the answer is: Lyon"],
            toolbox,
        )
        assert t.stop_reason == "unchanged" and not t.correct and len(t.rounds) == 2

    def test_max_corrections_bounds_the_rounds(self, toolbox):
        answers = ["So the answer is: Lyon", "So the answer is: Nice", "So the answer is: Lille"]
        replies = [answers[0], "Verdict: incorrect", answers[1], "Verdict: incorrect", answers[2], "Verdict: incorrect"]
        t, model = run_strategy("critic:max_corrections=2", replies, toolbox)
        assert t.stop_reason == "max_rounds" and len(t.rounds) == 3 and not model.replies

    def test_oracle_stops_on_a_right_answer_without_asking_the_critic(self, toolbox):
        t, model = run_strategy("critic:oracle=true", [ANSWER_PARIS], toolbox)
        assert t.stop_reason == "oracle_correct" and len(model.asked) == 1

    def test_oracle_ignores_a_critic_that_wrongly_accepts(self, toolbox):
        t, _ = run_strategy(
            "critic:oracle=true", [ANSWER_LYON, "Verdict: correct", ANSWER_PARIS], toolbox
        )
        assert t.stop_reason == "oracle_correct" and t.correct and len(t.rounds) == 2

    def test_tool_budget_is_enforced_then_the_critic_must_conclude(self, toolbox):
        asks = [f"Action: search\nAction Input: query {i}" for i in range(3)]
        t, model = run_strategy(
            "critic:max_interactions=3,max_corrections=0", [ANSWER_PARIS, *asks, "Verdict: correct"], toolbox
        )
        assert len(t.tool_calls) == 3
        last_prompt = model.asked[-1][0][-1]["content"]
        assert "used all your tool calls" in last_prompt
        assert t.stop_reason == "critic_accepted"

    def test_unknown_tool_is_reported_back_and_the_run_goes_on(self, toolbox):
        t, model = run_strategy(
            "critic:max_corrections=0",
            [ANSWER_PARIS, "Action: wikipedia\nAction Input: France", "Verdict: correct"],
            toolbox,
        )
        assert not t.tool_calls[0].ok
        assert "no tool called 'wikipedia'" in model.asked[-1][0][-1]["content"]
        assert "search" in model.asked[-1][0][-1]["content"]

    def test_without_tools_nothing_runs_and_the_model_writes_its_own_evidence(self, toolbox):
        t, model = run_strategy(
            "critic:tools=false,max_corrections=0",
            [
                ANSWER_PARIS,
                "Action: search\nAction Input: France\nObservation: Paris is the capital.\nVerdict: correct",
            ],
            toolbox,
        )
        assert t.tool_calls == [] and t.stop_reason == "critic_accepted"
        assert "You have no tools" in model.asked[1][0][-1]["content"]
        assert OBSERVATION not in model.asked[1][1].stop

    def test_unreadable_critique_is_not_an_acceptance(self, toolbox):
        t, _ = run_strategy("critic:max_corrections=0", [ANSWER_LYON, "Hmm, hard to say."], toolbox)
        assert t.stop_reason == "max_rounds" and t.rounds[0].verdict.unreadable

    def test_react_answers_after_searching(self, toolbox):
        t, _ = run_strategy(
            "react", ["Action: search\nAction Input: capital of France", "So the answer is: Paris"], toolbox
        )
        assert t.correct and t.stop_reason == "answered" and len(t.tool_calls) == 1

    def test_react_then_critic(self, toolbox):
        t, _ = run_strategy(
            "critic:init=react",
            ["Action: search\nAction Input: capital of France", "So the answer is: Paris", "Verdict: correct"],
            toolbox,
        )
        assert t.correct and t.stop_reason == "critic_accepted"

    def test_rejection_sampling_keeps_the_best_by_f1(self, toolbox):
        samples = ["So the answer is: Lyon", "So the answer is: Paris, France", "So the answer is: Paris"]
        t, _ = run_strategy("rejection-sampling:n=3", samples, toolbox)
        assert t.final_answer == "Paris" and t.stop_reason == "best_of_n"

    def test_a_domain_without_critic_support_is_a_clear_error(self):
        from veriloop.errors import VeriloopError

        domain = get_domain("game24")
        instance = domain.parse_instance({"instance": "1 1 4 6"})
        t = Trajectory(strategy="critic", domain="game24", model="m", instance_id=instance.id, seed=0)
        episode = Episode(model=ScriptedModel([]), domain=domain, instance=instance, seed=0, trajectory=t)
        with pytest.raises(VeriloopError, match="does not support CRITIC"):
            asyncio.run(parse_strategy("critic").run(episode))


class FlakyTool:
    name = "flaky"
    description = "raises or hangs"
    deterministic = True

    def __init__(self, mode: str) -> None:
        self.mode = mode
        # A hanging run waits for this (5 s at most): the test lets it go once the toolbox has
        # given up on it, since asyncio.run waits for the thread it runs in before returning.
        self.released = threading.Event()

    def identity(self) -> str:
        return self.mode

    def run(self, tool_input: str) -> Observation:
        if self.mode == "raise":
            raise RuntimeError("disk on fire")
        self.released.wait(5)
        return Observation(tool=self.name, input=tool_input, text="late")


class TestToolbox:
    def test_a_tool_that_raises_becomes_a_failed_observation(self):
        obs = asyncio.run(Toolbox([FlakyTool("raise")]).call("flaky", "x"))
        assert not obs.ok and "disk on fire" in obs.text

    def test_a_tool_that_hangs_times_out_as_an_observation(self):
        hangs = FlakyTool("hang")

        async def call_then_release() -> Observation:
            try:
                return await Toolbox([hangs], timeout=0.2).call("flaky", "x")
            finally:
                hangs.released.set()

        obs = asyncio.run(call_then_release())
        assert not obs.ok and "did not answer" in obs.text

    def test_results_are_cached_and_failures_are_not(self, toolbox, tmp_path):
        first = asyncio.run(toolbox.call("search", "capital of Germany"))
        again = asyncio.run(toolbox.call("search", "capital of Germany"))
        assert first.ok and not first.cached and again.cached and again.text == first.text
        box = Toolbox([FlakyTool("raise")], cache=ToolCache(tmp_path / "t.sqlite"))
        asyncio.run(box.call("flaky", "x"))
        assert not asyncio.run(box.call("flaky", "x")).cached


class TestParsing:
    @pytest.mark.parametrize(
        "reply, tool, tool_input",
        [
            ("Action: search\nAction Input: Eiffel Tower height", "search", "Eiffel Tower height"),
            ("I should check.\n**Action:** Search\n**Action Input:** \"Lyon\"\nThen I'll see.", "search", "Lyon"),
            ("Action: python\nAction Input:\n```python\nx = 2\nanswer = x * 3\n```", "python", "x = 2\nanswer = x * 3"),
            ("Action: calculator\nAction Input: 2+2\nObservation: 4", "calculator", "2+2"),
        ],
    )
    def test_actions(self, reply, tool, tool_input):
        action = parse_action(reply)
        assert action is not None and (action.tool, action.input) == (tool, tool_input)

    @pytest.mark.parametrize(
        "reply", ["Verdict: correct", "Action: none", "Action: Finish\nAction Input: x", "no tools here"]
    )
    def test_no_action(self, reply):
        assert parse_action(reply) is None

    @pytest.mark.parametrize(
        "text, ok",
        [
            ("blah\nVerdict: correct", True),
            ("Verdict: incorrect", False),
            ("**Verdict:** Incorrect.", False),
            ("Verdict: correct ... wait.\nVerdict: wrong", False),
            ("The verdict is correct", True),
            ("nothing", None),
        ],
    )
    def test_verdicts(self, text, ok):
        assert parse_verdict(text) is ok

    @given(st.text(max_size=300))
    @settings(max_examples=200)
    def test_any_text_parses_without_error(self, text):
        parse_action(text)
        parse_verdict(text)


class TestDetectionMeasures:
    def test_option_probabilities_from_top_logprobs(self):
        top = {"A": math.log(0.6), " B": math.log(0.2), "(C": math.log(0.1), "x": -1}
        tok = TokenLogprob(token="A", logprob=math.log(0.6), top=top)
        probs = option_probabilities([tok], ("A", "B", "C", "D"))
        assert probs == pytest.approx({"A": 0.6 / 0.9, "B": 0.2 / 0.9, "C": 0.1 / 0.9})

    def test_option_probabilities_skip_tokens_that_name_no_option(self):
        lead = TokenLogprob(token="The", logprob=-0.1, top={"The": -0.1, "I": -3})
        tok = TokenLogprob(token="B", logprob=-0.01, top={"B": -0.01})
        assert option_probabilities([lead, tok], ("A", "B")) == {"B": 1.0}
        assert option_probabilities([lead], ("A", "B")) == {}

    def test_four_option_confidence_spans_zero_to_one(self):
        assert four_option_confidence({"A": 1.0}) == 1.0
        assert four_option_confidence({"D": 1.0}) == 0.0
        assert four_option_confidence({"B": 0.5, "C": 0.5}) == pytest.approx(0.5)
        assert four_option_confidence({}) is None

    def test_auroc_edges(self):
        assert auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
        assert auroc([0.1, 0.2, 0.9], [True, True, False]) == 0.0
        assert auroc([0.5, 0.5], [True, False]) == 0.5
        assert auroc([0.5, 0.7], [True, True]) is None

    def test_summary_gives_auroc_accuracy_and_intervals(self):
        from veriloop.studies.hallucination import DetectionRecord, summarise_detection

        def record(i, correct, critic, lm):
            t = Trajectory(strategy="s", domain="hotpotqa", model="m", instance_id=str(i), seed=0)
            return DetectionRecord(instance_id=str(i), answer="a", reference="a", f1=float(correct), correct=correct,
                                   confidence={"critic": critic, "lm-prob": lm, "always-true": 1.0}, trajectory=t)

        records = [record(i, i % 2 == 0, 0.9 if i % 2 == 0 else 0.2, -float(i)) for i in range(20)]
        by = {r.method: r for r in summarise_detection(records)}
        assert by["critic"].auroc == 1.0 and by["critic"].accuracy == 1.0
        lo, hi = by["critic"].accuracy_ci95
        assert lo < 1.0 == hi
        assert by["critic"].auroc_ci95 == (1.0, 1.0)
        assert by["always-true"].accuracy == 0.5 and by["always-true"].auroc is None
        assert by["p-true"].n == 0 and by["p-true"].missing == 20 and by["p-true"].auroc is None
        assert 0.0 <= by["lm-prob"].auroc_ci95[0] <= by["lm-prob"].auroc <= by["lm-prob"].auroc_ci95[1] <= 1.0

    @given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=2, max_size=40))
    @settings(max_examples=100, deadline=None)  # the first example pays for importing scipy
    def test_auroc_matches_the_pairwise_count(self, pairs):
        # tests/studies/test_auroc_reference.py pins scikit-learn's roc_auc_score figures.
        scores, labels = [p[0] for p in pairs], [p[1] for p in pairs]
        # Undefined (None) with one class only, where scikit-learn gave nan.
        expected = None if len(set(labels)) < 2 else pytest.approx(pairwise_auroc(scores, labels), abs=1e-12)
        assert auroc(scores, labels) == expected


class TestAgent:
    def test_no_problem_ends_the_loop_after_one_check(self, toolbox):
        model = ScriptedModel(
            [
                "The capital of France is Paris.",
                "Claim: Paris is the capital of France\nAction: search\nAction Input: capital of France",
                "No problem.",
            ]
        )
        steps = []
        result = asyncio.run(ask(model, "What is the capital of France?", toolbox, on_step=steps.append))
        assert result.answer == "The capital of France is Paris." and result.stop_reason == "no_problem"
        assert [s.role for s in steps] == ["generator", "verifier", "tool", "critic"]
        assert steps[1].claim == "Paris is the capital of France"
        assert "[Paris]" in steps[2].text
        assert "Today's date is" in model.asked[0][0][0]["content"]

    def test_a_critique_leads_to_a_correction_and_turns_are_bounded(self, toolbox):
        wrong, check = "It is Lyon.", "Claim: Lyon is the capital\nAction: search\nAction Input: capital of France"
        model = ScriptedModel([wrong, check, "Wrong: Paris is.", "It is Paris.", check, "Still wrong.", "It is Paris!"])
        result = asyncio.run(ask(model, "What is the capital of France?", toolbox, max_turns=2))
        assert result.stop_reason == "max_turns" and result.answer == "It is Paris!"
        assert len(result.trajectory.tool_calls) == 2 and not model.replies

    def test_history_is_part_of_the_conversation(self, toolbox):
        model = ScriptedModel(["Berlin.", "Action: none"])
        result = asyncio.run(ask(model, "And Germany?", toolbox, history=[("Capital of France?", "Paris.")]))
        assert result.stop_reason == "nothing_to_check"
        roles = [m["role"] for m in model.asked[0][0]]
        assert roles == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize(
    "tool, text, expected, ok",
    [
        ("calculator", "2^10 + 1/4", "1024.25", True),
        ("calculator", "1/0", "zero", False),
        ("python", "answer = sum(range(10))", "45", True),
        ("python", "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)", "Error", False),
    ],
)
def test_tools_run_reads_stdin_and_prints_the_observation(tool, text, expected, ok, tmp_path):
    proc = veriloop("tools", "run", tool, stdin=text, home=tmp_path)
    assert proc.returncode == (0 if ok else 1), proc.stderr
    assert expected in proc.stdout


def test_domain_options_reach_the_domain_and_unknown_ones_are_one_clear_error(shared_data):
    from veriloop.errors import VeriloopError

    source = str(shared_data / "toxicity" / "realtoxicityprompts_val.jsonl")
    everything = get_domain("toxicity", all_prompts=True).load_instances(source)
    non_toxic = get_domain("toxicity").load_instances(source)
    assert len(everything) > len(non_toxic) > 0
    with pytest.raises(VeriloopError, match="does not take the options"):
        get_domain("toxicity", colour="blue")
