"""The verifier protocol: judge one reply of the model inside a loop."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..domains.base import Domain
from ..episode import Episode
from ..records import Verdict


class Verifier(Protocol):
    """Judges one reply inside a loop and returns a Verdict; a check function becomes one
    through `veriloop.FunctionCheck`."""

    name: str

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict: ...


@runtime_checkable
class ChecksDomain(Protocol):
    """A verifier that works on some domains only (the code verifiers need a code task):
    a strategy asks it before any model loads, through `Strategy.check_domain`."""

    def check_domain(self, domain: Domain) -> None:
        """Raise VeriloopError, one line naming the domains it works on, when it cannot
        judge answers of `domain`."""
        ...
