"""Verifier registry: a new verifier is one module plus one line here."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import VeriloopError
from .base import Verifier
from .critic import CriticVerifier
from .llm_judge import LLMJudge
from .selfcheck import SelfCheckVerifier
from .sound import SoundVerifier

VERIFIERS: dict[str, Callable[[], Verifier]] = {
    "sound": SoundVerifier,
    "llm": LLMJudge,
    "llm-cot": lambda: LLMJudge(cot=True),
    "critic": CriticVerifier,
    "critic-notool": lambda: CriticVerifier(use_tools=False),
    "selfcheck": SelfCheckVerifier,
    "global-check": lambda **kw: SelfCheckVerifier(checker="global", **kw),
}
# Verifiers that accept above a confidence threshold, which a name can set: selfcheck@0.8.
THRESHOLDED = ("selfcheck", "global-check")


def get_verifier(name: str | Verifier) -> Verifier:
    """The verifier a name stands for (`selfcheck@0.8` sets a threshold); a verifier
    object is returned as it is."""
    if not isinstance(name, str):
        return name
    base, at, threshold = name.partition("@")
    if base not in VERIFIERS:
        raise VeriloopError(f"unknown verifier {name!r}; choose one of: {', '.join(VERIFIERS)}")
    if not at:
        return VERIFIERS[base]()
    if base not in THRESHOLDED:
        raise VeriloopError(f"verifier {base!r} takes no threshold (only {', '.join(THRESHOLDED)} do: selfcheck@0.8)")
    try:
        value = float(threshold)
        return VERIFIERS[base](threshold=value)  # type: ignore[call-arg]
    except ValueError:
        raise VeriloopError(f"the threshold in {name!r} must be a number between 0 and 1") from None


__all__ = ["THRESHOLDED", "VERIFIERS", "Verifier", "get_verifier"]
