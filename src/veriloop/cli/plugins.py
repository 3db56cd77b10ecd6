"""`veriloop plugins`: every name of every registry and where it comes from."""

from __future__ import annotations

from typing import Any

from ..errors import VeriloopError
from .common import out


def registries() -> list[tuple[str, Any]]:
    """(title, registry) of every registry, in the order a user meets them."""
    from ..audits import FAMILIES
    from ..domains import DOMAINS
    from ..experiment.executor import EXECUTORS
    from ..experiment.reports import REPORTS
    from ..feedback import LEVELS
    from ..models.packs import PACKS
    from ..strategies import STRATEGIES
    from ..tools import TOOLS
    from ..verifiers import VERIFIERS

    return [("domains", DOMAINS), ("verifiers", VERIFIERS), ("strategies", STRATEGIES), ("tools", TOOLS),
            ("feedback levels", LEVELS), ("reports", REPORTS), ("model packs", PACKS), ("executors", EXECUTORS),
            ("exploit families", FAMILIES)]


def plugins() -> None:
    """List every domain, verifier, strategy, tool, feedback level, report, model pack,
    executor and exploit family with where it comes from: veriloop itself, or the installed
    package (plugin) that adds it.

    A plugin is a Python package that declares entry points in the groups
    veriloop.domains, veriloop.verifiers, veriloop.strategies, veriloop.tools,
    veriloop.providers, veriloop.executors or veriloop.families; once it is installed (pip
    install), `veriloop run --domain NAME`, every verifier=NAME option, --executor NAME and
    `veriloop audit --family NAME` find its names. Each plugin's entry is loaded here, so one that fails to load
    is shown with its error; a plugin name that clashes with one already taken is listed
    as ignored. A built-in that needs an extra that is not installed is marked
    "(needs veriloop[EXTRA])". The guide: docs/guides/plugins.md.
    """
    from ..registry import BUILTIN

    broken = 0
    for title, registry in registries():
        group = f" (plugins: entry points in {registry.group})" if registry.group else " (built in only)"
        out.print(f"{title}{group}", highlight=False, markup=False)
        names = list(registry)
        # A built-in whose extra is missing: "blocksworld (needs veriloop[planning])".
        shown = {name: registry.shown(name) for name in names}
        width = max(len(text) for text in shown.values()) if names else 0
        for name in names:
            source = registry.source(name)
            line = f"  {shown[name].ljust(width)}  {source}"
            if source != BUILTIN:
                try:
                    registry[name]
                except VeriloopError as exc:
                    broken += 1
                    line += f"  BROKEN: {exc}"
            out.print(line, highlight=False, markup=False)
        for problem in registry.problems:
            out.print(f"  ignored: {problem}", highlight=False, markup=False)
    if broken:
        raise VeriloopError(f"{broken} plugin entr{'y' if broken == 1 else 'ies'} failed to load (listed above)")
