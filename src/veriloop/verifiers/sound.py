"""The domain's own exact checker."""

from __future__ import annotations

from ..domains.base import Verdict
from ..episode import Episode


class SoundVerifier:
    name = "sound"

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        return episode.domain.verify(episode.instance, text)
