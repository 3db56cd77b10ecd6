"""A model's price (models/prices.py): the user's, else genai-prices' table for a server
model, else free for a model of the user's own, else $0 with a note; each token charged
once, a cached prompt token at the cached-input rate. Expected dollars are computed here
from the rates the table itself holds, never copied from a run."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price, data_snapshot

from veriloop.experiment.schema import ModelEntry
from veriloop.models.prices import Rates, price_for


def table_rates(provider: str, model: str) -> dict[str, Decimal]:
    """The table's rates (dollars per million tokens) for the model, as genai-prices holds them now."""
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    return {k: v for k, v in vars(info.get_prices(datetime.now(tz=UTC))).items() if v is not None}


def test_the_users_price_comes_first_and_an_explicit_zero_is_free() -> None:
    given = price_for("openai/gpt-4o-mini", Rates(prompt=1.0, completion=2.0))
    assert (given.source, given.usd(1000, 100)) == ("experiment", (1000 * 1.0 + 100 * 2.0) / 1e6)
    free = ModelEntry.model_validate({"id": "openai/gpt-4o-mini", "price": {"prompt": 0, "completion": 0}})
    assert (free.pricing("m").source, free.pricing("m").usd(10**6, 10**6), free.pricing("m").note) == (
        "experiment", 0.0, None)
    assert ModelEntry.model_validate({"id": "openai/gpt-4o-mini"}).pricing("m").source == "genai-prices"


@pytest.mark.parametrize("model_id", ["smollm2-135m", "llamacpp/smollm2-135m", "vllm/Qwen/Qwen3-8B", "ollama/llama3"])
def test_a_model_on_the_users_own_hardware_is_free_without_a_note(model_id: str) -> None:
    price = price_for(model_id, name="m")
    assert (price.source, price.usd(5000, 5000), price.note, price.record()) == (
        "free", 0.0, None, {"source": "free", "per_million": {"prompt": 0.0, "completion": 0.0}})


def test_a_model_the_table_lacks_costs_nothing_and_its_note_names_how_to_give_a_price() -> None:
    price = price_for("openai/my-finetune-7", name="tuned")
    assert (price.source, price.usd(5000, 5000)) == ("unknown", 0.0)
    assert price.note == (
        "models.tuned: genai-prices has no price for openai/my-finetune-7, so its calls are counted as $0; give its "
        "price in the experiment file, [models.tuned] price = {prompt = ..., completion = ...} in US dollars per "
        "million tokens (0 and 0 for a server of your own)")
    assert price_for(None, name="mine").note.startswith("models.mine: a model given from Python has no price, ")


@pytest.mark.parametrize(("model_id", "provider", "model"), [
    ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
    ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
    ("google/gemini-2.5-flash", "google", "gemini-2.5-flash"),
])
def test_a_known_server_model_is_priced_at_the_tables_rates(model_id: str, provider: str, model: str) -> None:
    rates = table_rates(provider, model)
    price = price_for(model_id)
    expected = (Decimal(1000) * rates["input_mtok"].base if hasattr(rates["input_mtok"], "base")
                else Decimal(1000) * rates["input_mtok"])
    expected += Decimal(200) * (rates["output_mtok"].base if hasattr(rates["output_mtok"], "base")
                                else rates["output_mtok"])
    assert price.usd(1000, 200) == pytest.approx(float(expected / 10**6), rel=1e-12)
    # The same dollars as genai-prices' own calculation.
    own = calc_price(Usage(input_tokens=1000, output_tokens=200), model, provider_id=provider).total_price
    assert price.usd(1000, 200) == pytest.approx(float(own), rel=1e-12)
    record = price.record()
    assert (record["source"], record["table_model"], record["table"].split()[0]) == (
        "genai-prices", f"{provider}/{model}", "genai-prices")


def test_gpt_4o_mini_costs_its_table_rates_exactly() -> None:
    rates = table_rates("openai", "gpt-4o-mini")
    prompt, completion, cached = (float(rates[k]) for k in ("input_mtok", "output_mtok", "cache_read_mtok"))
    price = price_for("openai/gpt-4o-mini")
    assert price.rates.per_million() == {"prompt": prompt, "completion": completion, "cached_prompt": cached}
    assert price.usd(1000, 200) == pytest.approx((1000 * prompt + 200 * completion) / 1e6, rel=1e-12)
    # 800 of the 1000 prompt tokens read from the provider's cache: those at the cached rate.
    assert price.usd(1000, 200, 800) == pytest.approx((200 * prompt + 800 * cached + 200 * completion) / 1e6, rel=1e-12)
    assert cached < prompt and price.usd(1000, 200, 800) < price.usd(1000, 200)
    # Reasoning tokens are part of the completion tokens: not charged again.
    assert price.usd(1000, 200, 0, 150) == price.usd(1000, 200)
    # A batch API bills half.
    assert price.usd(1000, 200, 800, batch=True) == pytest.approx(price.usd(1000, 200, 800) / 2, rel=1e-12)


def test_a_tiered_price_charges_a_long_prompt_at_its_tier_as_the_table_does() -> None:
    price = price_for("anthropic/claude-sonnet-4-5")
    assert price.rates.tiers  # the table prices prompts past 200k tokens higher
    for prompt in (199_999, 200_001, 300_000):
        own = calc_price(Usage(input_tokens=prompt, output_tokens=100, cache_read_tokens=500), "claude-sonnet-4-5",
                         provider_id="anthropic").total_price
        assert price.usd(prompt, 100, 500) == pytest.approx(float(own), rel=1e-12)


def test_a_users_cached_prompt_price_applies_and_without_one_cached_tokens_pay_the_prompt_rate() -> None:
    entry = ModelEntry.model_validate({"id": "openai/gpt-4o-mini",
                                       "price": {"prompt": 2.0, "completion": 8.0, "cached_prompt": 0.5}})
    assert entry.pricing().usd(1000, 100, 600) == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 8.0) / 1e6, rel=1e-12)
    assert entry.pricing().record() == {"source": "experiment",
                                        "per_million": {"prompt": 2.0, "completion": 8.0, "cached_prompt": 0.5}}
    plain = ModelEntry.model_validate({"id": "openai/gpt-4o-mini", "price": {"prompt": 2.0, "completion": 8.0}})
    assert plain.pricing().usd(1000, 100, 600) == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6, rel=1e-12)


def test_importing_veriloop_and_pricing_a_local_model_import_no_price_table() -> None:
    code = ("import sys, veriloop, veriloop.cli\n"
            "from veriloop.models.prices import price_for\n"
            "assert price_for('smollm2-135m').source == 'free'\n"
            "print(sorted(m for m in sys.modules if m.startswith('genai_prices')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
