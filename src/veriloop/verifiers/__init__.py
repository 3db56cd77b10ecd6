"""Verifier registry: a new verifier is one module plus one line here, or a plugin.

A plugin's entry point in the group `veriloop.verifiers` may give a plain check function
`check(row, answer)` (see veriloop.checks: it becomes a `FunctionCheck` named after the
entry point), a Verifier class, a function of no arguments returning a verifier, or a
verifier object. A verifier states its own facts (model calls per verification, whether
it takes a threshold, whether it is sound) as `BaseVerifier` class attributes, so a
plugin's verifier is one entry here like a built-in: a name with `@T` (`selfcheck@0.8`)
sets the threshold of any verifier that says it takes one (`thresholded()`; THRESHOLDED
is the same names, read when asked for).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..checks import FunctionCheck
from ..errors import VeriloopError
from ..registry import Registry
from .base import BaseVerifier, ChecksDomain, Facts, Verifier, facts
from .code import GeneratedTests, HiddenTests, VisibleTests
from .critic import CriticVerifier
from .llm_judge import LLMJudge
from .selfcheck import SelfCheckVerifier
from .sound import SoundVerifier

VerifierFactory = Callable[..., Verifier]


def _is_verifier(obj: object) -> bool:
    return hasattr(obj, "verify") and hasattr(obj, "name")


def _required_positionals(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: taken for a factory
        return 0
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in positional and p.default is inspect.Parameter.empty)


def _verifier_factory(name: str, given: Any) -> VerifierFactory:
    """What a plugin gives, as a factory of verifiers."""
    if _is_verifier(given) and not isinstance(given, type):
        return lambda: given
    if isinstance(given, type) or (callable(given) and _required_positionals(given) == 0):
        def built(**options: Any) -> Verifier:
            verifier = given(**options)
            if not _is_verifier(verifier):
                raise VeriloopError(
                    f"verifier {name!r} built a {type(verifier).__name__}, which has no verify() and name"
                )
            made: Verifier = verifier
            return made
        return built
    if callable(given):  # check(row, answer): the API's plain check function
        return lambda: FunctionCheck(given, name=name)
    raise TypeError(
        f"it gives a {type(given).__name__}; give a check function check(row, answer), a Verifier class, "
        "a function returning a verifier, or a verifier object"
    )


VERIFIERS: Registry[VerifierFactory] = Registry("verifier", "veriloop.verifiers", adapt=_verifier_factory)
"""The verifiers by name: each name maps to a factory that builds the verifier.

It holds the built-in verifiers ("sound" runs the domain's own check, "llm" asks the
model to judge, ...) and those of installed plugins (entry points in the group
`veriloop.verifiers`). `veriloop.verifier(name)` builds one from its name, with a
threshold for those that take one (`selfcheck@0.8`).

Examples:
    ```python
    from veriloop import VERIFIERS

    print(list(VERIFIERS))  # sound, llm, llm-cot, critic, ...
    judge = VERIFIERS["llm-cot"]()
    assert judge.name == "llm-cot"
    print(VERIFIERS.source("llm"))  # veriloop: a built-in
    ```
"""
VERIFIERS.register("sound", SoundVerifier)
VERIFIERS.register("llm", LLMJudge)
VERIFIERS.register("llm-cot", lambda: LLMJudge(cot=True))
VERIFIERS.register("critic", CriticVerifier)
VERIFIERS.register("critic-notool", lambda: CriticVerifier(use_tools=False))
VERIFIERS.register("selfcheck", SelfCheckVerifier)
VERIFIERS.register("global-check", lambda **kw: SelfCheckVerifier(checker="global", **kw))
# Code: tests run in the sandbox (a domain with the CodeTask capability: humaneval).
VERIFIERS.register("visible", VisibleTests)  # the docstring's examples: sound for what it checks, incomplete
VERIFIERS.register("hidden", HiddenTests)  # the problem's full tests: the ground truth, an oracle
VERIFIERS.register("generated", GeneratedTests)  # tests the model writes: executable, unsound


def thresholded() -> tuple[str, ...]:
    """The registered verifiers (plugins' too) whose threshold a name may set
    (`selfcheck@0.8`): those whose verifier says it takes one."""
    names = []
    for name in VERIFIERS:
        try:
            verifier = VERIFIERS[name]()
        except Exception:  # noqa: BLE001 - a plugin that cannot be built is reported when used, not in a listing
            continue
        if facts(verifier).takes_threshold:
            names.append(name)
    return tuple(names)


def __getattr__(name: str) -> tuple[str, ...]:
    # THRESHOLDED is computed when read, so a plugin's verifier counts as soon as it is installed.
    if name == "THRESHOLDED":
        return thresholded()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_verifier(name: str | Verifier) -> Verifier:
    """The verifier a name stands for.

    A name may end in `@T` to set the threshold of a verifier that accepts above a
    confidence (`selfcheck@0.8`; see `thresholded`).

    Args:
        name: A verifier name from `veriloop.VERIFIERS`, or a verifier object, which is
            returned as it is.

    Returns:
        The verifier, newly built.

    Raises:
        VeriloopError: When the name is unknown, when it sets a threshold on a verifier
            that takes none, or when the threshold is not a number between 0 and 1.

    Examples:
        ```python
        import veriloop

        judge = veriloop.verifier("llm")
        assert judge.name == "llm"
        selfcheck = veriloop.verifier("selfcheck@0.8")
        assert (selfcheck.name, selfcheck.threshold) == ("selfcheck", 0.8)
        assert veriloop.verifier(judge) is judge
        ```
    """
    if not isinstance(name, str):
        return name
    base, at, threshold = name.partition("@")
    factory = VERIFIERS.lookup(base, shown=name)
    verifier = factory()
    if not at:
        return verifier
    if not facts(verifier).takes_threshold:
        raise VeriloopError(f"verifier {base!r} takes no threshold (only {', '.join(thresholded())} do: selfcheck@0.8)")
    try:
        value = float(threshold)
        return factory(threshold=value)
    except ValueError:
        raise VeriloopError(f"the threshold in {name!r} must be a number between 0 and 1") from None


__all__ = [
    "THRESHOLDED", "VERIFIERS", "BaseVerifier", "ChecksDomain", "Facts", "Verifier", "VerifierFactory", "facts",
    "get_verifier", "thresholded",
]
