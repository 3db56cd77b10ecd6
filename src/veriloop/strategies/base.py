"""Strategies are control loops over an Episode; options are typed and printable.

A strategy's canonical name (`backprompt:feedback=first,max_rounds=5,verifier=sound`)
lists every option, so it is both the label in a table and the key under which its
trajectories are resumed: changing an option never reuses results made without it.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from ..checks import FunctionCheck
from ..domains.base import Domain
from ..episode import Episode
from ..errors import VeriloopError, invalid_options_text
from ..feedback import check_level
from ..models.base import GenParams
from ..records import Message, Role, Verdict
from ..verifiers import VERIFIERS, ChecksDomain, Verifier, facts, get_verifier


def _verifier_spec(value: object) -> object:
    """A verifier name (checked now, so a typo fails before the run), a verifier object
    (anything with `name` and an async `verify`), or a check function, made a verifier."""
    if isinstance(value, str):
        try:
            get_verifier(value)
        except VeriloopError as exc:  # pydantic reports ValueErrors as option errors
            raise ValueError(str(exc)) from None
        return value
    if hasattr(value, "verify") and hasattr(value, "name"):
        return value
    if callable(value):
        return FunctionCheck(value)
    raise ValueError(
        f"a verifier is a name ({', '.join(VERIFIERS)}), an object with verify(), or a check function, "
        f"not {type(value).__name__}"
    )


def _optional_verifier_spec(value: object) -> object:
    return None if value is None else _verifier_spec(value)


# Option types shared by every strategy that takes them.
VerifierSpec = Annotated[Any, AfterValidator(_verifier_spec)]
# The same, or None for "no such verifier" (left out of the canonical name when unset).
OptionalVerifierSpec = Annotated[Any, AfterValidator(_optional_verifier_spec)]
FeedbackLevel = Annotated[str, AfterValidator(check_level)]


class Strategy(BaseModel):
    """A control loop over an Episode: how answers are asked for, checked and corrected.

    A subclass provides its typed options as pydantic fields (with defaults), the class
    variables `kind` (its registry name) and `summary` (one line, shown by `run --help`),
    and `async run(episode)`, which makes the calls, records the rounds and finishes the
    episode. It may also override `calls_per_instance` (the most model calls it makes on
    one instance, for `eval --dry-run`) and `check_domain` (refuse a domain before any
    model loads). A strategy is frozen; its `canonical` name lists every option set, and
    is both its label in tables and the key its trajectories resume under. The built-in
    ones are in `veriloop.STRATEGIES`; `veriloop.strategy(spec)` builds one from a spec.

    Raises:
        VeriloopError: When an option is unknown or has a wrong value (one line naming the
            strategy, the option and what it takes).

    Examples:
        ```python
        import veriloop
        from veriloop import Strategy

        class Once(Strategy):
            kind = "once"
            summary = "one answer to the base prompt"
            temperature: float = 0.0

            async def run(self, episode):
                params = episode.params(temperature=self.temperature)
                text = await episode.call_one("generate", episode.domain.prompt(episode.instance), params, round=1)
                episode.add_round(1, text)
                episode.finish(text, "single_answer")

        result = veriloop.correct(lambda messages: "8", "Name an even number.", strategy=Once(), cache=False)
        assert (result.answer, result.stop_reason) == ("8", "single_answer")
        assert Once(temperature=0.5).canonical == "once:temperature=0.5"
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    kind: ClassVar[str]
    summary: ClassVar[str]

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            # Options come from users (a spec's key=value, keyword arguments), so the
            # error names the strategy, the option and what it takes, in words.
            kind = getattr(type(self), "kind", type(self).__name__)
            raise VeriloopError(invalid_options_text(exc, kind, type(self).model_fields)) from None

    @property
    def canonical(self) -> str:
        # Unset optional options (None: "the task's default") are left out, so adding one
        # to a strategy does not rename the trajectories already recorded under it.
        opts = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(self.model_dump().items()) if v is not None)
        return f"{self.kind}:{opts}" if opts else self.kind

    def check_domain(self, domain: Domain) -> None:
        """Raise VeriloopError when this strategy cannot run on `domain`, before any model
        is loaded or called. The default: every verifier option's verifier that works on
        some domains only (`ChecksDomain`: `sound` needs a domain with a check, the code
        verifiers a code task) is asked."""
        for option, value in self.model_dump().items():
            if value is not None and _is_verifier_option(type(self).model_fields.get(option)):
                verifier = get_verifier(value)
                if isinstance(verifier, ChecksDomain):
                    verifier.check_domain(domain)

    def calls_per_instance(self) -> int | None:
        """At most this many model calls on one instance (for `eval --dry-run`'s estimate);
        None when it depends on the answers (tool loops, step counts)."""
        return None

    async def run(self, episode: Episode) -> None:
        raise NotImplementedError


def _is_verifier_option(info: FieldInfo | None) -> bool:
    validators = (_verifier_spec, _optional_verifier_spec)
    return info is not None and any(isinstance(m, AfterValidator) and m.func in validators for m in info.metadata)


def verifier_calls(verifier: object) -> int | None:
    """Model calls one verification costs, as the verifier states it (`BaseVerifier.calls`):
    none for the domain's own check, a function or tests run in the sandbox, one for an
    LLM judge or a model writing tests, unknown (None) for the tool-using and
    step-by-step ones and for a verifier that does not say."""
    return facts(get_verifier(verifier) if isinstance(verifier, str) else verifier).calls


def _fmt(value: object) -> str:
    if not isinstance(value, (str, int, float, bool)) and hasattr(value, "name"):
        return str(value.name)  # a verifier object or check function: its label
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


async def attempt(
    episode: Episode, verifier: Verifier, messages: list[Message], params: GenParams, round: int,
    role: Role = "generate",
) -> tuple[str, Verdict]:
    """One answer (a call of `role`), checked and recorded; the episode finishes here if
    the verifier accepts."""
    text = await episode.call_one(role, messages, params, round)
    verdict = await verifier.verify(episode, text, round)
    episode.add_round(round, text, verdict)
    if verdict.ok:
        episode.finish(text, "verifier_accepted")
    return text, verdict
