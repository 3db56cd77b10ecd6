"""Strategies are control loops over an Episode; options are typed and printable.

A strategy's canonical name (`backprompt:feedback=first,max_rounds=5,verifier=sound`)
lists every option, so it is both the label in a table and the key under which its
trajectories are resumed: changing an option never reuses results made without it.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict

from ..domains.base import Message, Verdict
from ..episode import Episode
from ..errors import VeriloopError
from ..feedback import check_level
from ..models.base import GenParams
from ..verifiers import Verifier, get_verifier


def _known_verifier(name: str) -> str:
    try:
        get_verifier(name)
    except VeriloopError as exc:  # pydantic reports ValueErrors as option errors
        raise ValueError(str(exc)) from None
    return name


# Option types shared by every strategy that takes them.
VerifierName = Annotated[str, AfterValidator(_known_verifier)]
FeedbackLevel = Annotated[str, AfterValidator(check_level)]


class Strategy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ClassVar[str]
    summary: ClassVar[str]

    @property
    def canonical(self) -> str:
        # Unset optional options (None: "the task's default") are left out, so adding one
        # to a strategy does not rename the trajectories already recorded under it.
        opts = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(self.model_dump().items()) if v is not None)
        return f"{self.kind}:{opts}" if opts else self.kind

    async def run(self, episode: Episode) -> None:
        raise NotImplementedError


def _fmt(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


async def attempt(
    episode: Episode, verifier: Verifier, messages: list[Message], params: GenParams, round: int
) -> tuple[str, Verdict]:
    """One answer, checked and recorded; the episode finishes here if the verifier accepts."""
    text = await episode.call_one("generate", messages, params, round)
    verdict = await verifier.verify(episode, text, round)
    episode.add_round(round, text, verdict)
    if verdict.ok:
        episode.finish(text, "verifier_accepted")
    return text, verdict
