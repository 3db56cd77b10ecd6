"""An experiment's dollars (issue 39, item 4): a model without a `price` is priced from
the genai-prices table by its id, and the max_usd budget, the results' usd, the matched
dollar budgets and the records use that price; a model the table lacks costs $0 with one
note. The models are functions given from Python; their entries' ids say what to price."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from genai_prices import data_snapshot

import veriloop
from veriloop import Completion


def table(model: str) -> tuple[float, float, float]:
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, "openai", None)
    p = info.get_prices(datetime.now(tz=UTC))
    return float(p.input_mtok), float(p.output_mtok), float(p.cache_read_mtok)


def adder(messages):
    left, right = messages[-1]["content"].split("+")
    return Completion(text=str(int(left) + int(right)), finish_reason="stop", prompt_tokens=1000,
                      completion_tokens=100, cached_prompt_tokens=800)


def run(tmp_path: Path, model_id: str, out: str = "exp", **extra):
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"q": f"{i}+{i}", "a": str(2 * i)}) + "\n" for i in range(3)))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    spec = {
        "name": "sums", "strategies": ["standard", "self-consistency:k=2"],
        "models": {"gen": {"id": model_id}},
        "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "label": "sums"}],
        **extra,
    }
    return veriloop.eval_experiment(spec, out=tmp_path / out, models={"gen": veriloop.model(adder, identity="priced-adder-v1", cache=False)},
                                    cache=tmp_path / "calls.sqlite", progress=False)


def one_call() -> float:
    prompt, completion, cached = table("gpt-4o-mini")
    return (200 * prompt + 800 * cached + 100 * completion) / 1e6


def test_the_results_charge_the_tables_price_with_cached_prompt_tokens_cheaper(tmp_path) -> None:
    result = run(tmp_path, "openai/gpt-4o-mini")
    assert [(r.strategy, r.model_calls) for r in result.rows] == [("standard", 3), ("self-consistency:k=2", 6)]
    assert [r.usd for r in result.rows] == pytest.approx([3 * one_call(), 6 * one_call()], rel=1e-12)
    prompt, _, cached = table("gpt-4o-mini")
    assert cached < prompt  # so the 800 cached tokens of each call made it cheaper
    assert result.notes == []


def test_the_records_hold_where_the_price_came_from(tmp_path) -> None:
    before = datetime.now(tz=UTC).date().isoformat()
    result = run(tmp_path, "openai/gpt-4o-mini")
    after = datetime.now(tz=UTC).date().isoformat()
    prompt, completion, cached = table("gpt-4o-mini")
    recorded = json.loads((result.out_dir / "experiment.json").read_text())["prices"]["gen"]
    # The bundled table has no date of its own: the record names the day whose rates were taken.
    assert recorded["rates_on"] in {before, after}
    expected = {"source": "genai-prices",
                "per_million": {"prompt": prompt, "completion": completion, "cached_prompt": cached},
                "table": f"genai-prices {veriloop_prices_version()} (bundled)", "table_date": None,
                "rates_on": recorded["rates_on"], "table_model": "openai/gpt-4o-mini"}
    out = result.out_dir
    assert json.loads((out / "experiment.json").read_text())["prices"] == {"gen": expected}
    assert json.loads((out / "results.json").read_text())["prices"] == {"gen": expected}
    config = json.loads((out / "gen" / "sums" / "standard-seed0" / "config.json").read_text())
    assert config["prices"] == {"gen": expected}


def veriloop_prices_version() -> str:
    from genai_prices import __version__

    return __version__


def test_a_model_the_table_lacks_costs_nothing_and_is_noted_once(tmp_path) -> None:
    result = run(tmp_path, "openai/my-finetune-7")
    assert [r.usd for r in result.rows] == [0.0, 0.0]
    assert result.notes == [
        "models.gen: genai-prices has no price for openai/my-finetune-7, so its calls are counted as $0; give its "
        "price in the experiment file, [models.gen] price = {prompt = ..., completion = ...} in US dollars per "
        "million tokens (0 and 0 for a server of your own)"]
    md = (result.out_dir / "results.md").read_text()
    assert md.count("genai-prices has no price") == 1
    assert json.loads((result.out_dir / "results.json").read_text())["prices"]["gen"]["source"] == "unknown"
    assert "matched dollar budgets" not in md  # nothing cost anything


def test_an_explicit_zero_price_wins_over_the_table(tmp_path) -> None:
    data = {"models": {"gen": {"id": "openai/gpt-4o-mini", "price": {"prompt": 0, "completion": 0}}}}
    result = run(tmp_path, "openai/gpt-4o-mini", **data)
    assert ([r.usd for r in result.rows], result.notes) == ([0.0, 0.0], [])
    assert json.loads((result.out_dir / "results.json").read_text())["prices"]["gen"] == {
        "source": "experiment", "per_million": {"prompt": 0, "completion": 0}}


def test_the_usd_budget_stops_at_the_tables_price(tmp_path) -> None:
    # Two and a half calls' worth: the third call starts under the cap, the fourth finds it spent.
    cap = round(2.5 * one_call(), 10)
    result = run(tmp_path, "openai/gpt-4o-mini", budget={"max_usd": cap})
    assert [(r.strategy, r.n, r.model_calls) for r in result.rows] == [("standard", 3, 3), ("self-consistency:k=2", 0, 0)]
    assert result.stopped == f"the experiment budget is spent (${3 * one_call():.4f} of ${cap}; max_usd)"


def test_the_matched_budgets_are_compared_in_dollars_too(tmp_path) -> None:
    result = run(tmp_path, "openai/gpt-4o-mini")
    md = (result.out_dir / "results.md").read_text()
    dollars = md.split("## Accuracy at matched dollar budgets", 1)[1]
    one, two = f"${float(f'{one_call():.4g}'):.4g}", f"${float(f'{2 * one_call():.4g}'):.4g}"
    assert f"| strategy | own: accuracy @ usd/instance | @ {one} | @ {two} |" in dollars
    # standard spends one call an instance: within it self-consistency has its first sample alone.
    assert f"| standard | 3/3 = 100% @ {one} | 3/3 = 100% | 3/3 = 100% |" in dollars
    assert f"| self-consistency:k=2 | 3/3 = 100% @ {two} | 3/3 = 100% | 3/3 = 100% |" in dollars


def by_batch_adder(messages):
    completion = adder(messages)
    completion.sent = {"model": "gpt-4o-mini", "batch": "batch_7"}  # as the batch model marks what it carried
    return completion


def test_a_call_that_went_by_batch_costs_half(tmp_path) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"q": f"{i}+{i}", "a": str(2 * i)}) + "\n" for i in range(3)))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    spec = {"name": "sums", "strategies": ["standard"], "models": {"gen": {"id": "openai/gpt-4o-mini"}},
            "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "label": "sums"}]}
    result = veriloop.eval_experiment(spec, out=tmp_path / "exp", cache=tmp_path / "calls.sqlite", progress=False,
                                      models={"gen": veriloop.model(by_batch_adder, identity="batched-v1", cache=False)})
    assert [r.usd for r in result.rows] == pytest.approx([3 * one_call() / 2], rel=1e-12)
