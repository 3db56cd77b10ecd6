"""The domain's own exact checker (for a `Task`, its check function)."""

from __future__ import annotations

from ..episode import Episode
from ..records import Verdict


class SoundVerifier:
    name = "sound"

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        # A domain whose check may wait on I/O (a Task with an async check) says so with averify.
        averify = getattr(episode.domain, "averify", None)
        if averify is not None:
            verdict: Verdict = await averify(episode.instance, text)
            return verdict
        return episode.domain.verify(episode.instance, text)
