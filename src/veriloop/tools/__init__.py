"""Tool registry: a new tool is one module plus one line here, or a plugin.

Each entry builds a tool from keyword options (e.g. search's corpus path); modules are
imported lazily so the toxicity classifier or BM25 load only when used. A plugin's entry
point in the group `veriloop.tools` gives such a factory: a Tool class or a function of
keyword options returning a tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry import Registry
from .base import Observation, Tool, Toolbox, ToolCache, failed


def _tool_factory(name: str, given: Any) -> Callable[..., Tool]:
    if not callable(given):
        raise TypeError(f"it gives a {type(given).__name__}; give a Tool class or a function returning a tool")
    factory: Callable[..., Tool] = given
    return factory


TOOLS: Registry[Callable[..., Tool]] = Registry("tool", "veriloop.tools", adapt=_tool_factory)
TOOLS.register("python", "veriloop.tools.sandbox:PythonTool")
TOOLS.register("calculator", "veriloop.tools.calculator:Calculator")
TOOLS.register("search", "veriloop.tools.search:make_search_tool", extra="critic")
TOOLS.register("toxicity", "veriloop.tools.toxicity:make_toxicity_tool", extra="critic")


def get_tool(name: str, **options: Any) -> Tool:
    return TOOLS.lookup(name)(**options)


__all__ = ["TOOLS", "Observation", "Tool", "ToolCache", "Toolbox", "failed", "get_tool"]
