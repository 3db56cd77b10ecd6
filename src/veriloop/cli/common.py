"""What the commands share: the consoles, option definitions, the progress display, the
model options as one value, and the one way a command runs a job on a model."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console

from ..errors import VeriloopError
from ..models.packs import DEFAULT_MODEL
from ..progress import ProgressReporter, err

if TYPE_CHECKING:
    from ..models.base import Model
    from ..tools.config import ToolSettings

T = TypeVar("T")

# Piped output (CI logs, `| tee`) would otherwise be cut to 80 columns and fold the table.
out = Console() if sys.stdout.isatty() else Console(width=160)

__all__ = [
    "DEFAULT_MODEL", "SEARCH_URL_HELP", "ModelChoice", "Opt", "ProgressReporter", "Session", "err", "out",
    "run_on_model", "slug", "tool_settings",
]

SEARCH_URL_HELP = (
    "A search engine API for the search tool instead, e.g. a SearxNG instance (or VERILOOP_SEARCH_URL). "
    "Off unless given."
)


class Opt:
    """Options several commands take, declared once. A default stays at the parameter
    (typer reads it there): `model: Opt.Model = DEFAULT_MODEL`, `base_url: Opt.BaseUrl = None`."""

    Model = Annotated[
        str, typer.Option(help="Model id: a pack name, llamacpp/<pack or .gguf path>, a .gguf path, or openai/<model>.")
    ]
    BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible server URL (or VERILOOP_BASE_URL).")]
    ApiKey = Annotated[str | None, typer.Option(help="API key (or VERILOOP_API_KEY / OPENAI_API_KEY); never recorded.")]
    Cache = Annotated[Path | None, typer.Option(help="Call cache file (default: $VERILOOP_HOME/calls.sqlite).")]
    Out = Annotated[Path | None, typer.Option("--out", help="Output directory (resumable).")]
    Seed = Annotated[int, typer.Option(help="Base seed.")]
    SearchCorpus = Annotated[Path | None, typer.Option(
        help="Documents for the search tool: a JSONL file of {title, text} or a folder of .txt files "
        "(hotpotqa: default the data file's paragraphs)."
    )]
    SearchUrl = Annotated[str | None, typer.Option(help=SEARCH_URL_HELP)]
    Toxicity = Annotated[str, typer.Option(
        help="Toxicity scorer: offline (a classifier shipped in a PyPI package) or perspective "
        "(needs PERSPECTIVE_API_KEY)."
    )]
    Unisolated = Annotated[bool, typer.Option(
        help="Let the python tool run code without a network namespace when the platform cannot make one (unsafe)."
    )]


def slug(text: str) -> str:
    """A model id as a piece of a directory name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(text).name if text.endswith(".gguf") else text.split("/")[-1])


def tool_settings(
    search_corpus: Path | None, search_url: str | None, toxicity_backend: str, allow_unisolated: bool,
    names: list[str] | None = None,
) -> ToolSettings:
    """The tool options as settings, the backend name checked."""
    from ..tools.config import ALL_TOOLS, ToolSettings

    if toxicity_backend not in ("offline", "perspective"):
        raise VeriloopError(f"unknown toxicity backend {toxicity_backend!r}; choose offline or perspective")
    return ToolSettings(
        names=tuple(names or ALL_TOOLS), search_corpus=search_corpus, search_url=search_url,
        toxicity_backend=toxicity_backend, allow_unisolated=allow_unisolated,
    )


@dataclass(frozen=True)
class ModelChoice:
    """The model options of a command (--model, --base-url, --api-key, --cache, --no-cache)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    cache: Path | None = None
    use_cache: bool = True

    def load(self) -> Model:
        from ..models import load_model

        return load_model(
            self.model, base_url=self.base_url, api_key=self.api_key, cache_path=self.cache, use_cache=self.use_cache
        )


@dataclass
class Session:
    """What a job run by `run_on_model` gets: the loaded model and the progress display."""

    model: Model
    progress: ProgressReporter

    def backend_calls(self) -> int:
        """Calls that reached the backend (the cache answered the others); 0 without a cache."""
        from ..models import CachedModel

        return self.model.stats.backend_calls if isinstance(self.model, CachedModel) else 0


def run_on_model(
    choice: ModelChoice, job: Callable[[Session], Awaitable[T]], *, progress: str | None = None,
    kept_in: Path | None = None,
) -> tuple[T, int]:
    """Load the model, run `job` on it (with a progress display named `progress`, if
    given), close the model, and return the job's result with the number of backend
    calls. Ctrl-C exits with status 130, saying where finished work is kept (`kept_in`)."""
    lm = choice.load()
    session = Session(lm, ProgressReporter(progress or ""))

    async def go() -> T:
        try:
            with session.progress if progress else nullcontext():
                return await job(session)
        finally:
            await lm.aclose()

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        if kept_in is not None:
            err.print(f"interrupted: finished work is kept in {kept_in}; run the same command again to resume")
        raise typer.Exit(130) from None
    return result, session.backend_calls()
