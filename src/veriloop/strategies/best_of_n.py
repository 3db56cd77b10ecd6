from __future__ import annotations

from pydantic import Field

from ..episode import Episode
from ..records import Verdict
from ..verifiers import get_verifier
from .base import Strategy, VerifierSpec, verifier_calls


def rank(verdict: Verdict) -> tuple[bool, float]:
    """Accepted answers first, then by score (a verdict without one scores as its ok)."""
    score = verdict.score if verdict.score is not None else float(verdict.ok)
    return (verdict.ok, score)


class BestOfN(Strategy):
    kind = "best-of-n"
    summary = (
        "n samples of the base prompt, each verified; output the best one (accepted first, then highest score, "
        "ties: the earliest)"
    )

    n: int = Field(5, ge=1)
    temperature: float = 1.0
    verifier: VerifierSpec = "sound"

    def calls_per_instance(self) -> int | None:
        judge = verifier_calls(self.verifier)
        return None if judge is None else self.n * (1 + judge)

    async def run(self, episode: Episode) -> None:
        verifier = get_verifier(self.verifier)
        # Sample i is cache entry i of the base prompt: the very samples sampling and
        # self-consistency draw at the same temperature.
        params = episode.params(temperature=self.temperature, n=self.n)
        completions = await episode.call("generate", episode.domain.prompt(episode.instance), params, round=1)
        best: tuple[tuple[bool, float], str] | None = None
        for round, completion in enumerate(completions, start=1):
            verdict = await verifier.verify(episode, completion.text, round)
            episode.add_round(round, completion.text, verdict)
            if best is None or rank(verdict) > best[0]:
                best = (rank(verdict), completion.text)
        assert best is not None  # n >= 1
        accepted, _ = best[0]
        episode.finish(best[1], "best_accepted" if accepted else "none_accepted")
