"""SelfCheck's records: what each stage said of each step, and the solution's confidence.
Kept on `Trajectory.step_checks`; nothing here imports the rest of veriloop."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# Every model here sets defer_build: its validator is built on first use, not at import.
# A one-shot command such as `veriloop verify` uses two of the records, and building
# them all cost about 65 ms of its start-up.


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
