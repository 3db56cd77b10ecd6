"""Each provider end to end through an experiment file and through `veriloop run`'s
refusals, against its stand-in (tests/standins/), the five parametrized alike.

`veriloop eval FILE.toml` runs the main job's four strategies on a reasoning model of each
provider: every cell finishes; every call record says what was sent (exactly what the
stand-in received, the conversation left out), free of what the provider refuses, and
what the model reasoned; the results' dollars are genai-prices' for the billed providers
(read here from genai-prices itself) and 0 for a server of the user's own; a model that
cannot be greedy says so in each cell's config.json; a resumed eval sends nothing.

`veriloop run` ends each refusal a user can cause in the one line the provider's tests
pin for the library (the same text, through the command line), and a prompt over the
context ends its trajectory as context_overflow (Ollama keeps the prompt's end instead).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from helpers import read_trajectories, the_error, veriloop

from veriloop.cli.run import DEFAULT_STRATEGIES
from veriloop.errors import VeriloopError
from veriloop.models import GenParams, load_backend
from veriloop.models.providers import PROVIDERS

PREFIXES = ("openai", "anthropic", "google", "vllm", "ollama")


def table_usd(model_id: str, prompt: int, completion: int, cached: int = 0, reasoning: int = 0) -> Decimal:
    """What genai-prices' own calculator charges for one call."""
    prefix, _, model = model_id.partition("/")
    usage = Usage(input_tokens=prompt, cache_read_tokens=cached, output_tokens=completion,
                  output_reasoning_tokens=reasoning)
    return calc_price(usage, model, provider_id=prefix).total_price


def table_record(model_id: str) -> dict[str, Any]:
    """results.json's `prices` entry for a model genai-prices prices, its rates per
    million tokens read from genai-prices (at a prompt below any tier)."""
    thousand = Decimal(1000)
    return {"prompt": float(table_usd(model_id, 1000, 0) * thousand),
            "completion": float(table_usd(model_id, 0, 1000) * thousand),
            "cached_prompt": float(table_usd(model_id, 1000, 0, cached=1000) * thousand)}


@pytest.mark.parametrize("prefix", PREFIXES)
def test_an_experiment_file_runs_the_main_job_on_each_provider(prefix, tmp_path, provider_cases, experiment_file,
                                                               sent_bodies, calls_of):
    case = provider_cases[prefix]
    out = tmp_path / "out"
    # Prefix caching on, so that cached prompt tokens are priced too where a provider bills them.
    with case.standin(prefix_cache=True) as server:
        path = experiment_file(tmp_path, case, server, DEFAULT_STRATEGIES)

        def evaluate(home: str):
            return veriloop("eval", str(path), "--out", str(out), home=tmp_path / home,
                            env={"STANDIN_KEY": server.key})

        first = evaluate("home")
        sent, requests = sent_bodies(case, server), len(server.requests)
        # A call cache of its own: only the experiment's records can answer the resumed cells.
        resumed = evaluate("other-home")
        resumed_requests = len(server.requests) - requests
    assert (first.returncode, resumed.returncode) == (0, 0), first.stderr + resumed.stderr
    assert (len(sent), resumed_requests) == (requests, 0)
    results = json.loads((out / "results.json").read_text())
    cells = results["cells"]
    assert [cell["strategy"] for cell in cells] == DEFAULT_STRATEGIES
    assert [(cell["status"], cell["n"], cell["planned"]) for cell in cells] == [("complete", 2, 2)] * 4
    assert results["incomplete_cells"] == []

    limits = PROVIDERS[prefix](case.model, case.effort).limits()
    assert bool(limits) is not case.greedy
    records: list[dict[str, Any]] = []
    for cell in cells:
        run_dir = out / cell["run_dir"]
        calls = calls_of(run_dir)
        assert calls and all(call["sent"] is not None for call in calls)
        assert [case.refused_in(case.model, call["sent"]) for call in calls] == [[]] * len(calls)
        assert {(call["reasoning"], call["reasoning_tokens"]) for call in calls} == {
            (case.reasoning, case.reasoning_tokens)}
        usd = sum((table_usd(case.model_id, call["prompt_tokens"], call["completion_tokens"],
                             call["cached_prompt_tokens"], call["reasoning_tokens"])
                   for call in calls), Decimal(0)) if case.priced else Decimal(0)
        assert cell["usd"] == pytest.approx(float(usd), rel=1e-12, abs=0)
        assert (cell["usd"] > 0) is case.priced
        config = json.loads((run_dir / "config.json").read_text())
        assert config.get("model_limits") == ({case.model_id: limits} if limits else None)
        records += calls
    # Anthropic's stand-in reads no prompt cache; Ollama counts only the prompt it evaluates anew.
    assert (sum(call["cached_prompt_tokens"] for call in records) > 0) is (prefix in ("openai", "google", "vllm"))
    # The records of the calls the server answered say exactly what it received.
    assert sorted(json.dumps(call["sent"], sort_keys=True) for call in records if not call["cached"]) == sorted(
        json.dumps(body, sort_keys=True) for body in sent)

    price = results["prices"]["m"]
    if case.priced:
        assert {key: price[key] for key in ("source", "table_model")} == {"source": "genai-prices",
                                                                         "table_model": case.model_id}
        assert price["per_million"] == table_record(case.model_id)
    else:
        assert price == {"source": "free", "per_million": {"prompt": 0.0, "completion": 0.0}}


# The refusals a user can cause through `veriloop run`, each provider's: a wrong key (Ollama
# takes none), a model the server lacks, a parameter the provider refuses (a reasoning
# effort for a model that does not reason; vLLM, which takes any effort, a strategy's
# temperature out of range) and a prompt over the context.
REFUSALS = [(prefix, kind) for prefix in PREFIXES for kind in ("key", "model", "parameter")
            if (prefix, kind) != ("ollama", "key")]
# Where the line quotes the server's own words after "the server rejected the request": the
# words the stand-in answers with, then the fix.
SERVER_WORDS = {
    "vllm": "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3.0 instead.",
}
GENERIC_FIX = "; change what it names (the model's settings or the strategy's options), then re-run"


def run_once(case, server, tmp_path: Path, model: str, key: str | None, effort: str | None = None,
             strategy: str = "standard"):
    """`veriloop run` of one Game of 24 instance on `model` behind `server`, no cache."""
    options = ["--api-key", key] if key else []
    options += ["--reasoning-effort", effort] if effort else []
    return veriloop("run", "--model", f"{case.prefix}/{model}", "--base-url", server.base_url, *options,
                    "-s", strategy, "-n", "1", "--no-cache", "--out", str(tmp_path / "run"), home=tmp_path / "home")


@pytest.mark.parametrize(("prefix", "kind"), REFUSALS)
def test_a_refusal_through_veriloop_run_is_the_providers_one_line(prefix, kind, tmp_path, provider_cases,
                                                                   generate):
    case = provider_cases[prefix]
    model, effort, temperature = case.refusable if kind == "parameter" else (
        case.unknown if kind == "model" else case.model, None, None)
    with case.standin() as server:
        key = "wrong-key" if kind == "key" else server.key if case.keyed else None
        strategy = "standard" if temperature is None else f"standard:temperature={temperature}"
        proc = run_once(case, server, tmp_path, model, key, effort, strategy)
        # The same call from Python: the line test_<provider>.py pins (or the server's words).
        backend = load_backend(f"{prefix}/{model}", base_url=server.base_url, api_key=key, reasoning_effort=effort)
        with pytest.raises(VeriloopError) as info:
            generate(backend, None, GenParams(max_tokens=4, temperature=temperature or 0.0))
    assert the_error(proc) == f"error: {info.value}"
    if kind == "parameter" and prefix in SERVER_WORDS:
        assert str(info.value).startswith("the server rejected the request")
        assert str(info.value).endswith(SERVER_WORDS[prefix] + GENERIC_FIX)


@pytest.mark.parametrize("prefix", ["openai", "anthropic", "google", "vllm"])
def test_a_prompt_over_the_context_ends_its_trajectory_as_context_overflow(prefix, tmp_path, provider_cases):
    case = provider_cases[prefix]
    with case.standin(**case.tiny) as server:
        proc = run_once(case, server, tmp_path, case.model, server.key)
    assert proc.returncode == 0, proc.stderr
    (trajectory,) = read_trajectories(tmp_path / "run")
    assert (trajectory.stop_reason, trajectory.calls, trajectory.final_answer) == ("context_overflow", [], None)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["strategies"]["standard:temperature=0"]["stop_reasons"] == {"context_overflow": 1}


def test_ollama_keeps_the_end_of_a_prompt_over_its_context(tmp_path, provider_cases):
    case = provider_cases["ollama"]
    with case.standin(**case.tiny) as server:
        proc = run_once(case, server, tmp_path, case.model, None)
        truncated, requests = server.truncated, len(server.requests)
    assert proc.returncode == 0, proc.stderr
    (trajectory,) = read_trajectories(tmp_path / "run")
    # Ollama answers a cut prompt as any other: the run cannot tell.
    assert (trajectory.stop_reason, len(trajectory.calls), truncated, requests) == ("single_answer", 1, 1, 1)
    assert trajectory.calls[0].prompt_tokens == case.tiny["num_ctx"]
