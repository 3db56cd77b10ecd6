from __future__ import annotations

from pydantic import Field

from ..episode import Episode
from ..feedback import render_feedback
from ..verifiers import get_verifier
from .base import FeedbackLevel, Strategy, VerifierSpec, attempt, verifier_calls


class Backprompt(Strategy):
    kind = "backprompt"
    summary = (
        "answer, verify, feed the critique back with the whole history; stop when the verifier accepts "
        "or after max_rounds (the last answer is the output)"
    )

    verifier: VerifierSpec = "sound"
    feedback: FeedbackLevel = "first"
    max_rounds: int = Field(15, ge=1)
    temperature: float = 0.0

    def calls_per_instance(self) -> int | None:
        judge = verifier_calls(self.verifier)
        critiques = self.max_rounds - 1 if self.feedback == "llm" else 0
        return None if judge is None else self.max_rounds * (1 + judge) + critiques

    async def run(self, episode: Episode) -> None:
        verifier = get_verifier(self.verifier)
        messages = list(episode.domain.prompt(episode.instance))
        params = episode.params(temperature=self.temperature)
        text = ""
        for round in range(1, self.max_rounds + 1):
            text, verdict = await attempt(episode, verifier, messages, params, round)
            if verdict.ok:
                return
            if round == self.max_rounds:
                break
            critique = await render_feedback(self.feedback, episode, text, verdict, round)
            # A new list: the model may keep the one it was sent.
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": critique}]
        episode.finish(text, "max_rounds")
