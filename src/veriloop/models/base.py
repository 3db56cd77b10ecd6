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
    """Sampling parameters of one model call.

    Every field except `n` and `sample_offset` is part of the call's identity (what
    `identity()` returns, and the cache keys on); `sample_offset` says which samples of
    that identity are wanted, so k samples of one prompt are k distinct cache entries
    (samples offset .. offset+n-1). With a seed, sample i is drawn with seed + i
    (`sample_seed`) by a backend that draws one sample a request (a local model, a
    provider without `n`); a provider that takes `n` draws the samples of one request
    from the seed of its first, so which samples share a request can change them. The
    call cache keeps each sample by its index either way, and replays exactly what was drawn.
    `with_(**changes)` returns a copy with some fields changed (the object is frozen).

    Attributes:
        n: How many samples the call asks for (at least 1).
        temperature: Sampling temperature (0: greedy).
        top_p: Nucleus sampling cut (1.0: none).
        max_tokens: The most tokens a reply may have (at least 1).
        stop: Strings that end a reply.
        seed: The seed of the first sample, or None for none.
        logprobs: Whether to return the log probabilities of the reply's tokens.
        top_logprobs: How many alternatives to return with each token's log probability.
        sample_offset: The index of the first sample wanted.

    Raises:
        ValueError: When `n` or `max_tokens` is below 1.

    Examples:
        ```python
        from veriloop import GenParams

        params = GenParams(n=3, temperature=1.0, seed=10)
        assert [params.sample_seed(i) for i in range(3)] == [10, 11, 12]
        third = params.with_(n=1, sample_offset=2)
        assert third.sample_seed(0) == 12
        assert third.identity() == params.identity()  # the same call; another sample of it
        ```
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
    """One reply of a model, with what it cost.

    A model function may return one instead of the bare text, to report token counts.
    Building it makes the text storable: each lone surrogate in `text` and in the logprob
    tokens becomes U+FFFD, and is counted in `surrogates_replaced`. `to_json` and
    `from_json` turn it into a JSON-ready dict and back (as the call cache stores it).

    Attributes:
        text: The reply text.
        finish_reason: Why the model stopped (e.g. "stop", "length").
        prompt_tokens: Tokens of the prompt (0 when unknown).
        completion_tokens: Tokens of the reply (0 when unknown).
        logprobs: The log probability of each token of the reply, when asked for.
        seconds: How long the call took.
        cached: Whether the reply was replayed from the call cache.
        surrogates_replaced: How many lone surrogates were replaced in the text and logprob
            tokens (0: the text is as the model gave it).
        reasoning: The model's own reasoning as its provider returned it (thinking blocks,
            a reasoning summary, a server's `reasoning_content`); None when it gave none.
        reasoning_tokens: Tokens the model spent reasoning; they are part of
            `completion_tokens`, so budgets and prices count them (0 when unknown).
        cached_prompt_tokens: Prompt tokens the provider read from its prompt cache
            (billed at its cached-input rate); part of `prompt_tokens`.
        sent: The request's parameters as the provider was sent them (every field of the
            request but the messages, never a key), when the provider's adapter says; so a
            record shows what a model that refuses a parameter was really asked.

    Raises:
        VeriloopError: When `text` is not a str.

    Examples:
        ```python
        import veriloop
        from veriloop import Completion

        def llm(messages):
            return Completion(text="8", finish_reason="stop", prompt_tokens=5, completion_tokens=1)

        result = veriloop.correct(llm, "Name an even number.", lambda prompt, answer: answer == "8", cache=False)
        assert (result.answer, result.tokens) == ("8", 6)
        assert Completion.from_json(Completion(text="8", finish_reason="stop", prompt_tokens=5,
                                               completion_tokens=1).to_json()).text == "8"
        ```
    """

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
    reasoning: str | None = None
    reasoning_tokens: int = 0
    cached_prompt_tokens: int = 0
    sent: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):  # a user's function may build one wrongly: said in one line
            raise VeriloopError(f"a Completion's text must be a str, not {type(self.text).__name__}")
        self.text, replaced = storable_text(self.text)
        if self.reasoning is not None:
            self.reasoning, in_reasoning = storable_text(self.reasoning)
            replaced += in_reasoning
        for t in self.logprobs or ():
            t.token, in_token = storable_text(t.token)
            t.top = storable(t.top)
            replaced += in_token
        self.surrogates_replaced += replaced

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        # Rows as they were before these fields existed, when they hold nothing.
        for name in _OPTIONAL_FIELDS:
            if not d[name]:
                del d[name]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Completion:
        d = dict(d)
        if d.get("logprobs") is not None:
            d["logprobs"] = [TokenLogprob(**t) for t in d["logprobs"]]
        return cls(**d)


# Completion fields a cache row leaves out when empty (rows stay as older versions wrote them).
_OPTIONAL_FIELDS = ("surrogates_replaced", "reasoning", "reasoning_tokens", "cached_prompt_tokens", "sent")


@runtime_checkable
class Model(Protocol):
    """A chat model: what every backend, and any object you pass as a model, provides.

    An implementation has four attributes and two async methods: `generate(messages,
    params)` returns exactly `params.n` completions of the chat `messages`, and `aclose()`
    releases what the model holds. A plain function is easier still: `veriloop.model(fn)`
    wraps it (see `FunctionModel`).

    Attributes:
        backend: The name of the implementation (e.g. "llamacpp", "openai", "function").
        identity: The exact weights (a file hash or a server model name); the call cache
            keys on it.
        name: The label of the model in records.
        preferred_concurrency: How many trajectories may use the model at once with
            profit: 1 for a single in-process model (interleaving would also destroy its
            prompt-prefix reuse), more for servers.

    Examples:
        ```python
        import veriloop
        from veriloop import Completion, Model

        class Eight:
            backend, identity, name, preferred_concurrency = "mine", "eight-v1", "eight", 1

            async def generate(self, messages, params):
                return [Completion(text="8", finish_reason="stop", prompt_tokens=0, completion_tokens=1)
                        for _ in range(params.n)]

            async def aclose(self):
                pass

        assert isinstance(Eight(), Model)
        result = veriloop.correct(Eight(), "Name an even number.", lambda prompt, answer: answer == "8", cache=False)
        assert result.answer == "8" and result.trajectory.model == "eight"
        ```
    """

    backend: str
    identity: str
    name: str
    # How many trajectories may run at once with profit: 1 for a single in-process model
    # (interleaving would also destroy its prompt-prefix reuse), more for servers.
    preferred_concurrency: int

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]: ...

    async def aclose(self) -> None: ...
