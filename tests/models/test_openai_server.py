"""The openai backend against a real `python -m llama_cpp.server` (SmolLM2-135M) on
127.0.0.1, started and stopped by the test itself."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from servers import SECRET, free_port

from veriloop.domains import get_domain
from veriloop.errors import ModelTransportError
from veriloop.models import CachedModel, CallCache, GenParams
from veriloop.models.openai_compat import OpenAICompatModel
from veriloop.runs.runner import load_trajectories, run_experiment
from veriloop.strategies import parse_strategy

pytestmark = [pytest.mark.model, pytest.mark.server]

QUESTION = [{"role": "user", "content": "Say hello in one short sentence."}]


def test_generate_through_the_server(server):
    model = OpenAICompatModel("smollm2", base_url=server, api_key=SECRET)

    async def go():
        try:
            greedy = await model.generate(QUESTION, GenParams(max_tokens=20))
            sampled = await model.generate(QUESTION, GenParams(max_tokens=20, temperature=1.0, seed=5, n=2))
            again = await model.generate(QUESTION, GenParams(max_tokens=20, temperature=1.0, seed=5, sample_offset=1))
            return greedy, sampled, again
        finally:
            await model.aclose()

    (greedy,), sampled, (again,) = asyncio.run(go())
    assert greedy.text.strip() and greedy.prompt_tokens > 0 and 0 < greedy.completion_tokens <= 20
    assert len(sampled) == 2
    assert again.text == sampled[1].text  # sample 1 is seed 6 however it is requested


def test_a_run_through_the_server_never_records_the_key(server, tmp_path):
    model = CachedModel(OpenAICompatModel("smollm2", base_url=server, api_key=SECRET), CallCache(tmp_path / "calls.sqlite"))
    domain = get_domain("game24")
    strategies = [parse_strategy(s) for s in ("standard", "backprompt:verifier=sound,feedback=first,max_rounds=2")]

    async def go():
        try:
            return await run_experiment(model, domain, strategies, domain.load_instances(None, n=2), tmp_path / "run")
        finally:
            await model.aclose()

    result = asyncio.run(go())
    assert result.new_trajectories == 4 and result.backend_calls == model.stats.backend_calls > 0
    assert len(load_trajectories(tmp_path / "run" / "trajectories.jsonl")) == 4
    for path in [*(tmp_path / "run").iterdir(), tmp_path / "calls.sqlite"]:
        assert SECRET.encode() not in path.read_bytes(), path


def test_transport_errors_are_retried_then_reported_and_never_cached(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    inner = OpenAICompatModel("smollm2", base_url=dead, api_key=SECRET, retry_base_seconds=0.01, timeout=5,
                              retry_budget=0.5)
    model = CachedModel(inner, CallCache(tmp_path / "calls.sqlite"))

    async def go():
        try:
            await model.generate(QUESTION, GenParams(max_tokens=5))
        finally:
            await model.aclose()

    with pytest.raises(ModelTransportError, match=f"^the model server at {dead} kept failing for ") as info:
        asyncio.run(go())
    assert SECRET not in str(info.value)
    rows = sqlite3.connect(tmp_path / "calls.sqlite").execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert rows == 0
