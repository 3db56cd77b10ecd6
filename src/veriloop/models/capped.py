"""A cap on how long any one reply may be, whatever each call asks for.

`max_reply_tokens` (a model setting, default $VERILOOP_MAX_REPLY_TOKENS) makes a quick,
cheap run of any command or experiment: every call's `max_tokens` becomes at most the
cap. The test suite runs its real small model this way, since what it checks there is the
plumbing, not the answers.

Invariants:
- A capped model is another model to the call cache and to run directories: its identity
  names the cap, so a capped reply is never replayed for an uncapped call (nor the other
  way), and a run directory made with one is refused to the other.
- The cap lowers a call's `max_tokens` and never raises it.
- Everything else passes through; `inner` is the model under it (scoring by logprobs
  reaches the backend through `counting.innermost`).
"""

from __future__ import annotations

import os

from ..errors import VeriloopError
from ..records import Message
from .base import Completion, GenParams, Model

CAP_ENV = "VERILOOP_MAX_REPLY_TOKENS"


def reply_token_cap(cap: int | None = None) -> int | None:
    """The cap in force: `cap` if given, else $VERILOOP_MAX_REPLY_TOKENS, else none."""
    if cap is not None:
        return cap
    text = os.environ.get(CAP_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise VeriloopError(f"{CAP_ENV}: the most tokens a reply may have must be a whole number, 1 or more, "
                            f"not {text!r}")
    return int(text)


def capped_identity(identity: str, cap: int) -> str:
    return f"{identity}|max_reply_tokens={cap}"


class CappedModel:
    """A Model whose every call asks for at most `cap` tokens a reply."""

    def __init__(self, inner: Model, cap: int) -> None:
        if cap < 1:
            raise VeriloopError(f"max_reply_tokens must be 1 or more, not {cap}")
        self.inner = inner
        self.cap = cap
        self.backend = inner.backend
        self.identity = capped_identity(inner.identity, cap) if inner.identity else inner.identity
        self.name = inner.name
        self.preferred_concurrency = inner.preferred_concurrency

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        if params.max_tokens > self.cap:
            params = params.with_(max_tokens=self.cap)
        return await self.inner.generate(messages, params)

    async def aclose(self) -> None:
        await self.inner.aclose()


def with_cap(model: Model, cap: int | None) -> Model:
    """`model` under the cap in force (reply_token_cap(cap)), or as it is when there is none."""
    chosen = reply_token_cap(cap)
    return model if chosen is None else CappedModel(model, chosen)
