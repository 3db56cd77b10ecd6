"""The model protocol: every backend takes chat messages and returns completions.

A `Completion` is where a model's text enters veriloop, whichever backend (or a user's
function) made it: its construction replaces lone surrogates in the text and the logprob
tokens by U+FFFD and counts them in `surrogates_replaced` (see veriloop.records), so no
record, cache row or report can fail on a reply.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from ..errors import VeriloopError
from ..records import Message, storable, storable_text


@dataclass(frozen=True)
class GenParams:
    """Sampling parameters. Every field except `n` and `sample_offset` is part of a call's
    identity; `sample_offset` says which samples of that identity are wanted, so k samples
    of one prompt are k distinct cache entries (samples offset .. offset+n-1).

    With a seed, sample i is drawn with seed + i, so it is the same sample however the
    k samples are batched.
    """

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    sample_offset: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be at least 1")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        object.__setattr__(self, "stop", tuple(self.stop))

    def sample_seed(self, index: int) -> int | None:
        """Seed of the index-th sample of this call (index counted from sample_offset)."""
        return None if self.seed is None else self.seed + self.sample_offset + index

    def identity(self) -> dict[str, Any]:
        """The fields that change what a sample is (everything but n and sample_offset)."""
        d = asdict(self)
        d.pop("n")
        d.pop("sample_offset")
        d["stop"] = list(self.stop)
        return d

    def with_(self, **changes: Any) -> GenParams:
        return replace(self, **changes)


@dataclass
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Completion:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[TokenLogprob] | None = None
    seconds: float = 0.0
    cached: bool = False
    # Lone surrogates replaced by U+FFFD in the text and logprob tokens (0: the text is as
    # the model gave it).
    surrogates_replaced: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):  # a user's function may build one wrongly: said in one line
            raise VeriloopError(f"a Completion's text must be a str, not {type(self.text).__name__}")
        self.text, replaced = storable_text(self.text)
        for t in self.logprobs or ():
            t.token, in_token = storable_text(t.token)
            t.top = storable(t.top)
            replaced += in_token
        self.surrogates_replaced += replaced

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.surrogates_replaced:
            del d["surrogates_replaced"]  # rows as they were before the count existed
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Completion:
        d = dict(d)
        if d.get("logprobs") is not None:
            d["logprobs"] = [TokenLogprob(**t) for t in d["logprobs"]]
        return cls(**d)


@runtime_checkable
class Model(Protocol):
    """A chat model. `identity` names the exact weights (file hash or server model name)
    and keys the cache; `backend` names the implementation."""

    backend: str
    identity: str
    name: str
    # How many trajectories may run at once with profit: 1 for a single in-process model
    # (interleaving would also destroy its prompt-prefix reuse), more for servers.
    preferred_concurrency: int

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]: ...

    async def aclose(self) -> None: ...
