"""Option groups: the model, cache, executor, batch and tool options, each declared once.

A command takes a group as one parameter annotated with its class and is decorated with
`@grouped`:

    @grouped
    def chat(question: ..., model: ModelFlags = TYPED, cache: CacheFlags = TYPED) -> None:
        run_on_model(model.choice(cache), ...)

`grouped` shows typer the group's fields in the group's place (each with its own
`--flag`, help text and default, exactly as declared on the class) and hands the command
one instance built from what was typed. So an option is declared in one place, its help
is the same in every command that takes it, and a command never forwards flags one by
one. A group checks its own values when it is made (a bad --reasoning-effort, --address
without --executor ray...), before the command body runs.

Invariants: a group is a dataclass whose every field has a default and an `Annotated`
typer option; two groups of one command never share a field name; the decorated
function's signature (what typer reads) lists the command's own parameters and the
groups' fields in declaration order.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar, get_type_hints

import typer

from ..errors import VeriloopError
from .common import DEFAULT_MODEL, ExecutorChoice, ModelChoice, Opt, tool_settings

if TYPE_CHECKING:
    from ..tools.config import ToolSettings

F = TypeVar("F", bound=Callable[..., Any])

# A group parameter's default (`model: ModelFlags = TYPED`): @grouped always passes the
# group made of what was typed, so the value is never seen; it is there because a
# parameter without a default may not follow those with one.
TYPED: Any = None


class OptionGroup:
    """A set of options several commands take (see the module's docstring). `flags`
    names each field's option as typed (default: --field-name)."""

    flags: ClassVar[dict[str, str]] = {}

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        """The fields as typer reads a command's parameters."""
        hints = get_type_hints(cls, include_extras=True)
        return [
            inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hints[f.name],
                              default=f.default)
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        ]

    def given(self) -> list[str]:
        """The options typed with a value other than their default, as flags."""
        return [self.flags.get(f.name, "--" + f.name.replace("_", "-"))
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if getattr(self, f.name) != f.default]


def grouped(command: F) -> F:
    """`command` with each parameter annotated with an OptionGroup replaced, for typer, by
    the group's options; called with one instance of the group instead."""
    hints = get_type_hints(command, include_extras=True)
    groups: dict[str, type[OptionGroup]] = {}
    parameters: list[inspect.Parameter] = []
    for parameter in inspect.signature(command).parameters.values():
        hint = hints.get(parameter.name, parameter.annotation)
        if isinstance(hint, type) and issubclass(hint, OptionGroup):
            groups[parameter.name] = hint
            parameters.extend(hint.parameters())
        else:
            parameters.append(parameter.replace(annotation=hint))
    names = [p.name for p in parameters]
    clash = sorted({name for name in names if names.count(name) > 1})
    if clash:
        raise TypeError(f"{command.__name__}: option(s) {', '.join(clash)} declared twice")

    @functools.wraps(command)
    def with_groups(**typed: Any) -> Any:
        for name, group in groups.items():
            fields = [f.name for f in dataclasses.fields(group)]  # type: ignore[arg-type]
            typed[name] = group(**{field: typed.pop(field) for field in fields})
        return command(**typed)

    with_groups.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    with_groups.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_groups  # type: ignore[return-value]


def _checked_effort(effort: str | None) -> None:
    from ..models.providers import REASONING_EFFORTS

    if effort is not None and effort not in REASONING_EFFORTS:
        raise VeriloopError(f"--reasoning-effort must be one of {', '.join(REASONING_EFFORTS)}, not {effort!r}")


@dataclasses.dataclass
class ServerFlags(OptionGroup):
    """How a model is reached and held to its limits: everything of the model but its id."""

    base_url: Opt.BaseUrl = None
    api_key: Opt.ApiKey = None
    threads: Opt.Threads = None
    deployment: Opt.Deployment = None
    retry_budget: Opt.RetryBudget = None
    stall_timeout: Opt.StallTimeout = None
    attempt_timeout: Opt.AttemptTimeout = None
    max_reply_bytes: Opt.MaxReplyBytes = None
    reasoning_effort: Opt.ReasoningEffort = None

    def __post_init__(self) -> None:
        _checked_effort(self.reasoning_effort)

    def settings(self) -> dict[str, Any]:
        """The model settings (ModelSettings' fields) given here; the key and threads are not among them."""
        return {"base_url": self.base_url, "deployment": self.deployment, "retry_budget": self.retry_budget,
                "stall_timeout": self.stall_timeout, "attempt_timeout": self.attempt_timeout,
                "max_reply_bytes": self.max_reply_bytes, "reasoning_effort": self.reasoning_effort}

    def choice_of(self, model: str, cache: CacheFlags, **settings: Any) -> ModelChoice:
        """The model `model` reached as these options say, with the call cache as `cache`
        says; `settings`: more of ModelSettings' fields (the command's --concurrency...)."""
        return ModelChoice(model, api_key=self.api_key, cache=cache.cache, use_cache=not cache.no_cache,
                           threads=self.threads, **{**self.settings(), **settings})


@dataclasses.dataclass
class ModelFlags(ServerFlags):
    """The model a command runs on (--model, first) and how it is reached."""

    model: Opt.Model = DEFAULT_MODEL

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        *server, model = super().parameters()
        return [model, *server]  # --model is listed first in --help, as it always was

    def choice(self, cache: CacheFlags, **settings: Any) -> ModelChoice:
        """The model to load (see `choice_of`)."""
        return self.choice_of(self.model, cache, **settings)


ModelOverride = Annotated[str | None, typer.Option(
    "--model", help=f"Model id (sets models.main.id; the file's: {DEFAULT_MODEL}).")]


@dataclasses.dataclass
class MainModelFlags(ServerFlags):
    """An experiment file's generating model (`models.main`), changed by the options given."""

    model: ModelOverride = None

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        *server, model = super().parameters()
        return [model, *server]

    def overrides(self) -> dict[str, Any]:
        """The options given, as overrides of the file's `models.main` (one not given
        leaves the file's value)."""
        from ..models.llamacpp import thread_count
        from ..models.settings import ModelSettings

        threads = None if self.threads is None else thread_count(self.threads, "--threads")
        chosen = ModelSettings.of(self.model, threads=threads, **self.settings())
        return {f"models.main.{key}": value for key, value in chosen.settings_set().items()}


NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the call cache.")]


@dataclasses.dataclass
class CacheFlags(OptionGroup):
    """Which call cache answers a repeated call (or none)."""

    flags: ClassVar[dict[str, str]] = {"no_cache": "--no-cache"}

    cache: Opt.Cache = None
    no_cache: NoCache = False


@dataclasses.dataclass
class ExecutorFlags(OptionGroup):
    """Where the trajectories run: --executor, --address, --shard-size."""

    executor: Opt.Executor = "local"
    address: Opt.Address = None
    shard_size: Opt.ShardSize = None

    def __post_init__(self) -> None:
        self.where = ExecutorChoice(self.executor, self.address, self.shard_size)


@dataclasses.dataclass
class BatchFlags(OptionGroup):
    """Calls sent through a provider's batch API."""

    flags: ClassVar[dict[str, str]] = {"batch": "--batch"}

    batch: Opt.Batch = False
    batch_poll_seconds: Opt.BatchPollSeconds = None

    def __post_init__(self) -> None:
        if self.batch_poll_seconds is not None and not self.batch:
            raise VeriloopError("--batch-poll-seconds goes with --batch (the calls sent by batch): add --batch, or "
                                "drop --batch-poll-seconds")

    def settings(self) -> dict[str, Any]:
        return {"batch": self.batch or None, "batch_poll_seconds": self.batch_poll_seconds}


@dataclasses.dataclass
class ToolFlags(OptionGroup):
    """The tools' settings: the search corpus or engine, the toxicity scorer, the sandbox."""

    flags: ClassVar[dict[str, str]] = {"toxicity_backend": "--toxicity-backend"}

    search_corpus: Opt.SearchCorpus = None
    search_url: Opt.SearchUrl = None
    toxicity_backend: Opt.Toxicity = "offline"
    allow_unisolated: Opt.Unisolated = False

    def settings(self, names: list[str] | None = None) -> ToolSettings:
        return tool_settings(self.search_corpus, self.search_url, self.toxicity_backend, self.allow_unisolated,
                             names=names)


__all__ = [
    "BatchFlags", "CacheFlags", "ExecutorFlags", "MainModelFlags", "ModelFlags", "OptionGroup", "ServerFlags",
    "TYPED", "ToolFlags", "grouped",
]
