"""Engine pieces that need no model: strategy specs, judge parsing, params, metrics, records."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veriloop.errors import VeriloopError
from veriloop.models.base import GenParams
from veriloop.models.cache import _missing_runs, call_key
from veriloop.runs.jsonl import drop_torn_tail
from veriloop.runs.runner import load_trajectories
from veriloop.stats.metrics import wilson_interval
from veriloop.strategies import parse_strategy, split_specs
from veriloop.verifiers.llm_judge import parse_judgement


class TestStrategySpecs:
    def test_defaults_and_canonical_name_lists_every_option(self):
        s = parse_strategy("backprompt")
        assert s.canonical == "backprompt:feedback=first,max_rounds=15,temperature=0,verifier=sound"

    def test_options_override_and_cli_defaults_fill_only_known_fields(self):
        s = parse_strategy("backprompt:verifier=llm,feedback=llm", {"max_rounds": 5, "k": 7})
        assert (s.verifier, s.feedback, s.max_rounds) == ("llm", "llm", 5)
        assert parse_strategy("sampling", {"max_rounds": 5, "k": 7}).k == 7
        assert parse_strategy("standard", {"max_rounds": 5, "k": 7}).canonical == "standard:temperature=0"

    def test_spec_option_beats_cli_default(self):
        assert parse_strategy("sampling:k=3", {"k": 7}).k == 3

    @pytest.mark.parametrize(
        "spec, fragment",
        [
            ("magic", "unknown strategy 'magic'"),
            ("backprompt:feedback=loud", "unknown feedback level 'loud'"),
            ("backprompt:verifier=oracle", "unknown verifier 'oracle'"),
            ("backprompt:colour=red", "colour"),
            ("sampling:k=zero", "k"),
            ("sampling:k=0", "k"),
            ("backprompt:verifier", "key=value"),
        ],
    )
    def test_bad_specs_are_one_clear_error(self, spec, fragment):
        with pytest.raises(VeriloopError) as info:
            parse_strategy(spec)
        assert fragment in str(info.value)
        assert "\n" not in str(info.value)

    def test_split_specs(self):
        assert split_specs(["standard; sampling:k=3", "self-consistency"]) == ["standard", "sampling:k=3", "self-consistency"]


class TestJudgeParsing:
    @pytest.mark.parametrize(
        "reply, ok",
        [
            ('{"correct": true, "errors": []}', True),
            ('Sure! Here it is:\n```json\n{"correct": false, "errors": ["uses 3 twice"]}\n```', False),
            ('{"correct": "yes"}', True),
            ('{"note": 1} then {"correct": "false", "errors": "wrong value"}', False),
            ("correct: false -- the value is 23", False),
            ('"correct" = TRUE', True),
        ],
    )
    def test_tolerant_of_prose_and_shapes(self, reply, ok):
        v = parse_judgement(reply)
        assert v.ok is ok and not v.unreadable and v.verifier == "llm"
        assert bool(v.errors) is (not ok)

    def test_errors_are_kept_in_order(self):
        v = parse_judgement('{"correct": false, "errors": ["first thing", "second thing"]}')
        assert [e.message for e in v.errors] == ["first thing", "second thing"]

    @pytest.mark.parametrize("reply", ["The correct answer is indeed 12 + 2 * 9 - 6.", "", "{not json", '{"correct": 3}'])
    def test_unreadable_reply_is_a_recorded_rejection(self, reply):
        v = parse_judgement(reply)
        assert v.ok is False and v.unreadable is True
        assert v.errors[0].kind == "unreadable"

    @given(st.text())
    def test_any_text_parses_to_a_verdict(self, text):
        v = parse_judgement(text)
        assert v.ok in (True, False)
        assert v.ok or v.errors


class TestParamsAndKeys:
    def test_sample_seeds_follow_the_offset(self):
        p = GenParams(seed=10, n=3, sample_offset=4)
        assert [p.sample_seed(i) for i in range(3)] == [14, 15, 16]
        assert GenParams().sample_seed(0) is None

    def test_key_ignores_batching_but_not_sampling_parameters(self):
        msgs = [{"role": "user", "content": "hi"}]
        base = call_key("llamacpp", "abc", msgs, GenParams(temperature=1.0, seed=1))
        assert base == call_key("llamacpp", "abc", msgs, GenParams(temperature=1.0, seed=1, n=5, sample_offset=2))
        for other in (
            GenParams(temperature=0.5, seed=1),
            GenParams(temperature=1.0, seed=2),
            GenParams(temperature=1.0, seed=1, top_p=0.9),
            GenParams(temperature=1.0, seed=1, max_tokens=10),
            GenParams(temperature=1.0, seed=1, stop=("\n",)),
            GenParams(temperature=1.0, seed=1, logprobs=True),
        ):
            assert call_key("llamacpp", "abc", msgs, other) != base
        assert call_key("llamacpp", "xyz", msgs, GenParams(temperature=1.0, seed=1)) != base
        assert call_key("openai", "abc", msgs, GenParams(temperature=1.0, seed=1)) != base

    def test_missing_runs_are_contiguous_ranges(self):
        found = {0: None, 1: None, 4: None}
        assert _missing_runs(range(0, 7), found) == [(2, 2), (5, 2)]

    def test_invalid_params_rejected(self):
        with pytest.raises(ValueError):
            GenParams(n=0)


def test_wilson_interval_edges():
    assert wilson_interval(0, 0) == (0.0, 0.0)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0.25 < hi < 0.35
    lo, hi = wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and 0.65 < lo < 0.75
    lo, hi = wilson_interval(5, 10)
    assert lo < 0.5 < hi


def test_torn_last_line_is_dropped_and_bad_lines_are_reported(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    good = {"strategy": "standard", "domain": "game24", "model": "m", "instance_id": "a", "seed": 0}
    path.write_text(json.dumps(good) + "\n" + '{"strategy": "stand')
    drop_torn_tail(path)
    assert [t.instance_id for t in load_trajectories(path)] == ["a"]
    path.write_text(json.dumps(good) + "\nnot json\n")
    with pytest.raises(VeriloopError, match="line 2"):
        load_trajectories(path)


def test_domain_options_are_part_of_a_run(tmp_path):
    from veriloop.errors import VeriloopError
    from veriloop.runs.identity import check_same_run

    old = {"domain": "toxicity", "domain_options": {"threshold": 0.5}, "seed": 0}
    check_same_run(tmp_path, old, dict(old))
    with pytest.raises(VeriloopError, match=r'domain options \{"threshold": 0.5\}, not \{"threshold": 0.7\}'):
        check_same_run(tmp_path, old, {**old, "domain_options": {"threshold": 0.7}})
    # A setting an older config never recorded is not held against it.
    check_same_run(tmp_path, {"domain": "toxicity"}, old)


def test_experiment_of_config_reads_a_runs_whole_spec_and_an_eval_cells_own_part(tmp_path):
    from veriloop.experiment.engine import experiment_of_config

    whole = {"name": "run", "models": {"main": {"id": "smollm2-135m"}}, "domains": [{"name": "game24", "n": 3}],
             "strategies": ["standard"]}
    assert experiment_of_config({"spec": whole}).domains[0].n == 3
    data = tmp_path / "puzzles.jsonl"
    cell = {"experiment": "exp", "cell": {"model": "main"}, "data": str(data), "spec": {
        "model": {"id": "smollm2-135m"}, "domain": {"name": "game24", "data": "puzzles.jsonl", "n": None},
        "strategy": {"spec": "standard", "label": "Standard"}, "n": 7, "tools": {}}}
    rebuilt = experiment_of_config(cell)
    # the data path as the cell resolved it, not as the file wrote it (relative to a data_root)
    assert (rebuilt.name, rebuilt.n, rebuilt.domains[0].data, rebuilt.strategies[0].key) == ("exp", 7, str(data), "Standard")
    task_cell = {**cell, "task": str(data), "data": None,
                 "spec": {**cell["spec"], "domain": {"file": "rel.jsonl", "prompt": "{q}", "label": "sums"}}}
    assert experiment_of_config(task_cell).tasks[0].file == str(data)
    with pytest.raises(VeriloopError, match=r"^the run's config.json has a spec this version cannot read \(KeyError\); "):
        experiment_of_config({"cell": {}, "spec": {"model": {"id": "smollm2-135m"}}})
    with pytest.raises(VeriloopError, match=r"^the run's config.json records no spec to rebuild its instances from$"):
        experiment_of_config({})
