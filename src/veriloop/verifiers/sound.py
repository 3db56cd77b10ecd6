"""The domain's own exact checker (for a `Task`, its check function)."""

from __future__ import annotations

from ..domains.base import as_base_domain
from ..episode import Episode
from ..records import Verdict


class SoundVerifier:
    name = "sound"

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        # A domain whose check may wait on I/O (a Task with an async check) overrides
        # averify; every other domain's averify is its verify.
        return await as_base_domain(episode.domain).averify(episode.instance, text)
