"""The verifier protocol: judge one reply of the model inside a loop."""

from __future__ import annotations

from typing import Protocol

from ..episode import Episode
from ..records import Verdict


class Verifier(Protocol):
    """Judges one reply inside a loop and returns a Verdict; a check function becomes one
    through `veriloop.FunctionCheck`."""

    name: str

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict: ...
