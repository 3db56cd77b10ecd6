"""The provider contract: what one wire format (OpenAI's chat completions, Anthropic's
Messages, Gemini's generateContent, Ollama's chat) must say so that the one HTTP transport
(`veriloop.models.openai_compat.ServerModel`: retries, stall and size limits, secrets
masked, requests in flight bounded) can speak it.

A provider is a small class registered in `veriloop.models.providers.PROVIDERS` under the
prefix of its model ids (`anthropic/claude-...`); a plugin adds one through the entry point
group `veriloop.providers`. It never performs I/O: it turns a call into a request body,
an answer's JSON into completions, and a refused answer into one line naming the fix.

Invariants:
- `request` is a pure function of (model, settings, messages, params, samples): the same
  call always sends the same body, so a batch file and a replay agree with the live call.
- A parameter the model refuses is never sent; what was left out or changed is said once
  per model in `Request.notices` (e.g. "asks for greedy decoding; o3 cannot be greedy"),
  and `Request.sent` is what the record keeps: every field of the body but the messages.
- `replies` returns between 1 and `count` completions (fewer when a server ignores `n`:
  the transport then asks for the rest, and no longer sends `n` to it), or raises
  `Damaged` (retried as a fault), `WrongShape` (JSON of another API: the transport says so
  with the URL) or `VeriloopError` (an answer no retry changes). `completion_tokens`
  includes the reasoning tokens, `prompt_tokens` the cached ones, and the completions of
  one request add up to what it billed (the prompt on the first), so budgets count what
  was paid.
- No provider module imports an SDK: the bodies are plain JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import VeriloopError
from ...records import Message
from ..base import Completion, GenParams

# What `reasoning_effort` may be, for every provider that reasons.
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


class Damaged(Exception):
    """An answer that is damaged in transit (cut short, empty, no choices): a fault the
    transport retries. Its text says what, in one line."""


class Reshape(Exception):
    """Raised by `refusal` when the provider has learned from a refused request and changed
    what it sends (a model it did not know takes other parameters): the transport says the
    text once as a notice and asks the call again, once. A second refusal of the call is
    an error."""


class WrongShape(Exception):
    """A 2xx answer in JSON that is not this API's answer (another API's, a proxy's):
    no retry changes it. Its text is the shape the provider expected."""


@dataclass(frozen=True)
class Supports:
    """What a provider's API accepts, as the provider table in the docs shows it."""

    temperature: bool = True
    seed: bool = False
    n: bool = False  # several samples of one prompt in one request (the prompt billed once)
    logprobs: bool = False
    reasoning: bool = False  # a reasoning effort or thinking budget, and reasoning recorded
    batch: bool = False  # a batch API at half price (veriloop's --batch)


@dataclass
class Request:
    """One HTTP request a call becomes: the path below the base URL, the JSON body, the
    parameters the record keeps (`sent`), and what was changed from the call's params."""

    path: str
    body: dict[str, Any]
    sent: dict[str, Any]
    notices: list[str] = field(default_factory=list)


class Provider:
    """One wire format. Subclasses set the class attributes and implement `request`,
    `replies` and, where the provider's errors say more than their HTTP status,
    `refusal`.

    Attributes:
        prefix: The model id prefix without its slash ("anthropic").
        title: The provider's name in messages and docs ("Anthropic Messages API").
        key_variables: Environment variables holding its key, read after
            `VERILOOP_API_KEY` (e.g. ("ANTHROPIC_API_KEY",)); () when it needs none.
        base_url_variables: Environment variables holding its base URL, read after
            `VERILOOP_BASE_URL`.
        default_base_url: Its public endpoint, or None when the user must give one.
        supports: What its API accepts.
        path: The path of a generation request below the base URL, as its requests send it.
        answer_shape: Its answer's JSON in brief, for the message about a wrong one.
        request_name, answer_name: What a request and its answer are called there
            ("a chat completion request", "a chat completion").
        max_n: The most samples one request may ask for (when `supports.n`).
    """

    prefix: ClassVar[str]
    title: ClassVar[str]
    key_variables: ClassVar[tuple[str, ...]] = ()
    base_url_variables: ClassVar[tuple[str, ...]] = ()
    default_base_url: ClassVar[str | None] = None
    supports: ClassVar[Supports] = Supports()
    answer_shape: ClassVar[str] = "this API's JSON answer"
    request_name: ClassVar[str] = "a generation request"
    api_name: ClassVar[str] = ""  # how a 404's hint names the API ("" : "the " + title)
    answer_name: ClassVar[str] = "an answer"
    max_n: ClassVar[int] = 128

    @property
    def path(self) -> str:
        """The path of a generation request below the base URL ("/chat/completions"): a
        class attribute, or a property where it names the model (Gemini's)."""
        raise NotImplementedError

    def __init__(self, model: str, reasoning_effort: str | None = None) -> None:
        if reasoning_effort is not None and reasoning_effort not in REASONING_EFFORTS:
            raise VeriloopError(f"reasoning effort {reasoning_effort!r} is not one of: {', '.join(REASONING_EFFORTS)}")
        if reasoning_effort is not None and not self.supports.reasoning:
            raise VeriloopError(f"{self.title} takes no reasoning effort; remove reasoning_effort for {model!r}")
        self.model = model
        self.reasoning_effort = reasoning_effort

    def headers(self, api_key: str | None) -> dict[str, str]:
        """The request headers that carry the key and the API's version (Bearer by default)."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def request(self, messages: list[Message], params: GenParams, first: int, count: int) -> Request:
        """The request for samples first .. first+count-1 of the call (count > 1 only when
        `supports.n`)."""
        raise NotImplementedError

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        """The completions (1 to `count`) of a 2xx answer's parsed JSON; `Damaged`,
        `WrongShape` or a VeriloopError when it holds none."""
        raise NotImplementedError

    def refusal(self, status: int, body: str) -> VeriloopError | None:
        """The one-line error for a refused request (a 4xx no retry changes) when the
        provider's body says more than the status; None: the transport's own by status.
        It may raise `Reshape` instead, having changed what it will send."""
        return None

    def limits(self) -> list[str]:
        """What this model will not do that a strategy may ask for (e.g. greedy decoding),
        known before any call: recorded in a run's config.json."""
        return []

    def identity_suffix(self) -> str:
        """What, beyond the model and the server, changes a sample: the reasoning effort."""
        return f"#effort={self.reasoning_effort}" if self.reasoning_effort else ""


def apportion(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, whole numbers that add up to it exactly
    (largest remainders): completion tokens that an API reports for several samples at once."""
    if not weights:
        return []
    whole = sum(weights)
    if whole <= 0:
        weights, whole = [1] * len(weights), len(weights)
    shares = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares
