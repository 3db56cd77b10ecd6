"""Budgets: caps on the calls, tokens and dollars an experiment and each of its cells spend.

What counts is what the records hold: every call of every trajectory, whether the cache
answered it or not. So a budget stops at the same place on any machine and with any
cache state, and what a finished trajectory spent is known from its record alone. A
budget is checked before each call: no call starts once a cap is reached (a call that
starts under a token or dollar cap may end above it). The trajectory that was running
is dropped, not recorded; its calls are in the cache, so a later run with a higher cap
replays them instead of asking the backend again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ..errors import VeriloopError
from ..models.base import Completion, GenParams, Model
from ..records import Message, Trajectory
from .schema import Budget


class BudgetReached(VeriloopError):
    """A cap was reached; `scope` is "experiment" or "cell"."""

    def __init__(self, scope: str, message: str) -> None:
        super().__init__(message)
        self.scope = scope


class CallPrice(Protocol):
    """The dollars of one call, by the role it played (so by the model that answered)
    and its tokens; the cached prompt and reasoning tokens are parts of the prompt and
    completion tokens (models.base.Completion). `batch`: the call went through a batch API
    (its record's `sent` names the batch), billed at half price."""

    def __call__(self, role: str, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0,
                 reasoning_tokens: int = 0, batch: bool = False) -> float: ...


@dataclass
class Usage:
    """Calls, tokens and dollars spent. `cached_prompt_tokens` and `reasoning_tokens` are
    parts of `prompt_tokens` and `completion_tokens`, not added to `tokens`."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.usd += other.usd
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.reasoning_tokens += other.reasoning_tokens


def call_usage(role: str, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int,
               reasoning_tokens: int, price: CallPrice, batch: bool = False) -> Usage:
    """One call's usage, priced."""
    return Usage(1, prompt_tokens, completion_tokens,
                 price(role, prompt_tokens, completion_tokens, cached_prompt_tokens, reasoning_tokens, batch),
                 cached_prompt_tokens, reasoning_tokens)


def by_batch(sent: dict[str, object] | None) -> bool:
    """Whether a call whose request was `sent` went through a batch API (half price)."""
    return bool(sent and sent.get("batch"))


def usage_of(trajectories: Iterable[Trajectory], usd: CallPrice) -> Usage:
    """What the trajectories' calls spent, each priced by `usd` as the model that played
    its role charges."""
    total = Usage()
    for t in trajectories:
        for c in t.calls:
            total.add(call_usage(c.role, c.prompt_tokens, c.completion_tokens, c.cached_prompt_tokens,
                                 c.reasoning_tokens, usd, by_batch(c.sent)))
    return total


@dataclass
class Meter:
    """Usage against a budget, for one scope (the experiment, or one cell)."""

    scope: str
    budget: Budget
    used: Usage

    def check(self) -> None:
        b, u = self.budget, self.used
        reached = (
            ("calls", b.max_calls, u.calls) if b.max_calls is not None and u.calls >= b.max_calls else
            ("tokens", b.max_tokens, u.tokens) if b.max_tokens is not None and u.tokens >= b.max_tokens else
            ("usd", b.max_usd, u.usd) if b.max_usd is not None and u.usd >= b.max_usd else None
        )
        if reached:
            what, cap, spent = reached
            shown = f"${spent:.4f} of ${cap}" if what == "usd" else f"{spent} of {cap} {what}"
            raise BudgetReached(self.scope, f"the {self.scope} budget is spent ({shown}; max_{what})")


@dataclass
class BackendCalls:
    """The samples one backend generated (completions not replayed from a cache), counted
    at the door of each metered model in front of it: the only witness a run without a
    cache, or a user's own function, has (see models/counting.py)."""

    count: int = 0


class MeteredModel:
    """A model whose calls are charged to meters and refused once one is spent; each of
    its calls is priced by `price` as a call of the role `call_role`, and the samples its
    backend generated are added to `backend_calls`, if given."""

    def __init__(self, inner: Model, meters: list[Meter], price: CallPrice, call_role: str = "generate",
                 on_tokens: Callable[[int], None] | None = None, backend_calls: BackendCalls | None = None) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.identity = inner.identity
        self.name = inner.name
        self.preferred_concurrency = inner.preferred_concurrency
        self.meters = meters
        self.price = price
        self.call_role = call_role
        self.on_tokens = on_tokens
        self.backend_calls = backend_calls

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        for meter in self.meters:
            meter.check()
        completions = await self.inner.generate(messages, params)
        if self.backend_calls is not None:
            self.backend_calls.count += sum(not c.cached for c in completions)
        spent = Usage()
        for c in completions:
            spent.add(call_usage(self.call_role, c.prompt_tokens, c.completion_tokens, c.cached_prompt_tokens,
                                 c.reasoning_tokens, self.price, by_batch(c.sent)))
        for meter in self.meters:
            meter.used.add(spent)
        if self.on_tokens is not None:
            self.on_tokens(spent.tokens)
        return completions

    async def aclose(self) -> None:
        pass  # the engine closes the models it loaded, once, after every cell
