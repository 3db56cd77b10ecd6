"""The public Python API: correct one answer, or evaluate strategies over a task.

    import veriloop

    result = veriloop.correct(my_llm, "Name a prime above 90.", is_prime_answer)
    result.answer, result.ok, result.rounds, result.trajectory

    task = veriloop.Task.from_jsonl("qs.jsonl", prompt="{question}", check=my_check)
    summaries = veriloop.evaluate(task, ["standard", "backprompt", "sampling:k=4"], model=my_llm, out="runs/qs")

Models, checks, strategies, tools and domains are accepted as objects or as the names
the command line uses, and every call goes through the same loops, cache and records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .checks import check_time_limit, is_check_function
from .domains import Domain, get_domain
from .domains.base import as_base_domain
from .errors import VeriloopError
from .experiment.identity import content_sha256
from .experiment.metrics import StrategySummary
from .experiment.runner import run_episode, run_experiment
from .experiment.spec import Experiment
from .models import CachedModel, CallCache, Model, as_model
from .progress import ProgressReporter
from .records import Message, Trajectory
from .strategies import Strategy, parse_strategy
from .task import Task
from .tools import Tool, Toolbox, ToolCache, get_tool
from .tools.config import tool_cache_path

if TYPE_CHECKING:
    from .experiment.engine import EvalResult

Summary = StrategySummary
ModelSpec = Any  # a model id, a Model, a function, an object with generate(), an AsyncOpenAI client (+ name)
CheckSpec = Any  # a check function, a verifier name ("llm", "critic", ...), a verifier object, or None
T = TypeVar("T")


@dataclass
class Result:
    """What `correct` did on one prompt.

    `answer` is the final answer (extracted from `text`, the final reply); `ok` whether it
    passes the check (or matches the reference, when one was given); `rounds` how many
    answers were produced; `feedback` the feedback messages sent back, in order; and
    `trajectory` the same record `veriloop run` writes, with every call."""

    answer: str | None
    ok: bool
    rounds: int
    text: str | None
    stop_reason: str
    feedback: list[str]
    trajectory: Trajectory
    cached_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return self.ok


def model(spec: ModelSpec, **options: Any) -> Model:
    """A model, ready for `correct` and `evaluate` (see `veriloop.models.as_model`): a pack
    name or model id, a function `messages -> str`, an object with `generate`, or an
    `openai.AsyncOpenAI` client with `model_name=`. Load a local model once with this and
    pass the result around, rather than its name to every call."""
    return as_model(spec, **options)


def toolbox(tools: Toolbox | Sequence[str | Tool] | None, cache: bool = True) -> Toolbox | None:
    """A Toolbox from tool names (python, calculator, toxicity; search needs a corpus, so
    give a built tool), Tool objects, or a Toolbox as it is."""
    if tools is None or isinstance(tools, Toolbox):
        return tools
    built = [get_tool(t) if isinstance(t, str) else t for t in tools]
    return Toolbox(built, cache=ToolCache(tool_cache_path()) if cache else None)


def _strategy_defaults(check: CheckSpec, feedback: str, max_rounds: int) -> dict[str, object]:
    defaults: dict[str, object] = {"feedback": feedback, "max_rounds": max_rounds, "k": max_rounds, "n": max_rounds}
    if check is not None and not is_check_function(check):
        defaults["verifier"] = check  # a verifier name or object; a function is the task's own check
    return defaults


async def _with_model(spec: ModelSpec, cache: bool | str | Path | CallCache, run: Callable[[Model], Coroutine[Any, Any, T]]) -> T:
    """Run with the model `spec` stands for, and close only what was opened here."""
    lm = as_model(spec, cache=cache)
    try:
        return await run(lm)
    finally:
        if isinstance(spec, str):
            await lm.aclose()  # loaded here from its id
        elif isinstance(lm, CachedModel) and lm is not spec:
            lm.cache.close()  # the cache was opened here; the caller's model stays open


async def acorrect(
    model: ModelSpec,
    prompt: str | Sequence[Message],
    check: CheckSpec = None,
    *,
    feedback: str = "first",
    max_rounds: int = 5,
    strategy: str | Strategy = "backprompt",
    instance: Any = None,
    reference: Any = None,
    extract: Callable[[str], str | None] | None = None,
    system: str | None = None,
    max_tokens: int = 512,
    seed: int = 0,
    tools: Toolbox | Sequence[str | Tool] | None = None,
    cache: bool | str | Path | CallCache = True,
    check_timeout: float | None = None,
) -> Result:
    """The async twin of `correct`."""
    if check is None and reference is None and not isinstance(strategy, Strategy) and strategy.split(":")[0] != "standard":
        raise VeriloopError("correct() needs a check (a function, or a verifier name such as 'llm'), or a reference")
    task = Task.single(
        prompt, check if is_check_function(check) else None, instance=instance, system=system, extract=extract,
        answer_tokens=max_tokens, **({"reference": reference} if reference is not None else {}),
    )
    chosen = parse_strategy(strategy, _strategy_defaults(check, feedback, max_rounds))
    box = toolbox(tools)

    async def run(lm: Model) -> Result:
        return _result(task, await run_episode(lm, task, chosen, task.instances[0], seed, box))

    with check_time_limit(check_timeout):
        return await _with_model(model, cache, run)


def correct(model: ModelSpec, prompt: str | Sequence[Message], check: CheckSpec = None, **options: Any) -> Result:
    """Generate, check, feed back and correct until the check passes or the budget ends.

    `model`: anything `veriloop.model` accepts. `prompt`: text or chat messages.
    `check`: a function `check(instance, answer)` returning a bool, an error string ('' if
    right), a list of error strings or a Verdict (sync or async); or a verifier name
    ('llm', 'llm-cot', 'critic', 'selfcheck@0.8', ...) or object. The check receives
    `instance` (default: the prompt) and the answer (`extract(reply)`, default the whole
    reply). `feedback`: none, binary, first, all or llm. `max_rounds`: the answer budget
    (rounds for backprompt, samples for sampling, best-of-n and self-consistency).
    `strategy`: a strategy spec ("backprompt", "sampling", "best-of-n:n=8",
    "selfcheck:n=4,gate=...") or object. `reference`: a known right answer, which then
    decides `Result.ok`. Calls are cached (`cache=False` to switch off) so a repeated call
    replays exactly. `check_timeout`: seconds a check function may take on one answer
    before `CheckError` (default: the check's own, 60 s). Inside a running event loop, use
    `await acorrect(...)`."""
    return _run_sync(acorrect(model, prompt, check, **options), "acorrect")


def _result(task: Task, t: Trajectory) -> Result:
    verdict_ok = next((r.verdict.ok for r in reversed(t.rounds) if r.text == t.final_text and r.verdict), None)
    has_truth = task.checker is not None or task.reference_field is not None
    ok = t.correct if has_truth or verdict_ok is None else verdict_ok
    return Result(
        answer=t.final_answer,
        ok=bool(ok),
        rounds=t.n_rounds,
        text=t.final_text,
        stop_reason=t.stop_reason,
        feedback=_feedback_sent(t),
        trajectory=t,
        cached_calls=sum(c.cached for c in t.calls),
        tokens=sum(c.prompt_tokens + c.completion_tokens for c in t.calls),
        seconds=t.seconds,
    )


def _feedback_sent(t: Trajectory) -> list[str]:
    """The user turns a loop added after the base prompt: the feedback, in order."""
    generating = [c for c in t.calls if c.role in ("generate", "correct")]
    if not generating:
        return []
    longest = max(generating, key=lambda c: len(c.messages)).messages
    base = len(generating[0].messages)
    return [m["content"] for m in longest[base:] if m["role"] == "user"]


async def aevaluate(
    task: Task | Domain | str,
    strategies: Sequence[str | Strategy] = ("standard",),
    *,
    model: ModelSpec,
    out: str | Path,
    n: int | None = None,
    offset: int = 0,
    seed: int = 0,
    concurrency: int | None = None,
    data: str | Path | None = None,
    domain_options: dict[str, object] | None = None,
    max_rounds: int | None = None,
    k: int | None = None,
    tools: Toolbox | Sequence[str | Tool] | None = None,
    cache: bool | str | Path | CallCache = True,
    on_progress: Callable[[int, int], None] | None = None,
    progress: bool | None = None,
    check_timeout: float | None = None,
) -> list[Summary]:
    """The async twin of `evaluate`."""
    domain: Any = get_domain(task, **(domain_options or {})) if isinstance(task, str) else task
    if not isinstance(domain, Domain):
        raise VeriloopError(f"evaluate() needs a Task, a domain object or a domain name, not {type(task).__name__}")
    instances = domain.load_instances(None if data is None else str(data), n=n, offset=offset)
    if not instances:
        raise VeriloopError(f"no instances selected from {domain.name} (n={n}, offset={offset})")
    if not strategies:
        raise VeriloopError("evaluate() needs at least one strategy")
    chosen = [parse_strategy(s, {"max_rounds": max_rounds, "k": k}) for s in strategies]
    # Described, not compared (experiment.identity): the command line records a task by its
    # file and --check spec, which would never equal these labels of the same task.
    config = {
        "task_description": domain.description,
        "check_name": as_base_domain(domain).check_name,
        "data": None if data is None else str(data),
        "data_sha256": content_sha256(data),
        "offset": offset,
        "domain_options": domain_options or {},
        "api": "veriloop.evaluate",
    }
    box = toolbox(tools)

    async def run(lm: Model) -> list[Summary]:
        with _progress_bar(f"{domain.name} x {len(chosen)} strategies", progress, on_progress) as report:
            result = await run_experiment(
                lm, domain, chosen, instances, Path(out), seed=seed, concurrency=concurrency, config=config,
                on_progress=report, tools=box,
            )
        return result.summaries

    with check_time_limit(check_timeout):
        return await _with_model(model, cache, run)


@contextmanager
def _progress_bar(
    title: str, show: bool | None, also: Callable[[int, int], None] | None
) -> Iterator[Callable[[int, int], None]]:
    """The command line's progress bar on stderr (by default only when stderr is a
    terminal, and no plain lines otherwise), which also calls the user's own callback."""
    with ProgressReporter(title, live=show, plain_lines=False) as bar:

        def report(done: int, total: int) -> None:
            bar.update(done, total)
            if also is not None:
                also(done, total)

        yield report


def evaluate(task: Task | Domain | str, strategies: Sequence[str | Strategy] = ("standard",), **options: Any) -> list[Summary]:
    """Run strategies over every instance of a task and summarise them (accuracy with a
    95% interval, rounds, calls, tokens, seconds per strategy), in the given order.

    `task`: a `Task`, any domain object, or a built-in domain name (with `data`,
    `domain_options`). `strategies`: specs as on the command line or Strategy objects.
    `model`: anything `veriloop.model` accepts. `out`: the run directory; it holds every
    trajectory as it finishes, so an interrupted evaluate resumes there and a finished
    one re-runs with no model call. `n`/`offset` select instances; `concurrency` is how
    many trajectories run at once (default: what the model prefers); `max_rounds` and `k`
    fill those options of strategies whose spec leaves them unset. `progress` shows a bar
    on stderr (default: when stderr is a terminal); `on_progress(done, total)` is called
    as trajectories finish. `check_timeout`: seconds every check may take on one answer,
    over the task's own (default 60 s, `Task(check_timeout=...)`); a check that overstays,
    like one that raises, stops the run with `CheckError`, keeping the finished trajectories."""
    return _run_sync(aevaluate(task, strategies, **options), "aevaluate")


async def aeval_experiment(
    experiment: str | Path | Mapping[str, Any] | Experiment,
    *,
    out: str | Path,
    overrides: Sequence[str] = (),
    models: Mapping[str, ModelSpec] | None = None,
    cache: bool | str | Path = True,
    progress: bool | None = None,
    executor: str = "local",
    address: str | None = None,
    shard_size: int | None = None,
) -> EvalResult:
    """The async twin of `eval_experiment`."""
    from .experiment.engine import Progress, load_models, models_needed, plan, run_eval
    from .experiment.spec import Experiment as Spec
    from .experiment.spec import experiment_from_data, find_experiment, load_experiment

    if isinstance(experiment, Spec):
        # Read back to run: the base URLs whole (a plain dump drops their credentials).
        spec = experiment if not overrides else experiment_from_data(
            experiment.model_dump(context={"with_secrets": True}), "experiment", overrides)
    elif isinstance(experiment, Mapping):
        spec = experiment_from_data(experiment, "experiment", overrides)
    else:
        spec = load_experiment(find_experiment(experiment), overrides)
    unknown = sorted(name for name in models or {} if name not in spec.models)
    if unknown:
        raise VeriloopError(f"models= names {', '.join(unknown)}, not under the experiment's models: "
                            f"{', '.join(spec.models)}")
    if executor not in ("local", "ray"):
        raise VeriloopError(f"executor={executor!r}: choose 'local' or 'ray'")
    target = Path(out)
    plans = plan(spec, target)
    names = models_needed(spec, plans)
    if executor == "ray":
        from .cluster import require_ray
        from .experiment.engine import ExecutorOptions, run_eval_on

        require_ray()
        options = ExecutorOptions(cache_path=None if isinstance(cache, bool) else Path(cache),
                                  use_cache=cache is not False, given=models, address=address, shard_size=shard_size)
        with ProgressReporter(spec.name, live=progress, plain_lines=False) as bar:
            return await run_eval_on("ray", spec, target, plans, names, Progress(bar.update_stage, bar.tokens_done),
                                     options)
    if address is not None or shard_size is not None:
        raise VeriloopError("address= and shard_size= go with executor='ray'")
    loaded = load_models(spec, names, cache_path=None if isinstance(cache, bool) else Path(cache),
                         use_cache=cache is not False, given=models)
    try:
        with ProgressReporter(spec.name, live=progress, plain_lines=False) as bar:
            return await run_eval(spec, target, loaded, Progress(bar.update_stage, bar.tokens_done), plans)
    finally:
        for name, lm in loaded.items():
            if not (models and name in models and lm is models[name]):
                await lm.aclose()


def eval_experiment(experiment: str | Path | Mapping[str, Any] | Experiment, **options: Any) -> EvalResult:
    """Run an experiment (models x domains x strategies x seeds, roles, budgets; the file
    format of `veriloop eval`) and return its result: `.rows` has one `CellResult` per
    cell (accuracy with its interval, rounds, calls, tokens, seconds, dollars, status),
    `.stopped` says which budget stopped it early, if one did.

    `experiment`: a TOML file, a shipped experiment's name, a dict shaped like the file,
    or an `Experiment`. `out`: the experiment's directory (one resumable run directory
    per cell; results.csv/.md/.json and frontier.png). `overrides`: `key=value` items as
    with `--set`. `models`: models by their name in the experiment, to use instead of
    their `id` (your own function, object or client). `cache`: True for the default call
    cache, a path for another, False for none. `executor="ray"` runs the cells on a Ray
    cluster (the one already initialised, else `address`: "auto", "ray://HOST:PORT", or
    None for a local one), `shard_size` instances per shard; `.cluster` then says what
    the workers did."""
    return _run_sync(aeval_experiment(experiment, **options), "aeval_experiment")


def _run_sync(coroutine: Coroutine[Any, Any, T], twin: str) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise VeriloopError(f"an event loop is already running here (a notebook?): use `await veriloop.{twin}(...)`")
