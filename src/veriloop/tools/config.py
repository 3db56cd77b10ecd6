"""Which tools a run gets, built from the command line's options and the domain.

A domain that brings its own search corpus (HotpotQA: every context paragraph of the
data file) has the `SearchTask` capability, `search_corpus(source)`; a user corpus or a search engine URL given on
the command line takes precedence. Results of deterministic tools are cached next to
the call cache, so a re-run replays the same observations.

Tools sit below domains (a domain may use a tool; no tool knows a domain), so what this
module asks of a domain is declared here, as the capabilities `SearchTask` and
`ToolUser` (`domains.base` lists them among a domain's capabilities); a domain without
them asks for nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..paths import home
from . import get_tool
from .base import Tool, Toolbox, ToolCache

ALL_TOOLS = ("python", "calculator", "search", "toxicity")


@dataclass
class ToolSettings:
    names: tuple[str, ...] = ALL_TOOLS
    search_corpus: Path | None = None
    search_url: str | None = None
    toxicity_backend: str = "offline"
    allow_unisolated: bool = False
    cache_path: Path | None = None
    use_cache: bool = True


@runtime_checkable
class SearchTask(Protocol):
    """A domain that brings the search tool's corpus with its data (HotpotQA's paragraphs)."""

    def search_corpus(self, source: str) -> Path | None:
        """The search corpus that goes with the data file `source`, or None."""
        ...


@runtime_checkable
class ToolUser(Protocol):
    """A domain whose ground truth is a tool (toxicity scores with the run's toxicity tool)."""

    def use_tools(self, toolbox: Toolbox) -> None:
        """Take the run's tools (a domain whose ground truth is a tool scores with them)."""
        ...


def tool_cache_path() -> Path:
    return home() / "tools.sqlite"


def build_tools(settings: ToolSettings, domain: object | None = None, data_source: str | None = None) -> list[Tool]:
    corpus = settings.search_corpus
    if corpus is None and data_source and isinstance(domain, SearchTask):
        corpus = domain.search_corpus(data_source)
    url = settings.search_url or os.environ.get("VERILOOP_SEARCH_URL")
    tools: list[Tool] = []
    for name in settings.names:
        if name == "search":
            if corpus is None and not url:
                continue  # nothing to search; the model is told which tools exist
            tools.append(get_tool("search", corpus=corpus, url=None if corpus else url))
        elif name == "python":
            tools.append(get_tool("python", allow_unisolated=settings.allow_unisolated))
        elif name == "toxicity":
            tools.append(get_tool("toxicity", backend=settings.toxicity_backend))
        else:
            tools.append(get_tool(name))
    return tools


def build_toolbox(settings: ToolSettings, domain: object | None = None, data_source: str | None = None) -> Toolbox:
    cache = ToolCache(settings.cache_path or tool_cache_path()) if settings.use_cache else None
    box = Toolbox(build_tools(settings, domain, data_source), cache=cache)
    # A domain whose ground truth is a tool (toxicity) scores with this run's instance of it.
    if isinstance(domain, ToolUser):
        domain.use_tools(box)
    return box
