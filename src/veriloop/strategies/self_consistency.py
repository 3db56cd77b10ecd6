from __future__ import annotations

from collections import Counter

from pydantic import Field

from ..episode import Episode
from .base import Strategy


class SelfConsistency(Strategy):
    kind = "self-consistency"
    summary = "k samples of the base prompt; output the most common answer (ties: the earliest)"

    k: int = Field(15, ge=1)
    temperature: float = 1.0

    def calls_per_instance(self) -> int:
        return self.k

    async def run(self, episode: Episode) -> None:
        messages = episode.domain.prompt(episode.instance)
        params = episode.params(temperature=self.temperature, n=self.k)
        completions = await episode.call("generate", messages, params, round=1)
        texts = [c.text for c in completions]
        keys = []
        for i, text in enumerate(texts, start=1):
            episode.add_round(i, text)
            keys.append(episode.domain.canonical(episode.instance, episode.domain.extract_answer(episode.instance, text)))
        votes = Counter(k for k in keys if k is not None)
        if not votes:
            episode.finish(texts[0], "no_answer")
            return
        top = max(votes.values())
        winner = next(i for i, k in enumerate(keys) if k is not None and votes[k] == top)
        episode.finish(texts[winner], "majority")
