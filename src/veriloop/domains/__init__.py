"""Domain registry: a new domain is one module plus one line here."""

from __future__ import annotations

import importlib

from ..errors import VeriloopError
from .base import Candidate, CriticTask, Domain, Instance, Message, SupportsStudies, Verdict, VerdictError

# name -> "module:factory"; imported lazily so one domain's dependencies never slow another.
DOMAINS: dict[str, str] = {
    "game24": "veriloop.domains.game24:Game24",
    "blocksworld": "veriloop.domains.planning:Blocksworld",
    "mystery_blocksworld": "veriloop.domains.planning:MysteryBlocksworld",
    "coloring": "veriloop.domains.coloring:Coloring",
    # Any STRIPS domain from its PDDL files, plans in PDDL syntax (no template needed).
    "planning": "veriloop.domains.planning:PlanningDomain",
    # CRITIC and SelfCheck tasks.
    "gsm8k": "veriloop.domains.math:GSM8K",
    "math500": "veriloop.domains.math:Math500",
    "svamp": "veriloop.domains.math:SVAMP",
    # Step-by-step solutions ("Step 1: ..." lines, then "Answer: ..."), as SelfCheck checks them.
    "gsm8k-cot": "veriloop.domains.stepwise:GSM8KSteps",
    "math500-cot": "veriloop.domains.stepwise:Math500Steps",
    "mathqa": "veriloop.domains.stepwise:MathQA",
    "hotpotqa": "veriloop.domains.qa:HotpotQA",
    "toxicity": "veriloop.domains.toxicity:Toxicity",
}


def get_domain(name: str | Domain, **options: object) -> Domain:
    """The domain called `name`, built with `options` (e.g. toxicity's all_prompts=True).
    A domain object (a `veriloop.Task`, your own class) is returned as it is."""
    if not isinstance(name, str):
        if options:
            raise VeriloopError(f"options {sorted(options)} are for a domain built by name, not for a domain object")
        return name
    if name not in DOMAINS and name.isidentifier():
        from .planning import TEMPLATES, PlanningDomain

        # A template dropped into planning/templates/ is a domain of that name.
        if (TEMPLATES / f"{name}.toml").is_file():
            return PlanningDomain(TEMPLATES / f"{name}.toml")
    if name not in DOMAINS:
        known = ", ".join(sorted(DOMAINS))
        raise VeriloopError(f"unknown domain {name!r}; choose one of: {known}")
    module_name, factory = DOMAINS[name].split(":")
    try:
        return getattr(importlib.import_module(module_name), factory)(**options)
    except TypeError as exc:
        if not options:
            raise
        raise VeriloopError(f"domain {name!r} does not take the options {sorted(options)} ({exc})") from None


__all__ = ["DOMAINS", "Candidate", "CriticTask", "Domain", "Instance", "Message", "SupportsStudies", "Verdict", "VerdictError", "get_domain"]
