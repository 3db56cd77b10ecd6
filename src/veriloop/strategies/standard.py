from __future__ import annotations

from ..episode import Episode
from .base import Strategy


class Standard(Strategy):
    kind = "standard"
    summary = "one answer to the base prompt, no verification"

    temperature: float = 0.0
    top_p: float | None = None  # None: no nucleus cut (1.0)

    def calls_per_instance(self) -> int:
        return 1

    async def run(self, episode: Episode) -> None:
        messages = episode.domain.prompt(episode.instance)
        params = episode.params(temperature=self.temperature, top_p=1.0 if self.top_p is None else self.top_p)
        text = await episode.call_one("generate", messages, params, round=1)
        episode.add_round(1, text)
        episode.finish(text, "single_answer")
