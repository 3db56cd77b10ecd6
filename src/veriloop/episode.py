"""One strategy working on one instance: the single door to the model, which records
every call into the trajectory."""

from __future__ import annotations

from dataclasses import dataclass

from .domains.base import Domain, Instance, Message, Verdict
from .experiment.records import CallRecord, Role, RoundRecord, Trajectory
from .models.base import Completion, GenParams, Model


@dataclass
class Episode:
    model: Model
    domain: Domain
    instance: Instance
    seed: int
    trajectory: Trajectory

    def params(self, **overrides: object) -> GenParams:
        base = GenParams(seed=self.seed, max_tokens=self.domain.answer_tokens)
        return base.with_(**overrides)

    async def call(self, role: Role, messages: list[Message], params: GenParams, round: int) -> list[Completion]:
        completions = await self.model.generate(messages, params)
        for i, c in enumerate(completions):
            self.trajectory.calls.append(
                CallRecord(
                    role=role,
                    round=round,
                    sample_index=params.sample_offset + i,
                    messages=messages,
                    response=c.text,
                    finish_reason=c.finish_reason,
                    prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens,
                    seconds=0.0 if c.cached else c.seconds,
                    cached=c.cached,
                )
            )
        return completions

    async def call_one(self, role: Role, messages: list[Message], params: GenParams, round: int) -> str:
        return (await self.call(role, messages, params.with_(n=1), round))[0].text

    def add_round(self, round: int, text: str, verdict: Verdict | None = None) -> RoundRecord:
        record = RoundRecord(
            round=round,
            text=text,
            answer=self.domain.extract_answer(self.instance, text),
            verdict=verdict,
            correct=self.domain.score(self.instance, text),
        )
        self.trajectory.rounds.append(record)
        return record

    def finish(self, text: str | None, stop_reason: str) -> None:
        t = self.trajectory
        t.final_text = text
        t.final_answer = None if text is None else self.domain.extract_answer(self.instance, text)
        t.correct = text is not None and self.domain.score(self.instance, text)
        t.stop_reason = stop_reason
