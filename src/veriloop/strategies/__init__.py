"""Strategy registry and the spec notation used on the command line.

A spec is `NAME` or `NAME:key=value,key=value`, e.g. `backprompt:verifier=llm,feedback=llm`.
Several specs are separated by `;` or given as repeated --strategy options.
"""

from __future__ import annotations

from ..errors import VeriloopError
from .backprompt import Backprompt
from .base import Strategy
from .best_of_n import BestOfN
from .critic import Critic, React, RejectionSampling
from .sampling import Sampling
from .self_consistency import SelfConsistency
from .selfcheck import SelfCheck
from .standard import Standard

STRATEGIES: dict[str, type[Strategy]] = {
    cls.kind: cls for cls in (Standard, Backprompt, Sampling, SelfConsistency, Critic, React, RejectionSampling, SelfCheck, BestOfN)
}


def parse_strategy(spec: str | Strategy, defaults: dict[str, object] | None = None) -> Strategy:
    """Build a strategy from its spec. `defaults` (from --max-rounds, --k) fill options the
    strategy has and the spec leaves unset. A Strategy object is returned as it is."""
    if isinstance(spec, Strategy):
        return spec
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if name not in STRATEGIES:
        raise VeriloopError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}")
    cls = STRATEGIES[name]
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
