"""Domain registry: a new domain is one module plus one line here, or a plugin.

A plugin's entry point in the group `veriloop.domains` may give a Domain class, a
function of keyword options returning a domain (a `veriloop.Task` made from plain records
is one), or a domain object; `get_domain` calls it with the `--domain-option`s and
checks that what it built is a domain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import VeriloopError
from ..extras import require
from ..registry import BUILTIN, Registry, one_line
from .base import (
    BaseDomain,
    Candidate,
    CriticTask,
    Domain,
    Instance,
    Message,
    SupportsStudies,
    Verdict,
    VerdictError,
)

DomainFactory = Callable[..., Domain]


def _domain_factory(name: str, given: Any) -> DomainFactory:
    """What a plugin gives, as a factory of keyword options."""
    if isinstance(given, type) or (callable(given) and not isinstance(given, Domain)):
        factory: DomainFactory = given
        return factory
    if isinstance(given, Domain):
        def the_object(**options: object) -> Domain:
            if options:
                raise TypeError("a domain object takes no options")
            domain: Domain = given
            return domain
        return the_object
    raise TypeError(
        f"it gives a {type(given).__name__}; give a Domain class, a function returning a domain "
        "(e.g. a veriloop.Task), or a domain object"
    )


# name -> "module:factory"; imported lazily so one domain's dependencies never slow another.
DOMAINS: Registry[DomainFactory] = Registry("domain", "veriloop.domains", adapt=_domain_factory)
"""The domains by name: each name maps to a factory that builds the domain from keyword
options (a Domain class, for the built-in ones).

It holds the built-in domains, each imported only when its name is first used, and
those of installed plugins (entry points in the group `veriloop.domains`).
`veriloop.domain(name, **options)` builds one and checks what a plugin built.

Examples:
    ```python
    from veriloop import DOMAINS

    print(list(DOMAINS))  # game24, blocksworld, ..., humaneval
    assert "game24" in DOMAINS and DOMAINS.source("game24") == "veriloop"
    game24 = DOMAINS["game24"]()
    print(game24.description)
    ```
"""
DOMAINS.register("game24", "veriloop.domains.game24:Game24")
DOMAINS.register("blocksworld", "veriloop.domains.planning:Blocksworld", extra="planning")
DOMAINS.register("mystery_blocksworld", "veriloop.domains.planning:MysteryBlocksworld", extra="planning")
DOMAINS.register("coloring", "veriloop.domains.coloring:Coloring", extra="planning")
# Any STRIPS domain from its PDDL files, plans in PDDL syntax (no template needed).
DOMAINS.register("planning", "veriloop.domains.planning:PlanningDomain", extra="planning")
# CRITIC and SelfCheck tasks.
DOMAINS.register("gsm8k", "veriloop.domains.math:GSM8K")
DOMAINS.register("math500", "veriloop.domains.math:Math500")
DOMAINS.register("svamp", "veriloop.domains.math:SVAMP")
# Step-by-step solutions ("Step 1: ..." lines, then "Answer: ..."), as SelfCheck checks them.
DOMAINS.register("gsm8k-cot", "veriloop.domains.stepwise:GSM8KSteps")
DOMAINS.register("math500-cot", "veriloop.domains.stepwise:Math500Steps")
DOMAINS.register("mathqa", "veriloop.domains.stepwise:MathQA")
DOMAINS.register("hotpotqa", "veriloop.domains.qa:HotpotQA")
DOMAINS.register("toxicity", "veriloop.domains.toxicity:Toxicity", extra="critic")
# Code: a function from its docstring, checked by its tests in the sandbox.
DOMAINS.register("humaneval", "veriloop.domains.humaneval:HumanEval")
DOMAINS.register("humaneval-impossible", "veriloop.domains.humaneval.impossible:HumanEvalImpossible")


def get_domain(name: str | Domain, **options: object) -> Domain:
    """The domain called `name`, built with `options`.

    A name that is not registered but names a template in the planning domain's
    templates folder builds a planning domain from it. A plugin's failure to build is
    reported as one line naming the plugin; a built-in domain's own errors pass as they are.

    Args:
        name: A name from `veriloop.DOMAINS`, or a domain object (a `veriloop.Task`, your
            own class), which is returned as it is.

    Keyword Args:
        **options: Keyword options of the domain (e.g. toxicity's all_prompts=True); none
            for a domain object.

    Returns:
        The domain.

    Raises:
        VeriloopError: When the name is unknown, the domain does not take the options,
            options are given with a domain object, or a plugin fails to build its domain
            or builds something that is not a domain.

    Examples:
        ```python
        import veriloop

        coloring = veriloop.domain("coloring", vertices=5, seed=1)
        (instance,) = coloring.load_instances(None, n=1)
        print(coloring.name, instance.id, instance.data["n"])
        task = veriloop.Task.from_records([{"q": "2+2"}], prompt="Compute {q}.")
        assert veriloop.domain(task) is task
        ```
    """
    if not isinstance(name, str):
        if options:
            raise VeriloopError(f"options {sorted(options)} are for a domain built by name, not for a domain object")
        return name
    if name not in DOMAINS and name.isidentifier():
        from .planning import TEMPLATES, PlanningDomain

        # A template dropped into planning/templates/ is a domain of that name.
        if (TEMPLATES / f"{name}.toml").is_file():
            require("planning", f"the domain {name!r}")
            return PlanningDomain(TEMPLATES / f"{name}.toml")
    factory = DOMAINS.lookup(name)
    source = DOMAINS.source(name)
    try:
        domain = factory(**options)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001  # a plugin's SystemExit is its failure too, not veriloop's exit
        if options and isinstance(exc, TypeError):
            raise VeriloopError(f"domain {name!r} does not take the options {sorted(options)} ({exc})") from None
        if source == BUILTIN or isinstance(exc, VeriloopError):
            raise
        # A plugin's bug is its own: one line naming it, not a traceback through veriloop.
        raise VeriloopError(
            f"domain {name!r} from the plugin {source} failed to build: {type(exc).__name__}: {one_line(exc)}"
        ) from None
    if source != BUILTIN and not isinstance(domain, Domain):
        raise VeriloopError(
            f"domain {name!r} from the plugin {source} built an object of type {type(domain).__name__}, not a "
            "domain: give a "
            "veriloop.Task, a subclass of veriloop.domains.base.BaseDomain, or one of its instances"
        )
    return domain


__all__ = [
    "DOMAINS", "BaseDomain", "Candidate", "CriticTask", "Domain", "DomainFactory", "Instance", "Message", "SupportsStudies", "Verdict",
    "VerdictError", "get_domain",
]
