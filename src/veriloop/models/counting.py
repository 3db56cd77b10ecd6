"""Counting what reached the backend, whatever the model is.

The cache knows how many samples it could not answer, but a run without the cache, a
user's own function or a server client has no cache to ask; the only reliable witness is
each completion's own `cached` flag, so the count is taken at the model's door.
"""

from __future__ import annotations

from ..records import Message
from .base import Completion, GenParams, Model


class CountingModel:
    """A Model that passes every call through and counts the samples the backend
    generated (completions not replayed from a cache) in `backend_calls`."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.identity = inner.identity
        self.name = inner.name
        self.preferred_concurrency = inner.preferred_concurrency
        self.backend_calls = 0

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        completions = await self.inner.generate(messages, params)
        self.backend_calls += sum(not c.cached for c in completions)
        return completions

    async def aclose(self) -> None:
        await self.inner.aclose()


def innermost(model: object) -> object:
    """The backend under every wrapper (cache, counter): what can score text by logprobs."""
    while hasattr(model, "inner"):
        model = model.inner
    return model
