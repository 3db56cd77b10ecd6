"""The verifier protocol: judge one reply of the model inside a loop."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..domains.base import Domain
from ..episode import Episode
from ..records import Verdict


class Verifier(Protocol):
    """Judges one reply of the model inside a loop and returns a Verdict.

    An implementation has a `name` (its label in records and strategy names) and an
    async method `verify(episode, text, round)`, which judges the reply `text` given in
    `round` of the `episode` (its instance, domain and model, to make calls of its own)
    and returns a `Verdict`. A check function becomes one through `veriloop.FunctionCheck`;
    the built-in verifiers are in `veriloop.VERIFIERS`.

    Attributes:
        name: The verifier's label in records and strategy names.

    Examples:
        ```python
        import veriloop
        from veriloop import Verdict, VerdictError

        class EvenJudge:
            name = "even"

            async def verify(self, episode, text, round):
                if text.strip().isdigit() and int(text) % 2 == 0:
                    return Verdict(ok=True, verifier=self.name)
                error = VerdictError(kind="parity", message=f"{text} is not even")
                return Verdict(ok=False, errors=[error], verifier=self.name)

        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.", EvenJudge(), cache=False)
        assert (result.answer, result.rounds, result.trajectory.rounds[0].verdict.verifier) == ("8", 2, "even")
        ```
    """

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
