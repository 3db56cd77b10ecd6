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
    # Draw the k samples in one call (one request where the provider takes n, its prompt
    # billed once) and check them in order: every sample is paid and recorded, those after
    # the accepted one too. Off (None, so that runs recorded before the option keep their
    # strategy's name): one sample a round, none drawn after the accepted one.
    together: bool | None = None

    def calls_per_instance(self) -> int | None:
        judge = verifier_calls(self.verifier)
        return None if judge is None else self.k * (1 + judge)

    async def run(self, episode: Episode) -> None:
        verifier = get_verifier(self.verifier)
        messages = episode.domain.prompt(episode.instance)
        text = ""
        if self.together:
            drawn = await episode.call("generate", messages, episode.params(temperature=self.temperature, n=self.k),
                                       round=1)
            for round, call in enumerate(episode.trajectory.calls[-self.k:], start=1):
                call.round = round  # sample i is round i's answer, as when drawn one a round
            for round, completion in enumerate(drawn, start=1):
                text = completion.text
                verdict = await verifier.verify(episode, text, round)
                episode.add_round(round, text, verdict)
                if verdict.ok:
                    episode.finish(text, "verifier_accepted")
                    return
            episode.finish(text, "max_rounds")
            return
        for round in range(1, self.k + 1):
            # Sample index = round - 1: the same k cache entries self-consistency draws.
            params = episode.params(temperature=self.temperature, sample_offset=round - 1)
            text, verdict = await attempt(episode, verifier, messages, params, round)
            if verdict.ok:
                return
        episode.finish(text, "max_rounds")
