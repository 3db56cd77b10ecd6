"""Trajectories: everything one strategy did on one instance, written as JSON lines."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..domains.base import Message, Verdict

# generate: an answer from the base prompt; correct: a rewrite conditioned on a critique;
# verify: a judgement (with or without tools); critique: free-text feedback.
Role = Literal["generate", "correct", "verify", "critique"]


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
