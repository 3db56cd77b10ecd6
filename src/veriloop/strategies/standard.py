from __future__ import annotations

from ..episode import Episode
from .base import Strategy


class Standard(Strategy):
    kind = "standard"
    summary = "one answer to the base prompt, no verification"

    temperature: float = 0.0

    async def run(self, episode: Episode) -> None:
        messages = episode.domain.prompt(episode.instance)
        text = await episode.call_one("generate", messages, episode.params(temperature=self.temperature), round=1)
        episode.add_round(1, text)
        episode.finish(text, "single_answer")
