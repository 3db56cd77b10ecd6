"""Errors a new user meets (issue 13, items 4 and 5), each one line in our own words: a
server that is not an OpenAI-compatible API, bad `verify --batch` lines, and strategy
options that pydantic rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_one_line_error, the_error, veriloop

import veriloop as vl
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.strategies import STRATEGIES


def run_against(base_url: str, tmp_path: Path) -> Any:
    return veriloop("run", "--model", "openai/x", "--base-url", base_url, "-n", "1", "-s", "standard",
                               "--no-cache", "--out", str(tmp_path / "run"), home=tmp_path / "home")


class TestServerAnswers:
    def test_a_real_chat_completion_still_runs(self, canned_server, tmp_path):
        proc = run_against(f"{canned_server}/ok/v1", tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "1 backend calls" in proc.stdout

    def test_200_with_plain_text_quotes_the_body(self, canned_server, tmp_path):
        url = f"{canned_server}/text/v1"
        assert the_error(run_against(url, tmp_path)) == (
            f"error: the server at {url} answered a chat completion request with 'Hello from a plain web server', "
            'not a chat completion in JSON ({"choices": [{"message": {"content": ...}}], ...})'
        )

    def test_200_with_json_of_another_shape_quotes_the_body(self, canned_server, tmp_path):
        url = f"{canned_server}/other-api/v1"
        assert the_error(run_against(url, tmp_path)) == (
            f"error: the server at {url} answered a chat completion request with "
            """'{"result": "4*6", "status": "done"}', not a chat completion in JSON """
            '({"choices": [{"message": {"content": ...}}], ...})'
        )

    def test_404_without_v1_suggests_v1(self, canned_server, tmp_path):
        assert the_error(run_against(canned_server, tmp_path)) == (
            f"error: the server at {canned_server} answered 404 Not Found ('404 page not found') to POST "
            f"{canned_server}/chat/completions; OpenAI-compatible APIs are usually served under /v1: "
            f"try the base URL {canned_server}/v1"
        )

    def test_404_with_v1_names_the_url(self, canned_server, tmp_path):
        url = f"{canned_server}/nothing/v1"
        assert the_error(run_against(url, tmp_path)) == (
            f"error: the server at {url} answered 404 Not Found ('404 page not found') to POST "
            f"{url}/chat/completions; check that it is an OpenAI-compatible API"
        )

    def test_unknown_model_only_when_the_server_says_so(self, canned_server, tmp_path):
        url = f"{canned_server}/unknown-model/v1"
        assert the_error(run_against(url, tmp_path)) == (
            f"error: the server does not know the model 'x'; give --model openai/NAME with a name the server at {url} "
            "serves")


# ---------------------------------------------------------------- verify --batch

GAME24_SHAPE = '{"instance": "1 1 4 6", "answer": "..."}'
GOOD_LINE = '{"instance": "1 1 4 6", "answer": "4 * 6 * (1 * 1)"}'


def verify_batch(tmp_path: Path, text: str, domain: str = "game24") -> tuple[Path, Any]:
    batch = tmp_path / "in.jsonl"
    batch.write_text(text)
    return batch, veriloop("verify", domain, "--batch", str(batch))


def assert_error(proc: Any, message: str) -> None:
    assert_one_line_error(proc)
    assert proc.stderr.strip() == f"error: {message}"


class TestBatchLines:
    def test_missing_answer_names_line_field_and_shape(self, tmp_path):
        batch, proc = verify_batch(tmp_path, GOOD_LINE + '\n{"instance": "1 1 4 6"}\n')
        assert_error(proc, f'{batch}, line 2 lacks the field "answer"; expected {GAME24_SHAPE}')
        assert [json.loads(line)["ok"] for line in proc.stdout.splitlines()] == [True]  # line 1 was checked

    def test_missing_instance(self, tmp_path):
        batch, proc = verify_batch(tmp_path, '{"answer": "6*4"}\n')
        assert_error(proc, f'{batch}, line 1 lacks the field "instance"; expected {GAME24_SHAPE}')

    def test_every_missing_field_is_named(self, tmp_path):
        batch, proc = verify_batch(tmp_path, '\n{"instanse": "1 1 4 6"}\n')
        assert_error(proc, f'{batch}, line 2 lacks the fields "instance" and "answer"; expected {GAME24_SHAPE}')

    @pytest.mark.parametrize(
        ("line", "kind"),
        [('["1 1 4 6", "6*4"]', "a JSON array"), ("24", "a JSON number"), ('"1 1 4 6"', "a JSON string"),
         ("null", "JSON null")],
    )
    def test_a_line_that_is_not_an_object(self, tmp_path, line, kind):
        batch, proc = verify_batch(tmp_path, line + "\n")
        assert_error(proc, f"{batch}, line 1 is {kind}, not an object; expected {GAME24_SHAPE}")

    def test_a_line_that_is_not_json(self, tmp_path):
        batch, proc = verify_batch(tmp_path, GOOD_LINE + "\n" + "instance: 1 1 4 6\n")
        assert_error(proc, f"{batch}, line 2 is not JSON (Expecting value at column 1); expected {GAME24_SHAPE}")

    @pytest.mark.parametrize(("domain", "line", "missing", "shape"), [
        ("coloring", '{"answer": "0: Color1"}', 'the field "graph"', '{"graph": "<.col text>", "answer": "..."}'),
        ("planning", '{"plan": "(pick-up a)"}', 'the fields "domain", "problem" and "answer"',
         '{"domain": "<PDDL domain text>", "problem": "<PDDL problem text>", "answer": "..."}'),
        # Blocksworld brings its own PDDL domain, so a line holds only the problem.
        ("blocksworld", '{"answer": "pick up the red block"}', 'the field "problem"',
         '{"problem": "<PDDL problem text>", "answer": "..."}'),
    ])
    def test_each_domain_names_its_own_shape(self, tmp_path, domain, line, missing, shape):
        batch, proc = verify_batch(tmp_path, line + "\n", domain=domain)
        assert_error(proc, f"{batch}, line 1 lacks {missing}; expected {shape}")

    def test_a_bad_instance_keeps_the_domain_s_own_words(self, tmp_path):
        batch, proc = verify_batch(tmp_path, '{"instance": "1 2 3", "answer": "1"}\n')
        assert_error(proc, f'{batch}, line 1: a Game of 24 instance is four whole numbers from 1 to 13, '
                           """like "1 1 4 6"; got '1 2 3'""")

    @pytest.mark.parametrize("text", ["", "\n  \n\n"])
    def test_an_empty_batch_is_an_error(self, tmp_path, text):
        batch, proc = verify_batch(tmp_path, text)
        assert_error(proc, f"{batch} has no lines to check")
        assert proc.stdout == ""


# ---------------------------------------------------------------- strategy options in words

class TestStrategyOptions:
    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("sampling:kk=3", "sampling has no option 'kk'; its options are k, temperature, verifier, together"),
            ("backprompt:nonsense=1",
             "backprompt has no option 'nonsense'; its options are verifier, feedback, max_rounds, temperature"),
            ("sampling:k=abc", "sampling's option k needs a whole number, not 'abc'"),
            ("sampling:k=2.5", "sampling's option k needs a whole number, not '2.5'"),
            ("sampling:temperature=hot", "sampling's option temperature needs a number, not 'hot'"),
            ("backprompt:max_rounds=0", "backprompt's option max_rounds must be at least 1, not '0'"),
            ("critic:tools=maybe", "critic's option tools needs true or false, not 'maybe'"),
            ("critic:init=foo", "critic's option init must be 'standard' or 'react', not 'foo'"),
            ("sampling:k=0,kk=1",
             "sampling's option k must be at least 1, not '0'; "
             "sampling has no option 'kk'; its options are k, temperature, verifier, together"),
        ],
    )
    def test_cli(self, spec, message):
        assert_error(veriloop("run", "-s", spec), f"bad strategy {spec!r}: {message}")

    def test_python_api(self):
        def model(messages: Any, params: Any) -> str:
            return "42"

        def check(instance: Any, answer: str) -> bool:
            return answer == "42"

        with pytest.raises(VeriloopError) as unknown:
            vl.correct(model, "q", check, strategy="backprompt:nonsense=1", cache=False)
        assert str(unknown.value) == (
            "bad strategy 'backprompt:nonsense=1': backprompt has no option 'nonsense'; "
            "its options are verifier, feedback, max_rounds, temperature"
        )
        with pytest.raises(VeriloopError) as wrong_type:
            vl.correct(model, "q", check, max_rounds="five", cache=False)
        assert str(wrong_type.value) == (
            "bad strategy 'backprompt': backprompt's option max_rounds needs a whole number, not 'five'"
        )
        with pytest.raises(VeriloopError) as spec:
            vl.strategy("self-consistency:k=many")
        assert str(spec.value) == (
            "bad strategy 'self-consistency:k=many': self-consistency's option k needs a whole number, not 'many'"
        )

    def test_a_strategy_built_directly(self):
        with pytest.raises(VeriloopError) as info:
            STRATEGIES["best-of-n"](n=0, top_k=3)
        assert str(info.value) == (
            "best-of-n's option n must be at least 1, not 0; "
            "best-of-n has no option 'top_k'; its options are n, temperature, verifier"
        )

    def test_a_check_that_builds_a_bad_verdict(self):
        def model(messages: Any, params: Any) -> str:
            return "42"

        def check(instance: Any, answer: str) -> vl.Verdict:
            return vl.Verdict(ok="perhaps")

        with pytest.raises(VeriloopError) as info:
            vl.correct(model, "q", check, cache=False)
        assert str(info.value) == (
            f"check {__name__}:TestStrategyOptions.test_a_check_that_builds_a_bad_verdict.<locals>.check built an "
            "invalid Verdict on instance '1': Verdict's field ok needs true or false, not 'perhaps'"
        )


# ---------------------------------------------------------------- files that cannot be read (issue 25, item 8)

DEEP = "[" * 5000 + "]" * 5000


class TestUnreadableFiles:
    def test_an_experiment_file_that_is_not_utf8_names_its_line(self, tmp_path):
        path = tmp_path / "latin1.toml"
        path.write_bytes('name = "x"\n# café\n'.encode("latin-1"))
        proc = veriloop("eval", str(path), "--dry-run", "--out", str(tmp_path / "out"))
        assert_one_line_error(proc, f"{path}, line 2: not UTF-8 text (byte 0xe9); save the file as UTF-8")

    def test_an_experiment_file_nested_too_deeply_names_its_line(self, tmp_path):
        from veriloop.experiment.overrides import load_experiment, parse_experiment

        path = tmp_path / "deep.toml"
        path.write_text(f'name = "x"\n\nstrategies = {DEEP}\n')
        with pytest.raises(VeriloopError) as info:
            load_experiment(path)
        assert str(info.value) == f"{path}, line 3: arrays or tables nested too deeply to read"
        with pytest.raises(VeriloopError) as info:
            parse_experiment('name = "x"\n', sets=[f"seeds={DEEP}"])
        assert str(info.value) == "--set seeds=...: the value is nested too deeply to read"

    def test_a_data_file_nested_too_deeply_names_its_line(self, tmp_path):
        path = tmp_path / "deep.jsonl"
        path.write_text('{"q": "1+1", "a": "2"}\n' + '{"q": ' + DEEP + "}\n")
        with pytest.raises(VeriloopError) as info:
            vl.Task.from_jsonl(path, prompt="{q}")
        assert str(info.value) == (f"{path}, line 2: not JSON (arrays or objects nested too deeply: line 1 column 5006 "
                                   "(char 5005))")
        data = tmp_path / "test.jsonl"
        data.write_text('{"question": ' + DEEP + "}\n")
        with pytest.raises(VeriloopError, match=rf"^{data}, line 1: not valid JSON \(arrays or objects nested too "
                                                r"deeply\); expected "):
            get_domain("gsm8k").load_instances(str(data), n=1)

    def test_a_record_file_nested_too_deeply_names_its_line(self, tmp_path):
        from veriloop.runs.runner import load_trajectories

        path = tmp_path / "trajectories.jsonl"
        path.write_text('{"strategy": "s", "domain": "d", "model": "m", "instance_id": ' + DEEP + ', "seed": 0}\n')
        with pytest.raises(VeriloopError) as info:
            load_trajectories(path)
        assert str(info.value) == f"{path}, line 1: not a Trajectory record; use a fresh --out"
