"""The domain's own exact checker (for a `Task`, its check function)."""

from __future__ import annotations

from ..domains.base import Domain, FunctionChecked
from ..episode import Episode
from ..errors import VeriloopError
from ..records import Verdict
from .base import BaseVerifier


class SoundVerifier(BaseVerifier):
    name = "sound"
    calls = 0
    sound = True

    def check_domain(self, domain: Domain) -> None:
        """A Task made without a check function has nothing to run."""
        if isinstance(domain, FunctionChecked) and not domain.can_verify:
            raise VeriloopError(
                f"verifier 'sound' runs the domain's own check, and domain {domain.name!r} has none; "
                "give it a check function (--check on the command line), or use verifier=llm"
            )

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        # A domain whose check may wait on I/O (a Task with an async check) overrides
        # averify; every other domain's averify is its verify.
        return await episode.domain.averify(episode.instance, text)
