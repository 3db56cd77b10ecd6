"""The ground floor: the vocabulary and the records every other module shares.

Instances, verdicts and messages are what domains, verifiers and feedback speak; calls,
rounds, tool calls and trajectories are what a loop leaves behind (one JSON line per
trajectory), with what SelfCheck's checks said (`StepCheck`, `SolutionCheck`). This
module imports nothing of veriloop's, so any layer may import it.

Text that cannot be stored: a Python string may hold lone surrogates (U+D800 to U+DFFF,
e.g. from a JSON `"\\ud800"` escape), which no UTF-8 file, cache key or record can carry.
Such text is made storable once, where it enters veriloop (`storable_text`, `storable`):
a model's reply (every `Completion`), the messages the episode sends, data rows (task
records, data files), tool observations and a check's errors (`VerdictError`). Each lone surrogate becomes U+FFFD (the
replacement character), and a reply records how many it lost (`Completion` and
`CallRecord.surrogates_replaced`); nothing downstream checks again.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Every model here sets defer_build: its validator is built on first use, not at import.
# A one-shot command such as `veriloop verify` uses two of the records, and building
# them all cost about 65 ms of its start-up.

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}

# In a Python string every surrogate code point is lone: a valid pair from JSON is decoded
# to the one character it encodes.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    if _SURROGATE.search(text) is None:
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def storable(value: Any) -> Any:
    """`value` with every string in it (dict keys and values, list and tuple items) made
    storable; a container in which nothing needed replacing is kept as given (the caller's
    own object), and values of other types are kept as they are."""
    if isinstance(value, str):
        return storable_text(value)[0]
    if not isinstance(value, dict | list | tuple):
        return value
    # Walked with a stack of its own, not recursion: data may nest as deep as JSON allows.
    stack: list[tuple[Any, list[Any], list[Any]]] = [(value, _children(value), [])]
    while True:
        node, children, done = stack[-1]
        if len(done) == len(children):
            stack.pop()
            result = _rebuilt(node, children, done)
            if not stack:
                return result
            stack[-1][2].append(result)
            continue
        child = children[len(done)]
        if isinstance(child, dict | list | tuple):
            stack.append((child, _children(child), []))
        else:
            done.append(storable_text(child)[0] if isinstance(child, str) else child)


def _children(node: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> list[Any]:
    return [x for pair in node.items() for x in pair] if isinstance(node, dict) else list(node)


def _rebuilt(node: Any, children: list[Any], done: list[Any]) -> Any:
    if all(new is old for new, old in zip(done, children, strict=True)):
        return node
    if isinstance(node, dict):
        return dict(zip(done[0::2], done[1::2], strict=True))
    return done if isinstance(node, list) else tuple(done)


class Instance(BaseModel):
    """One problem of a domain. `data` is the domain's own JSON-serialisable payload."""

    model_config = ConfigDict(defer_build=True)

    id: str
    data: dict[str, Any]
    reference: Any | None = None


class VerdictError(BaseModel):
    """One thing wrong with an answer, in the order a checker found it."""

    model_config = ConfigDict(defer_build=True)

    kind: str
    message: str
    where: str | None = None

    @field_validator("kind", "message", "where")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        # A check is the user's code: its words enter here, and go into records and prompts.
        return None if value is None else storable_text(value)[0]


class Candidate(BaseModel):
    """A candidate answer for the verification studies: written as a model would write
    it, with its kind and the sound verifier's ground truth."""

    model_config = ConfigDict(defer_build=True)

    kind: str  # "correct" | "ablated" (exactly one thing wrong) | "non_optimal" | "random" | "llm"
    text: str
    correct: bool
    note: str = ""  # what was changed, for ablations (e.g. "vertex 3 recoloured Color2")


class Verdict(BaseModel):
    """The one currency between verifiers, feedback policies and metrics.

    `malformed` means the answer could not even be read as an answer of the domain.
    `unreadable` marks a verdict that came from a judge whose own reply could not be
    parsed: it counts as a rejection but is kept apart so studies can report it.
    """

    model_config = ConfigDict(defer_build=True)

    ok: bool
    errors: list[VerdictError] = Field(default_factory=list)
    malformed: bool = False
    score: float | None = None
    unreadable: bool = False
    verifier: str = "sound"


# generate: an answer from the base prompt; correct: a rewrite conditioned on a critique;
# verify: a judgement (with or without tools); critique: free-text feedback; check: one
# stage of SelfCheck's step-by-step checking (the stage is named in CallRecord.stage).
Role = Literal["generate", "correct", "verify", "critique", "check"]


class CallRecord(BaseModel):
    """One model call of a loop: its role, round, the messages sent and the reply, with
    tokens, seconds and whether it came from the cache (SelfCheck adds stage and step)."""

    model_config = ConfigDict(defer_build=True)

    role: Role
    round: int
    sample_index: int = 0
    messages: list[Message]
    response: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool
    # SelfCheck: "target" | "collect" | "regenerate" | "compare" | "global", and which
    # solution (its round) and step the call checked.
    stage: str | None = None
    step: int | None = None
    # The model that answered, when a role was given to another model than the generator
    # (the trajectory's `model`); None: the generator.
    model: str | None = None
    # Lone surrogates the reply held, replaced by U+FFFD in `response` (see storable_text).
    surrogates_replaced: int = 0


class ToolRecord(BaseModel):
    """One tool call made inside a loop, with what the tool gave back."""

    model_config = ConfigDict(defer_build=True)

    round: int
    tool: str
    input: str
    text: str
    ok: bool
    data: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False


class RoundRecord(BaseModel):
    """One proposed answer, what the in-loop verifier said of it, and the ground truth."""

    model_config = ConfigDict(defer_build=True)

    round: int
    text: str
    answer: str | None
    verdict: Verdict | None = None
    correct: bool


# SelfCheck's records: what each stage said of each step, and a solution's confidence.


class StepCheck(BaseModel):
    """SelfCheck on one step: what each of the four stages said, and r = +1 (the
    regenerated result supports the step), -1 (contradicts it) or 0 (not related, or a
    comparison reply that could not be read: `unreadable`)."""

    model_config = ConfigDict(defer_build=True)

    index: int  # 1-based step number
    text: str
    target: str = ""
    facts_used: list[int] = Field(default_factory=list)  # 1-based, into the question's facts
    steps_used: list[int] = Field(default_factory=list)  # 1-based, earlier steps only
    collection_unreadable: bool = False  # no index could be read: every fact and step was given
    regenerated: str = ""
    comparison: str = ""
    result: int = 0
    unreadable: bool = False


class SolutionCheck(BaseModel):
    """SelfCheck (or the single-call global checker) on one solution."""

    model_config = ConfigDict(defer_build=True)

    round: int  # the round (solution number) of the trajectory it checks
    checker: str  # "steps" | "global"
    steps_total: int
    steps_checked: int
    max_steps: int | None = None  # the cap in force, recorded so capped checks are visible
    steps: list[StepCheck] = Field(default_factory=list)
    contradicted: list[int] = Field(default_factory=list)
    unrelated: int = 0
    confidence: float
    global_reply: str | None = None

    @property
    def capped(self) -> bool:
        return self.steps_checked < self.steps_total


class Trajectory(BaseModel):
    """Everything one strategy did on one instance (one line of trajectories.jsonl): every
    call, round, tool call and SelfCheck check, the final answer, the stop reason, and
    whether the final answer is right by ground truth."""

    model_config = ConfigDict(defer_build=True)

    strategy: str
    domain: str
    model: str
    instance_id: str
    seed: int
    calls: list[CallRecord] = Field(default_factory=list)
    rounds: list[RoundRecord] = Field(default_factory=list)
    tool_calls: list[ToolRecord] = Field(default_factory=list)
    step_checks: list[SolutionCheck] = Field(default_factory=list)
    final_text: str | None = None
    final_answer: str | None = None
    stop_reason: str = "unfinished"
    correct: bool = False
    seconds: float = 0.0

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.strategy, self.instance_id, self.seed)

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)
