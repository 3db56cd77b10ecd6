"""OpenAI's chat completions end to end, against the stand-in that enforces OpenAI's
documented rules (tests/standins/openai.py): a reasoning model runs the main job's
strategies through `veriloop run`, an experiment file and `veriloop.correct`, with records
that say what was sent and what it cost; k samples go as one request where `n` is taken;
each refusal a real provider returns ends in one line naming the fix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import veriloop
from standins.openai import OpenAIStandin

import veriloop as vl
from veriloop.errors import ContextOverflow, VeriloopError
from veriloop.models import GenParams, load_backend
from veriloop.models.providers.openai import OpenAIProvider, is_reasoning_model

QUESTION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 3 + 4?"}]
MAIN_JOB = ("standard", "sampling", "backprompt:verifier=llm,feedback=binary", "backprompt:verifier=sound")


def calls_of(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    return [call for row in rows for call in row["calls"]]


SHORT = GenParams(max_tokens=32)


def generate(model, messages=QUESTION, params=SHORT):
    async def go():
        try:
            return await model.generate(messages, params)
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(("name", "reasoning"), [
    ("o1", True), ("o3-mini", True), ("o4-mini-2025-04-16", True), ("gpt-5", True), ("gpt-5.1-mini", True),
    ("gpt-4o-mini", False), ("gpt-4.1", False), ("omni-llama", False), ("qwen2.5-coder", False),
])
def test_reasoning_models_are_known_by_their_family(name, reasoning):
    assert is_reasoning_model(name) is reasoning


def test_a_reasoning_models_request_has_none_of_the_parameters_it_refuses():
    provider = OpenAIProvider("o3-mini", "low")
    request = provider.request(QUESTION, GenParams(max_tokens=64, temperature=0.0, stop=("\n\n",), seed=7), 0, 3)
    assert request.body == {"model": "o3-mini", "messages": QUESTION, "max_completion_tokens": 64, "n": 3,
                            "reasoning_effort": "low", "seed": 7}
    assert request.sent == {k: v for k, v in request.body.items() if k != "messages"}
    assert request.notices == ["a call asks for temperature 0, top_p 1; o3-mini takes neither, so it is sampled at "
                               "its default (1) and cannot be greedy"]
    with pytest.raises(VeriloopError, match=r"^o3-mini returns no log probabilities"):
        provider.request(QUESTION, GenParams(logprobs=True), 0, 1)


def test_another_models_request_is_as_before():
    request = OpenAIProvider("gpt-4o-mini").request(QUESTION, GenParams(max_tokens=16, stop=("x",), seed=3), 2, 1)
    assert request.body == {"model": "gpt-4o-mini", "messages": QUESTION, "temperature": 0.0, "top_p": 1.0,
                            "max_tokens": 16, "n": 1, "stop": ["x"], "seed": 5}
    assert request.notices == []


def test_the_completions_of_one_request_add_up_to_what_it_billed():
    data = {"choices": [{"message": {"content": "abc"}, "finish_reason": "stop"},
                        {"message": {"content": "abcdefghi", "reasoning_content": "hm"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 13,
                      "prompt_tokens_details": {"cached_tokens": 32},
                      "completion_tokens_details": {"reasoning_tokens": 8}}}
    first, second = OpenAIProvider("gpt-4o-mini").replies(data, 2, GenParams())
    assert [(c.prompt_tokens, c.cached_prompt_tokens) for c in (first, second)] == [(40, 32), (0, 0)]
    assert (first.completion_tokens + second.completion_tokens, first.reasoning_tokens + second.reasoning_tokens) \
        == (13, 8)
    assert (first.completion_tokens, second.completion_tokens) == (3, 10)  # by the length of their text
    assert (second.reasoning, second.finish_reason, first.reasoning) == ("hm", "length", None)


def test_a_reasoning_models_reply_is_cut_at_the_stop_it_was_not_sent():
    data = {"choices": [{"message": {"content": "Answer: 7\n\nmore"}, "finish_reason": "stop"}], "usage": {}}
    (only,) = OpenAIProvider("o3").replies(data, 1, GenParams(stop=("\n\n",)))
    assert (only.text, only.finish_reason) == ("Answer: 7", "stop")


def test_the_main_jobs_strategies_run_on_a_reasoning_model(tmp_path):
    with OpenAIStandin() as server:
        proc = veriloop("run", "--model", "openai/o3-mini", "--base-url", server.base_url, "--api-key", server.key,
                        "--reasoning-effort", "low", "-n", "2", "--k", "3", "--max-rounds", "2",
                        "--out", str(tmp_path / "run"), home=tmp_path / "home")
        sent = [seen.body for seen in server.requests if seen.path.endswith("/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "openai/o3-mini: a call asks for temperature 0" in notes[0]
    assert sent and all("max_tokens" not in body and "temperature" not in body and body["reasoning_effort"] == "low"
                        for body in sent)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert list(config["model_limits"]) == ["openai/o3-mini"]
    calls = calls_of(tmp_path / "run")
    assert {call["sent"]["max_completion_tokens"] > 0 for call in calls} == {True}
    assert all(call["reasoning_tokens"] > 0 and call["reasoning_tokens"] <= call["completion_tokens"]
               for call in calls if call["completion_tokens"])
    # What the calls asked of the server (the cache answered the rest) is what it billed.
    billed = sum(call["prompt_tokens"] + call["completion_tokens"] for call in calls if not call["cached"])
    assert billed == server.billed["prompt_tokens"] + server.billed["completion_tokens"]


def test_an_experiment_file_and_correct_reach_a_reasoning_model(tmp_path):
    with OpenAIStandin() as server:
        (tmp_path / "exp.toml").write_text(
            'name = "reasoning"\nstrategies = ["standard", "sampling"]\nseeds = [0]\nn = 2\nk = 2\n'
            '[[domains]]\nname = "game24"\n'
            f'[models.o3]\nid = "openai/o3-mini"\nbase_url = "{server.base_url}"\napi_key_env = "STANDIN_KEY"\n'
            'reasoning_effort = "high"\n')
        proc = veriloop("eval", str(tmp_path / "exp.toml"), "--out", str(tmp_path / "out"), home=tmp_path / "home",
                        env={"STANDIN_KEY": server.key})
        result = vl.correct(vl.model("openai/gpt-5-mini", base_url=server.base_url, api_key=server.key, cache=False),
                            "What is 3 + 4?", lambda prompt, answer: "7" in answer, max_rounds=2)
    assert proc.returncode == 0, proc.stderr
    assert {body["reasoning_effort"] for body in (s.body for s in server.requests[:-1])} == {"high"}
    assert result.answer.endswith("Verdict: correct") and result.trajectory.calls[0].sent is not None
    assert "temperature" not in result.trajectory.calls[0].sent


@pytest.mark.parametrize("strategy", ["self-consistency", "sampling:together=true"])
def test_k_samples_go_in_one_request_and_replay_from_the_cache(tmp_path, strategy):
    def sampling(server, out):
        return veriloop("run", "--model", "openai/gpt-4o-mini", "--base-url", server.base_url, "--api-key", server.key,
                        "-s", strategy, "--k", "15", "-n", "2", "--out", str(out), home=tmp_path / "home")

    with OpenAIStandin(ignore_n=True) as ignoring:
        first = sampling(ignoring, tmp_path / "one-by-one")
    with OpenAIStandin() as taking:
        second = sampling(taking, tmp_path / "together")
        again = sampling(taking, tmp_path / "again")  # the cache answers every sample
    assert (first.returncode, second.returncode, again.returncode) == (0, 0, 0), first.stderr + second.stderr
    # A server that ignores n: one request, then the 14 samples it left out one by one.
    assert ignoring.billed["requests"] == 2 * 15 and taking.billed["requests"] == 2
    assert taking.billed["prompt_tokens"] * 15 == ignoring.billed["prompt_tokens"]
    together = calls_of(tmp_path / "together")
    assert [c["sample_index"] for c in together] == list(range(15)) * 2
    assert [c["response"] for c in together] == [c["response"] for c in calls_of(tmp_path / "one-by-one")]
    assert [c["cached"] for c in calls_of(tmp_path / "again")] == [True] * 30


@pytest.mark.parametrize(("case", "expected"), [
    ("key", "refused the API key (401 Unauthorized: 'Incorrect API key provided: wro**-key"),
    ("model", "the server does not know the model 'gpt-99'"),
])
def test_a_refused_key_or_unknown_model_is_one_line_naming_the_fix(case, expected):
    with OpenAIStandin() as server:
        model = load_backend("openai/gpt-99" if case == "model" else "openai/gpt-4o-mini", base_url=server.base_url,
                             api_key="wrong-key" if case == "key" else server.key)
        with pytest.raises(VeriloopError) as info:
            generate(model)
    assert expected in str(info.value) and "\n" not in str(info.value)
    fix = "set VERILOOP_API_KEY (or OPENAI_API_KEY) or pass --api-key" if case == "key" else (
        f"give --model openai/NAME with a name the server at {server.base_url} serves")
    assert str(info.value).endswith(fix)


def test_a_prompt_over_the_context_is_a_context_overflow():
    with OpenAIStandin(models={"gpt-4o-mini": 20}) as server:
        model = load_backend("openai/gpt-4o-mini", base_url=server.base_url, api_key=server.key)
        with pytest.raises(ContextOverflow):
            generate(model, [{"role": "user", "content": "word " * 50}])


def test_batch_mode_loads_a_batch_model_that_shares_the_live_models_identity():
    from veriloop.models.batch import BatchModel

    with OpenAIStandin() as server:
        live = load_backend("openai/gpt-4o-mini", base_url=server.base_url, api_key=server.key)
        batch = load_backend("openai/gpt-4o-mini", base_url=server.base_url, api_key=server.key, batch=True)
    assert isinstance(batch, BatchModel)
    assert (batch.identity, batch.backend) == (live.identity, live.backend)
    with pytest.raises(VeriloopError, match=r"has no batch API that veriloop speaks; batch mode is for openai/ and "
                                            r"anthropic/ models"):
        load_backend("ollama/llama3", batch=True)


def test_a_reasoning_model_under_a_name_of_its_own_is_learned_from_its_first_refusal(tmp_path):
    models = {"gpt-4o-mini": 128_000, "my-deployment": 200_000}
    with OpenAIStandin(models=models, reasoning_models=("my-deployment",)) as server:
        proc = veriloop("run", "--model", "openai/my-deployment", "--base-url", server.base_url, "--api-key",
                        server.key, "-n", "2", "--k", "2", "--max-rounds", "2", "--out", str(tmp_path / "run"),
                        home=tmp_path / "home")
        refused = [seen for seen in server.requests if "max_tokens" in seen.body]
    assert proc.returncode == 0, proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())  # the console wraps a long note
    learned = ("my-deployment is sent a reasoning model's parameters from now on: max_completion_tokens, and no "
               "temperature, top_p or stop")
    assert said.count("note: openai/my-deployment: the server refused max_tokens (") == 1
    assert said.count(learned) == 1
    # Every call in flight when the first refusal came was refused once; none after.
    assert 1 <= len(refused) <= 8
    assert {"max_completion_tokens" in call["sent"] for call in calls_of(tmp_path / "run")} == {True}


def test_a_reasoning_effort_refused_by_the_server_names_the_fix():
    with OpenAIStandin() as server:
        model = load_backend("openai/gpt-4o-mini", base_url=server.base_url, api_key=server.key,
                             reasoning_effort="low")
        with pytest.raises(VeriloopError) as info:
            generate(model)
    assert str(info.value).startswith("gpt-4o-mini takes no reasoning effort (")
    assert str(info.value).endswith("drop --reasoning-effort (reasoning_effort) for it")


def test_a_model_made_here_loads_no_certificates_and_its_sdk_client_never_sends(monkeypatch):
    # Our aiohttp session sends every request; the SDK client is kept for its settings, so
    # its own HTTP client must neither cost an SSL context per model nor ever send.
    import ssl

    def model():
        return load_backend("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")

    model()  # what the first one imports is not the point
    loaded: list[object] = []
    real = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", lambda *a, **k: loaded.append(a) or real(*a, **k))
    made = model()
    assert loaded == []

    async def listed():
        return await made._client.models.list()

    with pytest.raises(RuntimeError, match="^veriloop sends this model's requests on its own aiohttp session, "
                                           "never the SDK's$"):
        asyncio.run(listed())
