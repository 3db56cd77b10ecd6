from __future__ import annotations

from pydantic import Field

from ..episode import Episode
from ..verifiers import get_verifier
from .base import Strategy, VerifierSpec, attempt, verifier_calls


class Sampling(Strategy):
    kind = "sampling"
    summary = "fresh sample of the same base prompt each round (no history) until the verifier accepts or k tries"

    k: int = Field(15, ge=1)
    temperature: float = 1.0
    verifier: VerifierSpec = "sound"

    def calls_per_instance(self) -> int | None:
        judge = verifier_calls(self.verifier)
        return None if judge is None else self.k * (1 + judge)

    async def run(self, episode: Episode) -> None:
        verifier = get_verifier(self.verifier)
        messages = episode.domain.prompt(episode.instance)
        text = ""
        for round in range(1, self.k + 1):
            # Sample index = round - 1: the same k cache entries self-consistency draws.
            params = episode.params(temperature=self.temperature, sample_offset=round - 1)
            text, verdict = await attempt(episode, verifier, messages, params, round)
            if verdict.ok:
                return
        episode.finish(text, "max_rounds")
