"""The verifier protocol: judge one reply of the model inside a loop.

What the rest of veriloop needs to know about a verifier beyond its verdicts (model
calls per verification, whether a name may set its threshold, whether it is sound) is
stated by the verifier itself, as `BaseVerifier`'s class attributes: a new verifier is
one class, and no table elsewhere lists it. An object that does not subclass
`BaseVerifier` is read with the defaults (`facts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from ..checks import FunctionCheck
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


class BaseVerifier:
    """A verifier that states its facts; subclass it, set `name` and write `verify`.

    Attributes:
        name: The verifier's label in records and strategy names.
        calls: Model calls one verification makes: 0 for a check that calls no model
            (the domain's own, tests in the sandbox), 1 for a judge, None when it
            depends on the reply (tool loops, step-by-step checks). `eval --dry-run`
            and a strategy's `calls_per_instance` read it.
        takes_threshold: Whether it accepts above a confidence that a name may set
            (`NAME@0.7`); then its constructor takes `threshold`.
        sound: Whether a rejection is always right (the domain's own check, tests a
            function fails); a judge or tests a model wrote are not.

    Examples:
        ```python
        from veriloop import Verdict
        from veriloop.verifiers.base import BaseVerifier, facts

        class LongEnough(BaseVerifier):
            name = "long-enough"
            calls = 0
            takes_threshold = True

            def __init__(self, threshold: float = 0.5):
                self.threshold = threshold

            async def verify(self, episode, text, round):
                return Verdict(ok=len(text) / 10 > self.threshold, verifier=self.name)

        # Registered (VERIFIERS.register, or a plugin's entry point), it takes long-enough@0.7.
        assert facts(LongEnough(0.7)) == facts(LongEnough())
        assert (facts(LongEnough()).calls, facts(LongEnough()).takes_threshold) == (0, True)
        ```
    """

    name: str
    calls: ClassVar[int | None] = None
    takes_threshold: ClassVar[bool] = False
    sound: ClassVar[bool] = False

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        raise NotImplementedError


@dataclass(frozen=True)
class Facts:
    """What a verifier states about itself (see `BaseVerifier`)."""

    calls: int | None = None
    takes_threshold: bool = False
    sound: bool = False


def facts(verifier: object) -> Facts:
    """The verifier's facts: its own when it subclasses `BaseVerifier`; a check function
    (`FunctionCheck`) calls no model and is the user's sound check; any other object the
    defaults (calls unknown, no threshold, not known to be sound)."""
    if isinstance(verifier, BaseVerifier):
        return Facts(verifier.calls, verifier.takes_threshold, verifier.sound)
    if isinstance(verifier, FunctionCheck):
        return Facts(calls=0, sound=True)
    return Facts()
