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
"""One chat message: a dict with a "role" ("system", "user" or "assistant") and its
"content" text.

A prompt is a list of messages, and a model (a function given to `veriloop.model`) is
called with the list of messages to answer.

Examples:
    ```python
    import veriloop

    seen = []

    def llm(messages):
        seen.append(messages)
        return "8"

    veriloop.correct(llm, "Name an even number.", lambda prompt, answer: answer == "8", cache=False)
    assert seen[0] == [{"role": "user", "content": "Name an even number."}]
    ```
"""

# In a Python string every surrogate code point is lone: a valid pair from JSON is decoded
# to the one character it encodes.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    # isascii reads a flag CPython keeps on every string: most text is settled without a scan.
    if text.isascii() or _SURROGATE.search(text) is None:
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def _holds_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` (dict keys and values, list and tuple items)
    holds a lone surrogate. One pass with no copying: nearly every value has none, and
    `storable` rebuilds only those that do."""
    stack = [value]
    search = _SURROGATE.search
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not node.isascii() and search(node) is not None:
                return True
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


def storable(value: Any) -> Any:
    """`value` with every string in it (dict keys and values, list and tuple items) made
    storable; a container in which nothing needed replacing is kept as given (the caller's
    own object), and values of other types are kept as they are."""
    if isinstance(value, str):
        return storable_text(value)[0]
    if not isinstance(value, dict | list | tuple) or not _holds_surrogate(value):
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
    """One problem of a domain.

    Attributes:
        id: The instance's id, unique within its domain (records and resumed runs key on it).
        data: The domain's own payload for the problem; it must be JSON-serialisable.
        reference: The known right answer, when the domain has one; None otherwise.

    Examples:
        ```python
        from veriloop import Instance

        instance = Instance(id="1", data={"q": "2+2"}, reference=4)
        assert instance.model_dump() == {"id": "1", "data": {"q": "2+2"}, "reference": 4}
        assert Instance.model_validate_json(instance.model_dump_json()) == instance
        ```
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    data: dict[str, Any]
    reference: Any | None = None


class VerdictError(BaseModel):
    """One thing wrong with an answer; a verdict lists them in the order a checker found them.

    The text fields are made storable when the error is built: each lone surrogate in
    them becomes U+FFFD, since a check is user code whose words go into records and prompts.

    Attributes:
        kind: A short label for the kind of error (e.g. "parity", "wrong_value").
        message: What is wrong, in words; feedback shows it to the model.
        where: The part of the answer the error is about, if the checker says.

    Examples:
        ```python
        from veriloop import Verdict, VerdictError

        error = VerdictError(kind="parity", message="7 is odd", where="7")
        verdict = Verdict(ok=False, errors=[error])
        assert verdict.errors[0].message == "7 is odd"
        assert VerdictError(kind="text", message="bad" + chr(0xD800)).message == "bad" + chr(0xFFFD)
        ```
    """

    model_config = ConfigDict(defer_build=True)

    kind: str
    message: str
    where: str | None = None

    @field_validator("kind", "message", "where")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        # A check is the user's code: its words enter here, and go into records and prompts.
        return value if value is None or value.isascii() else storable_text(value)[0]


class Candidate(BaseModel):
    """A candidate answer for the verification studies: written as a model would write
    it, with its kind and the sound verifier's ground truth."""

    model_config = ConfigDict(defer_build=True)

    kind: str  # "correct" | "ablated" (exactly one thing wrong) | "non_optimal" | "random" | "llm"
    text: str
    correct: bool
    note: str = ""  # what was changed, for ablations (e.g. "vertex 3 recoloured Color2")


class Verdict(BaseModel):
    """A judgement of one answer: the one currency between verifiers, feedback policies
    and metrics.

    A check function may return one (besides a bool, an error string or a list of them),
    and every verifier does.

    Attributes:
        ok: Whether the answer is accepted.
        errors: What is wrong with it, in the order the checker found it.
        malformed: The answer could not even be read as an answer of the domain.
        score: A number ranking the answer, when the checker gives one (best-of-n ranks by it).
        unreadable: The verdict came from a judge whose own reply could not be parsed: it
            counts as a rejection, but is kept apart so studies can report it.
        verifier: The name of the verifier that gave it ("sound" for the domain's own check).

    Examples:
        ```python
        import veriloop
        from veriloop import Verdict, VerdictError

        def even(prompt, answer):
            if int(answer) % 2 == 0:
                return Verdict(ok=True)
            return Verdict(ok=False, errors=[VerdictError(kind="parity", message=f"{answer} is odd")])

        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.", even, cache=False)
        assert result.answer == "8"
        assert "7 is odd" in result.feedback[0]  # the backprompt names the error
        ```
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
# stage of SelfCheck's step-by-step checking (the stage is named in CallRecord.stage);
# escalate: an answer from a cascade's next stage (the escalation_model role).
Role = Literal["generate", "correct", "verify", "critique", "check", "escalate"]


class CallRecord(BaseModel):
    """One model call of a loop: its role, round, the messages sent and the reply, with
    tokens, seconds and whether it came from the cache.

    Attributes:
        role: What the call was for: "generate" (an answer to the base prompt or after
            feedback), "correct" (a rewrite after a critique), "verify" (a judgement),
            "critique" (free-text feedback), "check" (a stage of SelfCheck) or "escalate"
            (an answer from a cascade's escalated stage).
        round: The round the call belongs to.
        sample_index: Which sample of the call this is (0 unless several were drawn).
        messages: The messages sent.
        response: The reply text, lone surrogates replaced by U+FFFD.
        finish_reason: Why the model stopped (e.g. "stop", "length").
        prompt_tokens: Tokens of the prompt (0 when the model does not say).
        completion_tokens: Tokens of the reply (0 when the model does not say).
        seconds: How long the call took.
        cached: Whether the reply was replayed from the call cache.
        stage: SelfCheck's stage ("target", "collect", "regenerate", "compare" or
            "global"); None for other calls.
        step: The step SelfCheck checked; None for other calls.
        model: The model that answered when a role was given to another model than the
            generator (the trajectory's `model`); None for the generator.
        surrogates_replaced: How many lone surrogates the reply held (see `storable_text`).
        reasoning: The model's own reasoning as its provider returned it (thinking blocks,
            a reasoning summary); None when it gave none.
        reasoning_tokens: Tokens spent reasoning, part of `completion_tokens` (0 when the
            provider does not say).
        cached_prompt_tokens: Prompt tokens read from the provider's prompt cache, part of
            `prompt_tokens`.
        sent: The request's parameters as sent to the provider (all but the messages);
            None for a model that does not say (a local model, a function).

    Examples:
        ```python
        import veriloop

        result = veriloop.correct(lambda messages: "8", "Name an even number.",
                                  lambda prompt, answer: answer == "8", cache=False)
        (call,) = result.trajectory.calls
        assert (call.role, call.round, call.response, call.cached) == ("generate", 1, "8", False)
        print(call.messages)
        ```
    """

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
    reasoning: str | None = None
    reasoning_tokens: int = 0
    cached_prompt_tokens: int = 0
    sent: dict[str, Any] | None = None


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
    """One proposed answer, what the in-loop verifier said of it, and the ground truth.

    Attributes:
        round: The round number (1 for the first answer).
        text: The model's whole reply.
        answer: The answer extracted from the reply, or None when it holds none.
        verdict: What the in-loop verifier said, or None when the answer was not checked.
        correct: Whether the answer is right by ground truth.

    Examples:
        ```python
        import veriloop

        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.",
                                  lambda prompt, answer: int(answer) % 2 == 0, cache=False)
        first, second = result.trajectory.rounds
        assert (first.round, first.answer, first.verdict.ok, first.correct) == (1, "7", False, False)
        assert (second.answer, second.verdict.ok, second.correct) == ("8", True, True)
        ```
    """

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
    """Everything one strategy did on one instance, stored as one line of trajectories.jsonl.

    `key` is (strategy, instance_id, seed), under which a run resumes; `n_rounds` is the
    number of answers proposed.

    Attributes:
        strategy: The strategy's canonical name (every option spelled out).
        domain: The domain's name.
        model: The generator model's name.
        instance_id: The id of the instance.
        seed: The seed of the run.
        calls: Every model call, in order.
        rounds: Every proposed answer, with its verdict and ground truth.
        tool_calls: Every tool call made in the loop.
        step_checks: What SelfCheck's checks said of each solution.
        final_text: The final reply, or None when the loop produced none.
        final_answer: The answer extracted from the final reply.
        stop_reason: Why the loop stopped (e.g. "verifier_accepted", "max_rounds");
            "unfinished" until it does.
        correct: Whether the final answer is right by ground truth.
        seconds: How long the loop took.

    Examples:
        ```python
        import veriloop
        from veriloop import Trajectory

        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.",
                                  lambda prompt, answer: int(answer) % 2 == 0, cache=False)
        trajectory = result.trajectory
        assert (trajectory.final_answer, trajectory.stop_reason, trajectory.n_rounds) == ("8", "verifier_accepted", 2)
        assert Trajectory.model_validate_json(trajectory.model_dump_json()) == trajectory
        print(trajectory.key)
        ```
    """

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
