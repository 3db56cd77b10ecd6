"""Verifier registry: a new verifier is one module plus one line here."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import VeriloopError
from .base import Verifier
from .critic import CriticVerifier
from .llm_judge import LLMJudge
from .sound import SoundVerifier

VERIFIERS: dict[str, Callable[[], Verifier]] = {
    "sound": SoundVerifier,
    "llm": LLMJudge,
    "llm-cot": lambda: LLMJudge(cot=True),
    "critic": CriticVerifier,
    "critic-notool": lambda: CriticVerifier(use_tools=False),
}


def get_verifier(name: str) -> Verifier:
    if name not in VERIFIERS:
        raise VeriloopError(f"unknown verifier {name!r}; choose one of: {', '.join(VERIFIERS)}")
    return VERIFIERS[name]()


__all__ = ["VERIFIERS", "Verifier", "get_verifier"]
