"""Strategy registry and the spec notation used on the command line.

A spec is `NAME` or `NAME:key=value,key=value`, e.g. `backprompt:verifier=llm,feedback=llm`.
Several specs are separated by `;` or given as repeated --strategy options.

A new strategy is one module plus one line here, or a plugin: an entry point in the group
`veriloop.strategies` that gives a Strategy subclass whose `kind` is the entry point's name.
"""

from __future__ import annotations

from typing import Any

from ..errors import VeriloopError
from ..registry import Registry
from .backprompt import Backprompt
from .base import Strategy
from .best_of_n import BestOfN
from .cascade import Cascade
from .critic import Critic, React, RejectionSampling
from .sampling import Sampling
from .self_consistency import SelfConsistency
from .selfcheck import SelfCheck
from .standard import Standard


def _strategy_class(name: str, given: Any) -> type[Strategy]:
    """A plugin's strategy: a Strategy subclass named by its kind (its records' key)."""
    if not (isinstance(given, type) and issubclass(given, Strategy)):
        raise TypeError(f"it gives {given!r}; give a subclass of veriloop.Strategy")
    if given.kind != name:
        raise TypeError(f"its class {given.__name__} has kind {given.kind!r}; name the entry point {given.kind!r}")
    return given


STRATEGIES: Registry[type[Strategy]] = Registry("strategy", "veriloop.strategies", adapt=_strategy_class)
"""The strategies by name: each name maps to its Strategy class.

It holds the built-in strategies and those of installed plugins (entry points in the
group `veriloop.strategies`, each a Strategy subclass whose `kind` is the entry point's
name). `veriloop.strategy(spec)` builds a strategy from its name and options.

Examples:
    ```python
    from veriloop import STRATEGIES

    print(list(STRATEGIES))  # standard, backprompt, sampling, ...
    backprompt = STRATEGIES["backprompt"]
    print(backprompt.summary)
    assert backprompt(max_rounds=3).canonical.startswith("backprompt:")
    ```
"""
for _cls in (Standard, Backprompt, Sampling, SelfConsistency, Critic, React, RejectionSampling, SelfCheck, BestOfN,
             Cascade):
    STRATEGIES.register(_cls.kind, _cls)


def parse_strategy(spec: str | Strategy, defaults: dict[str, object] | None = None) -> Strategy:
    """Build a strategy from its spec.

    A spec is `NAME` or `NAME:key=value,key=value` (e.g. `backprompt:max_rounds=3`), as
    on the command line; a dash in a key is read as an underscore.

    Args:
        spec: The spec, or a Strategy object, which is returned as it is.
        defaults: Option values (e.g. from --max-rounds, --k) for the options that the
            strategy has and the spec leaves unset; None values are ignored.

    Returns:
        The strategy.

    Raises:
        VeriloopError: When the name is unknown, an option is not written as key=value,
            or an option is unknown or has a wrong value.

    Examples:
        ```python
        import veriloop

        backprompt = veriloop.strategy("backprompt:max_rounds=3,feedback=all")
        print(backprompt.canonical)  # backprompt:feedback=all,max_rounds=3,temperature=0,verifier=sound
        sampling = veriloop.strategy("sampling", {"k": 4, "max_rounds": 9})  # sampling has k, not max_rounds
        assert (sampling.kind, sampling.k) == ("sampling", 4)
        assert veriloop.strategy(sampling) is sampling
        ```
    """
    if isinstance(spec, Strategy):
        return spec
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    cls = STRATEGIES.lookup(name)
    options: dict[str, object] = {
        k: v for k, v in (defaults or {}).items() if k in cls.model_fields and v is not None
    }
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise VeriloopError(f"strategy option {item!r} in {spec!r} should look like key=value")
        options[key.strip().replace("-", "_")] = value.strip()
    try:
        return cls(**options)
    except VeriloopError as exc:
        raise VeriloopError(f"bad strategy {spec!r}: {exc}") from None


def split_specs(values: list[str]) -> list[str]:
    return [s.strip() for v in values for s in v.split(";") if s.strip()]


__all__ = ["STRATEGIES", "Strategy", "parse_strategy", "split_specs"]
