"""Tool registry: a new tool is one module plus one line here.

Each entry builds a tool from keyword options (e.g. search's corpus path); modules are
imported lazily so the toxicity classifier or BM25 load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import VeriloopError
from .base import Observation, Tool, Toolbox, ToolCache, failed

TOOLS: dict[str, str] = {
    "python": "veriloop.tools.sandbox:PythonTool",
    "calculator": "veriloop.tools.calculator:Calculator",
    "search": "veriloop.tools.search:make_search_tool",
    "toxicity": "veriloop.tools.toxicity:make_toxicity_tool",
}


def get_tool(name: str, **options: Any) -> Tool:
    if name not in TOOLS:
        raise VeriloopError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
    module_name, factory = TOOLS[name].split(":")
    return getattr(importlib.import_module(module_name), factory)(**options)


__all__ = ["TOOLS", "Observation", "Tool", "ToolCache", "Toolbox", "failed", "get_tool"]
