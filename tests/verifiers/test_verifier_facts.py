"""A verifier states its own facts (model calls per verification, whether a name may set
its threshold, whether it is sound): strategies and `get_verifier` read them from it, so
a plugin's verifier takes `NAME@T` and is costed like a built-in, with no table to edit."""

from __future__ import annotations

import pytest
from helpers import fake_distribution, read_trajectories, veriloop
from scripted import ScriptedModel

from veriloop import models, verifiers
from veriloop.checks import FunctionCheck
from veriloop.errors import VeriloopError
from veriloop.strategies import parse_strategy
from veriloop.strategies.base import verifier_calls
from veriloop.verifiers import VERIFIERS, BaseVerifier, facts, get_verifier, thresholded

# A plugin's verifier: accepts a reply whose length in tens reaches the threshold (0.5 by
# default), and says the threshold it used in its verdict.
PLUGIN = '''
import veriloop
from veriloop.verifiers.base import BaseVerifier


class LongEnough(BaseVerifier):
    name = "long-enough"
    calls = 0
    takes_threshold = True

    def __init__(self, threshold=0.5):
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(threshold)
        self.threshold = threshold

    async def verify(self, episode, text, round):
        score = len(text.strip()) / 10
        ok = score >= self.threshold
        errors = [] if ok else [veriloop.VerdictError(kind="short", message=f"{score} is below {self.threshold}")]
        return veriloop.Verdict(ok=ok, score=score, errors=errors, verifier=f"{self.name}@{self.threshold}")
'''


@pytest.fixture
def long_enough(installed):
    """The plugin installed (an entry point in the group veriloop.verifiers); forgotten after."""
    fake_distribution(installed, "fake-long-enough", {"veriloop.verifiers": {"long-enough": "fake_long_enough:LongEnough"}},
                      {"fake_long_enough": PLUGIN})
    VERIFIERS.rediscover()
    yield installed
    VERIFIERS.rediscover()


def test_a_plugin_verifier_with_a_threshold_takes_it_in_a_run(long_enough, tmp_path, monkeypatch):
    assert VERIFIERS.source("long-enough") == "fake-long-enough"
    # THRESHOLDED is read when asked for: the plugin's name is in it once installed.
    assert thresholded() == ("selfcheck", "global-check", "long-enough") == verifiers.THRESHOLDED
    # Five characters (0.5) pass the default threshold and not 0.7; seven pass 0.7.
    model = ScriptedModel(["12345", "1234567"])
    monkeypatch.setattr(models, "load_backend", lambda spec, **settings: model)
    out = tmp_path / "run"
    proc = veriloop("run", "--domain", "game24", "-n", "1", "-s", "backprompt:verifier=long-enough@0.7,max_rounds=3",
                    "--model", "openai/scripted", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "none",
                    "--no-cache", "--out", str(out), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    (t,) = read_trajectories(out)
    assert t.strategy == "backprompt:feedback=first,max_rounds=3,temperature=0,verifier=long-enough@0.7"
    assert [(r.text, r.verdict.ok, r.verdict.score, r.verdict.verifier) for r in t.rounds] == [
        ("12345", False, 0.5, "long-enough@0.7"), ("1234567", True, 0.7, "long-enough@0.7"),
    ]
    assert t.stop_reason == "verifier_accepted" and model.replies == []


def test_a_plugin_verifier_states_its_calls_and_refuses_a_bad_threshold(long_enough):
    assert get_verifier("long-enough").threshold == 0.5 and get_verifier("long-enough@0.25").threshold == 0.25
    assert verifier_calls("long-enough@0.7") == 0
    assert parse_strategy("sampling:k=3,verifier=long-enough@0.7").calls_per_instance() == 3
    with pytest.raises(VeriloopError, match=r"the threshold in 'long-enough@2' must be a number between 0 and 1"):
        get_verifier("long-enough@2")


def test_a_verifier_without_a_threshold_refuses_one_naming_those_that_take_it():
    with pytest.raises(VeriloopError) as caught:
        get_verifier("llm@0.5")
    assert str(caught.value) == "verifier 'llm' takes no threshold (only selfcheck, global-check do: selfcheck@0.8)"


def test_the_built_in_verifiers_state_their_facts():
    stated = {name: facts(VERIFIERS[name]()) for name in VERIFIERS}
    assert {name: (f.calls, f.takes_threshold, f.sound) for name, f in stated.items()} == {
        "sound": (0, False, True), "llm": (1, False, False), "llm-cot": (1, False, False),
        "critic": (None, False, False), "critic-notool": (None, False, False),
        "selfcheck": (None, True, False), "global-check": (None, True, False),
        "visible": (0, False, True), "hidden": (0, False, True), "generated": (1, False, False),
    }
    assert all(isinstance(VERIFIERS[name](), BaseVerifier) for name in VERIFIERS)


def test_a_check_function_or_an_object_that_states_nothing_gets_the_defaults():
    class Bare:
        name = "bare"

        async def verify(self, episode, text, round):
            raise AssertionError

    assert (facts(FunctionCheck(lambda row, answer: True)).calls, facts(Bare()).calls) == (0, None)
    assert verifier_calls(Bare()) is None and not facts(Bare()).takes_threshold


@pytest.mark.parametrize("name", ["critic", "critic-notool"])
def test_the_critic_refuses_a_domain_without_critic_before_any_call(name):
    """As `sound` and the code verifiers do: a loop or an audit with the critic on Game of 24
    is one line before the model loads, not an error at the first judgement."""
    from veriloop.domains.game24.domain import Game24

    strategy = parse_strategy(f"backprompt:verifier={name}")
    with pytest.raises(VeriloopError, match="^domain 'game24' does not support CRITIC"):
        strategy.check_domain(Game24())
