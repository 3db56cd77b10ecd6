"""Trajectories: everything one strategy did on one instance, written as JSON lines."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..domains.base import Message, Verdict

# generate: an answer from the base prompt; correct: a rewrite conditioned on a critique;
# verify: a judgement (with or without tools); critique: free-text feedback; check: one
# stage of SelfCheck's step-by-step checking (the stage is named in CallRecord.stage).
Role = Literal["generate", "correct", "verify", "critique", "check"]


class CallRecord(BaseModel):
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


class StepCheck(BaseModel):
    """SelfCheck on one step: what each of the four stages said, and r = +1 (the
    regenerated result supports the step), -1 (contradicts it) or 0 (not related, or a
    comparison reply that could not be read: `unreadable`)."""

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


class ToolRecord(BaseModel):
    """One tool call made inside a loop, with what the tool gave back."""

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

    round: int
    text: str
    answer: str | None
    verdict: Verdict | None = None
    correct: bool


class Trajectory(BaseModel):
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
