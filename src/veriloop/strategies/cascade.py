"""Escalate only when needed: answer with the cheap model, and only when the verifier
rejects, hand the instance to the next stage.

Invariants:
- Stage 1 is the generator (the cell's model, the one `--model` names), `tries` attempts.
  Stage 2 is the model of the `escalation_model` role (an experiment file's `[roles]`, or a
  model entry's own), `escalated_tries` attempts; without that role it is the generator
  again, so the second stage is simply more samples of the same model.
- Escalated calls have the call role `escalate`: their records name the model that
  answered them, and budgets and prices charge them to that model, as for every role.
- The first answer the verifier accepts ends the trajectory; when none is accepted, the
  last attempt is the answer. Rounds are numbered across both stages.
- Without `carry`, every attempt sees the base prompt: a model's first attempt is greedy
  (`temperature`), its later ones fresh samples at `sample_temperature`, each with its own
  sample index, so a second stage on the same model (no escalation_model) draws new
  samples instead of repeating its greedy answer. With `carry`, each attempt after the
  first also sees every earlier attempt and its feedback (as backprompting does), across
  the escalation too, and stays at `temperature`.
"""

from __future__ import annotations

from pydantic import Field

from ..episode import Episode
from ..feedback import render_feedback
from ..records import Message, Role
from ..verifiers import get_verifier
from .base import FeedbackLevel, Strategy, VerifierSpec, attempt, verifier_calls


class Cascade(Strategy):
    kind = "cascade"
    summary = (
        "answer with the generator; while the verifier rejects, escalate to the escalation_model role "
        "(or more samples of the generator), with the feedback carried over or not"
    )
    verifier: VerifierSpec = "sound"
    tries: int = Field(1, ge=1)
    escalated_tries: int = Field(1, ge=1)
    carry: bool = False
    feedback: FeedbackLevel = "first"
    temperature: float = 0.0
    sample_temperature: float = 1.0

    def calls_per_instance(self) -> int | None:
        judge = verifier_calls(self.verifier)
        attempts = self.tries + self.escalated_tries
        critiques = attempts - 1 if self.carry and self.feedback == "llm" else 0
        return None if judge is None else attempts * (1 + judge) + critiques

    async def run(self, episode: Episode) -> None:
        verifier = get_verifier(self.verifier)
        base = list(episode.domain.prompt(episode.instance))
        messages: list[Message] = base
        text = ""
        round = 0
        drawn: dict[str, int] = {}  # base-prompt answers asked of each model (by identity) so far
        stages: tuple[tuple[Role, int], ...] = (("generate", self.tries), ("escalate", self.escalated_tries))
        for role, tries in stages:
            identity = episode.model_for(role).identity
            for _ in range(tries):
                round += 1
                fresh_sample = not self.carry and drawn.get(identity, 0) > 0
                params = episode.params(
                    temperature=self.sample_temperature if fresh_sample else self.temperature,
                    # Sample i of the base prompt at temperature 1 is the cache entry sampling's round i+1 draws.
                    sample_offset=drawn.get(identity, 0) if fresh_sample else 0,
                )
                drawn[identity] = drawn.get(identity, 0) + 1
                text, verdict = await attempt(episode, verifier, messages, params, round, role=role)
                if verdict.ok:
                    return
                last = round == self.tries + self.escalated_tries
                if self.carry and not last:
                    critique = await render_feedback(self.feedback, episode, text, verdict, round)
                    messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": critique}]
        episode.finish(text, "max_rounds")
