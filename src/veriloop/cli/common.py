"""What the commands share: the consoles, option definitions, the progress display, the
model options as one value, and the one way a command runs a job on a model."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from ..errors import VeriloopError
from ..models.packs import DEFAULT_MODEL
from ..models.settings import ModelSettings
from ..progress import ProgressReporter, err

if TYPE_CHECKING:
    from ..models.base import Model
    from ..tools.config import ToolSettings

T = TypeVar("T")


def _stdout_width() -> int | None:
    """COLUMNS when it is set to a width, else the terminal's own (None). Piped output
    (CI logs, `| tee`) would otherwise be laid out for rich's 80 columns; it gets 160."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if sys.stdout.isatty() else 160


out = Console(width=_stdout_width())

__all__ = [
    "DEFAULT_MODEL", "SEARCH_URL_HELP", "ModelChoice", "Opt", "ProgressReporter", "Session", "err", "out",
    "run_on_model", "slug", "tool_settings", "view_hint",
]


def view_hint(directory: Path) -> str:
    """The command that shows what a run or an experiment wrote, ready to paste."""
    return f"see every trajectory: veriloop view {shlex.quote(str(directory))}"


SEARCH_URL_HELP = (
    "A search engine API for the search tool instead, e.g. a SearxNG instance (or VERILOOP_SEARCH_URL). "
    "Off unless given."
)


class Opt:
    """Options several commands take, declared once. A default stays at the parameter
    (typer reads it there): `model: Opt.Model = DEFAULT_MODEL`, `base_url: Opt.BaseUrl = None`."""

    Model = Annotated[
        str, typer.Option(help="Model id: a pack name, llamacpp/<pack or .gguf path>, a .gguf path, or a model behind "
                          "an API: openai/<model> (OpenAI or any compatible server), anthropic/<model>, "
                          "google/<model>, vllm/<model>, ollama/<model>.")
    ]
    BaseUrl = Annotated[str | None, typer.Option(help=(
        "The API's URL (or VERILOOP_BASE_URL, else the provider's own variable, e.g. OPENAI_BASE_URL, OLLAMA_HOST; "
        "default: the provider's public endpoint)."))]
    ApiKey = Annotated[str | None, typer.Option(help=(
        "API key (or VERILOOP_API_KEY, else the provider's own variable: OPENAI_API_KEY, ANTHROPIC_API_KEY, "
        "GEMINI_API_KEY, ...); never recorded."))]
    ReasoningEffort = Annotated[str | None, typer.Option(
        metavar="minimal|low|medium|high",
        help="For a reasoning model behind an API: how hard it thinks (OpenAI's reasoning_effort, Anthropic's and "
        "Gemini's thinking budget, Ollama's think). Another effort is another model to the call cache.",
    )]

    Deployment = Annotated[str | None, typer.Option(
        metavar="NAME",
        help="With --base-url: a name for the server deployment, keying the call cache instead of the URL. Cached "
        "answers are shared by servers only when they give the same name (e.g. two URLs of one vLLM deployment); "
        "without it, each normalised base URL has its own.",
    )]
    RetryBudget = Annotated[float | None, typer.Option(
        metavar="SECONDS", min=0,
        help="With --base-url: how long one request keeps being retried through server faults (resets, 429, 5xx, "
        "invalid JSON) before the run stops (default: 120).",
    )]
    StallTimeout = Annotated[float | None, typer.Option(
        metavar="SECONDS", min=0.001,
        help="With --base-url: abandon an attempt (and retry it within the retry budget) after this long without a "
        "byte from the server; a reply is not streamed, so a slow server needs the time of a whole reply (default: 60).",
    )]
    AttemptTimeout = Annotated[float | None, typer.Option(
        metavar="SECONDS", min=0.001,
        help="With --base-url: the longest one attempt may take, reply read, before it is retried (default: 600).",
    )]
    MaxReplyBytes = Annotated[int | None, typer.Option(
        metavar="BYTES", min=1,
        help="With --base-url: a larger reply is abandoned as a fault and retried (default: 8388608, 8 MiB).",
    )]
    Cache = Annotated[Path | None, typer.Option(help="Call cache file (default: $VERILOOP_HOME/calls.sqlite).")]
    Batch = Annotated[bool, typer.Option(
        "--batch",
        help="Send the calls through the provider's batch API (openai/, anthropic/: half the price, answers within "
        "24 h): the calls the run can make now go as one batch, recorded in --out; run the same command again to "
        "collect it and send the next round's.")]
    BatchPollSeconds = Annotated[float | None, typer.Option(
        metavar="SECONDS", min=0.001,
        help="With --batch: seconds between two looks at a submitted batch; the progress line shows its id and "
        "state at each change (default: 30).",
    )]
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
    Executor = Annotated[str, typer.Option(
        metavar="local|ray|NAME",
        help="Where trajectories run: local (this process), ray (shards of instances on a Ray cluster's "
        "workers, one per model per node; this process alone writes the records and the call cache, so either "
        "executor resumes the other's run; needs the extra veriloop[ray]) or an installed plugin's executor "
        "(veriloop plugins).",
    )]
    Address = Annotated[str | None, typer.Option(
        metavar="auto|HOST:PORT|ray://HOST:PORT",
        help="With --executor ray: the cluster to join (auto: the one `ray start` runs on this machine; HOST:PORT: "
        "its head's address; ray://HOST:PORT: a remote head's client port). Default: start a local cluster on this "
        "machine's CPUs for this run.",
    )]
    ShardSize = Annotated[int | None, typer.Option(
        metavar="N", min=1,
        help="With --executor ray: instances per shard, the unit a worker takes and a lost worker gives back "
        "(default: the concurrency).",
    )]
    # Text, checked by ModelChoice when the model loads.
    Threads = Annotated[str | None, typer.Option(
        metavar="N", help="Threads of a local (llama.cpp) model (or VERILOOP_THREADS; default: the CPU count)."
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


class ModelChoice:
    """The model options of a command as typed: the model's settings (--model, --base-url,
    --threads, --deployment, --retry-budget, --stall-timeout, --attempt-timeout,
    --max-reply-bytes, --reasoning-effort, --batch, --batch-poll-seconds, and --concurrency
    where there is one: `settings`, a ModelSettings), and beside them what is not a
    setting: --api-key, --cache and --no-cache."""

    def __init__(
        self, model: str, base_url: str | None = None, api_key: str | None = None, cache: Path | None = None, *,
        use_cache: bool = True, threads: str | None = None, **settings: Any,
    ) -> None:
        self.api_key, self.cache, self.use_cache = api_key, cache, use_cache
        # --threads stays text until the model loads: a bad number is then one line naming
        # --threads, as a bad VERILOOP_THREADS names the variable.
        self.threads = threads
        self.settings = ModelSettings.of(model, base_url=base_url, **settings)

    def load(self) -> Model:
        from ..models import load_model
        from ..models.llamacpp import thread_count

        threads = None if self.threads is None else thread_count(self.threads, "--threads")
        return load_model(self.settings, threads=threads, api_key=self.api_key, cache_path=self.cache,
                          use_cache=self.use_cache)


@dataclass
class Session:
    """What a job run by `run_on_model` gets: the loaded model and the progress display."""

    model: Model
    progress: ProgressReporter

    def backend_calls(self) -> int:
        """Samples the backend generated so far (the cache answered the others), with or
        without a cache."""
        from ..models.counting import CountingModel

        return self.model.backend_calls if isinstance(self.model, CountingModel) else 0


def run_on_model(
    choice: ModelChoice, job: Callable[[Session], Awaitable[T]], *, progress: str | None = None,
    kept_in: Path | None = None,
) -> tuple[T, int]:
    """Load the model, run `job` on it (with a progress display named `progress`, if
    given), close the model, and return the job's result with the number of backend
    calls. Ctrl-C, while loading or running, exits with status 130 at once, saying where
    finished work is kept (`kept_in`)."""
    from ..experiment.executor import interrupts_deferred
    from ..models.counting import CountingModel

    with interrupts_deferred() as interrupted:
        loaded = choice.load()
    if interrupted.is_set():
        _exit_interrupted(kept_in, "while the model was loading; nothing was run")
    lm = CountingModel(loaded)
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
        _exit_interrupted(kept_in)
    return result, session.backend_calls()


@dataclass(frozen=True)
class ExecutorChoice:
    """--executor, --address and --shard-size as typed."""

    executor: str = "local"
    address: str | None = None
    shard_size: int | None = None

    def __post_init__(self) -> None:
        from ..experiment.engine import executor_names

        if self.executor not in (names := executor_names()):  # local, ray, or a plugin's
            *others, last = names  # at least local and ray
            raise VeriloopError(f"--executor {self.executor!r}: choose {', '.join(others)} or {last}")
        if self.executor == "local" and (self.address is not None or self.shard_size is not None):
            given = "--address" if self.address is not None else "--shard-size"
            raise VeriloopError(f"{given} goes with --executor ray")
        if self.executor == "ray":
            from ..cluster import require_ray

            require_ray()  # before any work: without the extra, say how to install it

    @property
    def ray(self) -> bool:
        return self.executor == "ray"


def _exit_interrupted(kept_in: Path | None, when: str = "") -> NoReturn:
    """Exit with status 130 now. Not through interpreter shutdown: it would wait for the
    model's worker thread to finish its generation, and a second Ctrl-C during that wait
    prints a traceback from threading. Every finished trajectory and cached call is
    already on disk (each is committed as it finishes)."""
    message = "interrupted" + (f" {when}" if when else "")
    if kept_in is not None:
        message += f"; finished work is kept in {kept_in}; run the same command again to resume"
    err.print(message, highlight=False)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)
