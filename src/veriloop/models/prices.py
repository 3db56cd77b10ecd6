"""What a model's calls cost, in US dollars: the user's own price, else the genai-prices
table's, else nothing.

One model's price is resolved once (`price_for`) into a `Price`: where it came from
(`source`), its rates per million tokens, and the table it was read from. The order:

1. `experiment`: rates the user gave (an experiment file's `price`); an explicit
   `{prompt = 0, completion = 0}` is a price too, and means free.
2. `genai-prices`: the table of the genai-prices package, for a server model whose
   provider bills by the token (`openai/`, `anthropic/`, `google/` and any prefix that
   names a provider of the table), at the rates in force when the price is resolved.
3. `free`: a model that runs on the user's own hardware (a pack, a GGUF file,
   `llamacpp/`, `vllm/`, `ollama/`).
4. `unknown`: anything else (a server model the table lacks, a model given from Python):
   charged 0, with a `note` naming how to give its price.

Token counts follow `models.base.Completion`: cached prompt tokens are part of the prompt
tokens and reasoning tokens part of the completion tokens, so each token is charged once,
a cached one at the cached-input rate (the prompt rate when there is none), a reasoning
one at the reasoning rate where the table has one (the completion rate otherwise).

genai-prices (1.6 MB of tables) is imported only when a server model's price is looked
up: `import veriloop` and the command line's start-up never import it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Source = Literal["experiment", "genai-prices", "free", "unknown"]

# The provider ids of genai-prices' table by the prefix of a model id, where they differ
# or where the prefix is not one of the table's providers.
TABLE_PROVIDERS: dict[str, str] = {"openai": "openai", "anthropic": "anthropic", "google": "google"}
# Servers that run on the user's own hardware: nobody bills their tokens.
OWN_SERVERS = frozenset({"vllm", "ollama"})
# OpenAI's and Anthropic's batch APIs bill half the standard rates.
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Rates:
    """US dollars per million tokens. `cached_prompt`: prompt tokens read from the
    provider's prompt cache (None: at the `prompt` rate); `reasoning`: completion tokens
    spent reasoning (None: at the `completion` rate). `tiers`: (prompt tokens above which,
    rates) pairs, ascending, that replace these rates for a call whose prompt is longer,
    as a table's tiered prices do (every token of the call at the tier's rates)."""

    prompt: float = 0.0
    completion: float = 0.0
    cached_prompt: float | None = None
    reasoning: float | None = None
    tiers: tuple[tuple[int, Rates], ...] = ()

    def per_million(self) -> dict[str, float]:
        shown = {"prompt": self.prompt, "completion": self.completion}
        if self.cached_prompt is not None:
            shown["cached_prompt"] = self.cached_prompt
        if self.reasoning is not None:
            shown["reasoning"] = self.reasoning
        return shown

    def at(self, prompt_tokens: int) -> Rates:
        """The rates a call with this many prompt tokens pays."""
        for start, rates in reversed(self.tiers):
            if prompt_tokens > start:
                return rates
        return self


FREE = Rates()


@dataclass(frozen=True)
class Price:
    """How one model's calls are priced: `source` (experiment, genai-prices, free,
    unknown), the `rates`, the `table` and its date when they came from genai-prices
    (None for the table bundled in the package, which carries none) with the day whose
    rates were taken (`rates_on`),
    the table's own name for the model, and a `note` for a model priced 0 for want of a
    price."""

    source: Source
    rates: Rates = FREE
    table: str | None = None
    table_date: str | None = None
    table_model: str | None = None
    # The day whose rates were taken: the table holds dated price changes, and the rates
    # in force that day are the ones charged.
    rates_on: str | None = None
    note: str | None = field(default=None, compare=False)

    def usd(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0,
            reasoning_tokens: int = 0, *, batch: bool = False) -> float:
        """The dollars of one call. The cached and reasoning tokens are parts of the
        prompt and completion tokens (clamped to them, so a bad count never charges a
        token twice). `batch`: sent through a provider's batch API, at half price."""
        r = self.rates.at(prompt_tokens)
        cached = min(max(cached_prompt_tokens, 0), prompt_tokens)
        reasoning = min(max(reasoning_tokens, 0), completion_tokens)
        cached_rate = r.prompt if r.cached_prompt is None else r.cached_prompt
        reasoning_rate = r.completion if r.reasoning is None else r.reasoning
        dollars = ((prompt_tokens - cached) * r.prompt + cached * cached_rate
                   + (completion_tokens - reasoning) * r.completion + reasoning * reasoning_rate) / 1e6
        return dollars * BATCH_DISCOUNT if batch else dollars

    def record(self) -> dict[str, Any]:
        """What a run directory records of the price (config.json, experiment.json,
        results.json)."""
        out: dict[str, Any] = {"source": self.source, "per_million": self.rates.per_million()}
        if self.rates.tiers:
            out["tiers"] = [{"above_prompt_tokens": start, **rates.per_million()} for start, rates in self.rates.tiers]
        if self.source == "genai-prices":
            out.update(table=self.table, table_date=self.table_date, rates_on=self.rates_on,
                       table_model=self.table_model)
        if self.note:
            out["note"] = self.note
        return out


def price_for(model_id: str | None, given: Rates | None = None, *, name: str | None = None) -> Price:
    """The price of a model's calls: `given` (the user's) when there is one, else by its
    id (see the module's docstring). `name`: how the note of an unknown model names it
    (an experiment's model name)."""
    if given is not None:
        return Price("experiment", given)
    return _by_id(model_id, name)


@functools.cache
def _by_id(model_id: str | None, name: str | None) -> Price:
    from .providers import provider_prefix

    where = f"models.{name}" if name else "the model"
    if model_id is None:
        return Price("unknown", note=_unknown_note(where, "a model given from Python has no price"))
    prefix = provider_prefix(model_id)
    if prefix is None or prefix in OWN_SERVERS:
        return Price("free")  # a pack, a GGUF file, llamacpp/, a server of the user's own
    model = model_id.partition("/")[2]
    found = _from_table(TABLE_PROVIDERS.get(prefix, prefix), model)
    if found is None:
        return Price("unknown", note=_unknown_note(where, f"genai-prices has no price for {model_id}"))
    return found


def _unknown_note(where: str, why: str) -> str:
    return (f"{where}: {why}, so its calls are counted as $0; give its price in the experiment file, "
            f"[{where}] price = {{prompt = ..., completion = ...}} in US dollars per million tokens "
            "(0 and 0 for a server of your own)")


def _from_table(provider_id: str, model: str) -> Price | None:
    from datetime import UTC, datetime

    from genai_prices import __version__ as version
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    try:
        provider, info = snapshot.find_provider_model(model, None, provider_id, None)
    except LookupError:
        return None
    now = datetime.now(tz=UTC)
    prices = vars(info.get_prices(now))
    if prices.get("input_mtok") is None and prices.get("output_mtok") is None:
        return None  # not priced by the token (an image or audio model)
    # The bundled table carries no date of its own (its `timestamp` is when it was
    # loaded); one fetched by genai-prices' updater does.
    date = snapshot.timestamp.date().isoformat() if snapshot.from_auto_update else None
    return Price("genai-prices", _rates(prices), table=f"genai-prices {version}" + ("" if date else " (bundled)"),
                 table_date=date, table_model=f"{provider.id}/{info.id}", rates_on=now.date().isoformat())


def _rates(prices: Mapping[str, Any]) -> Rates:
    """The table's token prices as Rates, with its tiers (by prompt tokens)."""
    keys = {"prompt": "input_mtok", "completion": "output_mtok", "cached_prompt": "cache_read_mtok",
            "reasoning": "output_reasoning_mtok"}
    starts = sorted({tier.start for key in keys.values() for tier in getattr(prices.get(key), "tiers", ())})

    def rates_at(tokens: int | None) -> Rates:
        values: dict[str, float | None] = {}
        for ours, theirs in keys.items():
            price = prices.get(theirs)
            if price is not None and hasattr(price, "tiers"):
                applicable = price.base
                for tier in price.tiers:
                    if tokens is not None and tokens >= tier.start:
                        applicable = tier.price
                price = applicable
            values[ours] = None if price is None else float(price)
        return Rates(values["prompt"] or 0.0, values["completion"] or 0.0, values["cached_prompt"],
                     values["reasoning"])

    base = rates_at(None)
    return Rates(base.prompt, base.completion, base.cached_prompt, base.reasoning,
                 tiers=tuple((start, rates_at(start)) for start in starts))
