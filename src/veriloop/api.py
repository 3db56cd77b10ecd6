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
from .domains.base import FunctionChecked
from .domains.base import as_base_domain as as_base
from .errors import VeriloopError
from .experiment.schema import Experiment
from .models import CachedModel, CallCache, Model, as_model
from .progress import ProgressReporter
from .records import Message, Trajectory
from .runs.identity import content_sha256
from .runs.runner import run_episode
from .stats.metrics import StrategySummary
from .strategies import Strategy, parse_strategy
from .task import Task
from .tools import Tool, Toolbox, ToolCache, get_tool
from .tools.config import tool_cache_path

if TYPE_CHECKING:
    from .audits.report import AuditResult
    from .experiment.engine import EvalResult

Summary = StrategySummary
"""What `evaluate` found for one strategy over a task's instances.

An alias of `veriloop.stats.metrics.StrategySummary` (a pydantic model): ground-truth
accuracy with its 95% Wilson interval, the mean number of answers, calls, tokens and time.

Attributes:
    strategy: The strategy's canonical spec, every option spelled out
        (e.g. "standard:temperature=0").
    n: How many instances (trajectories) it covers.
    correct: How many final answers are right by ground truth.
    accuracy: `correct / n` (0.0 when `n` is 0).
    accuracy_ci95: The 95% Wilson score interval of the accuracy, as (low, high).
    mean_rounds: The mean number of answers proposed per instance.
    model_calls: All model calls, those the cache answered included.
    cache_hits: How many of those calls the cache answered.
    prompt_tokens: Prompt tokens over all calls.
    completion_tokens: Completion tokens over all calls.
    seconds: The trajectories' time, summed (rounded to milliseconds).
    stop_reasons: How many trajectories ended for each stop reason
        (e.g. {"verifier_accepted": 3, "max_rounds": 1}).

Examples:
    ```python
    import veriloop

    task = veriloop.Task.from_records([{"q": "2+2", "a": "4"}, {"q": "3+3", "a": "6"}],
                                      prompt="What is {q}?", reference_field="a")
    [summary] = veriloop.evaluate(task, ["standard"], model=lambda messages: "4", out="runs/sums",
                                  cache=False, progress=False)
    assert (summary.n, summary.correct, summary.accuracy) == (2, 1, 0.5)
    low, high = summary.accuracy_ci95
    print(f"{summary.strategy}: {summary.accuracy:.0%} (95% CI {low:.2f}-{high:.2f})")
    ```
"""
ModelSpec = Any  # a model id, a Model, a function, an object with generate(), an AsyncOpenAI client (+ name)
CheckSpec = Any  # a check function, a verifier name ("llm", "critic", ...), a verifier object, or None
T = TypeVar("T")


@dataclass
class Result:
    """What `correct` did on one prompt.

    A Result is true when `ok` is, so `if veriloop.correct(...):` reads as "if the final
    answer passed".

    Attributes:
        answer: The final answer, extracted from `text` (None when there is none).
        ok: Whether the final answer is right: by the reference when one was given,
            else by the check function; with a verifier (e.g. "llm") instead of a
            function, by that verifier's verdict on the final reply.
        rounds: How many answers were produced.
        text: The final reply as the model wrote it (None when there is none).
        stop_reason: Why the loop stopped (e.g. "verifier_accepted", "max_rounds").
        feedback: The feedback messages sent back to the model, in order.
        trajectory: The same record `veriloop run` writes, with every call.
        cached_calls: How many model calls the call cache answered (0 by default).
        tokens: Prompt and completion tokens over all calls (0 by default).
        seconds: How long the loop took (0.0 by default).

    Examples:
        ```python
        import veriloop

        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.",
                                  lambda prompt, answer: int(answer) % 2 == 0, cache=False)
        assert result and result.answer == "8" and result.rounds == 2
        print(result.stop_reason, result.feedback)
        print(len(result.trajectory.calls), "calls")
        ```
    """

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
    """A model, ready for `correct`, `evaluate` and `eval_experiment`.

    Load a local model once with this and pass the result around, rather than its name to
    every call (each call would load it again). The call cache is on by default, so a
    repeated call replays its answer; a function or object that declares no `identity`
    cannot be cached, and is used uncached with a `VeriloopWarning`. See
    `veriloop.models.as_model` for the details.

    Args:
        spec: What names or wraps the model: a model id (a pack name, a path to a .gguf
            file, `openai/<model>` with `base_url`); an object that follows the Model
            protocol (a `CachedModel` is returned as it is); an `openai.AsyncOpenAI` client
            with `model_name`, or a `(client, model_name)` pair; a function
            `messages -> str` (or `(messages, params) -> str | Completion`), sync or async;
            or an object with such a `generate` method (see `FunctionModel`).

    Keyword Args:
        model_name: The model's name on the server, for an OpenAI client.
        name: The model's name in records (default: the function's name, or the class
            name of an object with `generate`).
        identity: What tells this model's answers apart in the call cache (an object's
            own `identity` attribute counts); a function or object without one is not
            cached.
        api_key: A server model's API key.
        cache: True (the default) for the default call cache
            (`$VERILOOP_HOME/calls.sqlite`), a path or a `CallCache` for another, False
            for none.
        concurrency: How many trajectories may use the model at once (default: the
            model's own preference; 1 for a function).
        threads: A local (llama.cpp) model's threads.
        context: A local model's context size in tokens.
        max_reply_tokens: The most tokens any one reply may have (a model loaded by id
            takes `$VERILOOP_MAX_REPLY_TOKENS` when this is not given).
        base_url: An OpenAI-compatible server's URL (default: `$VERILOOP_BASE_URL`).
        deployment: A server model's name in the cache identity instead of its base URL,
            so several URLs of one deployment share cached answers.
        retry_budget: Seconds a server model's faults are retried (default 120).
        stall_timeout: Seconds without a byte after which an attempt is abandoned as a
            fault (default 60).
        attempt_timeout: Seconds in all after which an attempt is abandoned (default 600).
        max_reply_bytes: A reply size over which an attempt is abandoned (default 8 MiB).

    Returns:
        The model, wrapped in the call cache unless the cache is off.

    Raises:
        VeriloopError: When `spec` is an unknown model id or a missing or unreadable
            model file, a synchronous `openai.OpenAI` client, an OpenAI client without a
            model name, or anything else that cannot be a model; or when a setting has
            a wrong value.
        TypeError: When a keyword is not one of the settings above.

    Examples:
        ```python
        import veriloop

        def shout(messages):
            return messages[-1]["content"].upper()

        llm = veriloop.model(shout, identity="shout-v1", cache="calls.sqlite")
        first = veriloop.correct(llm, "say hi", strategy="standard")
        again = veriloop.correct(llm, "say hi", strategy="standard")
        assert (first.answer, first.cached_calls, again.cached_calls) == ("SAY HI", 0, 1)
        print(llm.name, again.answer)
        ```
    """
    return as_model(spec, **options)


def toolbox(tools: Toolbox | Sequence[str | Tool] | None, cache: bool = True) -> Toolbox | None:
    """A Toolbox for the strategies that call tools (CRITIC), from names or tools.

    Args:
        tools: Tool names ("python", "calculator", "toxicity"; "search" needs a corpus,
            so give it as a built tool), Tool objects, or a Toolbox, returned as it is.
            None gives None.
        cache: Whether the new toolbox caches deterministic tools' successful results in
            the tool cache, `$VERILOOP_HOME/tools.sqlite` (default True). It does not
            apply to a Toolbox given as it is.

    Returns:
        The toolbox, or None when `tools` is None.

    Raises:
        VeriloopError: When a name is not a known tool.

    Examples:
        ```python
        import asyncio

        import veriloop

        box = veriloop.toolbox(["calculator"], cache=False)
        observation = asyncio.run(box.call("calculator", "6 * 7"))
        assert box.names == ["calculator"] and observation.ok
        print(observation.text)
        ```
    """
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
        elif isinstance(lm, CachedModel) and lm is not spec and lm.owns_cache:
            lm.cache.close()  # the cache was opened here; the caller's model, and a CallCache they gave, stay open


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
    """The async twin of `correct`: the same loop, awaited.

    Use it inside a running event loop (a notebook, an async application), where
    `correct` refuses to run. `feedback` and `max_rounds` fill the options a strategy
    spec leaves unset; a Strategy object is used as it is.

    Args:
        model: Anything `veriloop.model` accepts. A model id is loaded for this call and
            closed at its end; a model object is left open.
        prompt: The prompt: text, or chat messages (dicts of role and content).
        check: A function `check(instance, answer)`, sync or async, returning a bool,
            an error string ('' when right), a list of error strings or a Verdict; or a
            verifier name ("llm", "llm-cot", "critic", "selfcheck@0.8", ...) or object.
            Default None: allowed with a `reference`, the "standard" strategy, or a
            Strategy object.
        feedback: What the model is told of a rejected answer: "none", "binary", "first"
            (the default: the first error), "all" (every error) or "llm" (a critique).
        max_rounds: The answer budget (default 5): rounds for backprompt, samples for
            sampling, best-of-n and self-consistency.
        strategy: A strategy spec, as on the command line ("backprompt", the default;
            "sampling", "best-of-n:n=8", "selfcheck:n=4,gate=..."), or a Strategy object.
        instance: What the check receives as its instance (default: the prompt).
        reference: A known right answer (default: none). When given, it decides
            `Result.ok`: equal numbers, or equal text up to case and spacing.
        extract: A function from a reply to the answer the check sees (default: the whole
            reply, stripped).
        system: A system message put before the prompt (default: none).
        max_tokens: The most tokens one answer may take (default 512).
        seed: The seed of the run, sent to the model with its calls; the samples of a
            sampling strategy take the seeds after it (default 0).
        tools: Tools for the strategies that call them (CRITIC): names, Tool objects or a
            Toolbox, as `toolbox` takes them (default: none).
        cache: True (the default) for the default call cache, a path or a `CallCache` for
            another, False for none. Cached calls replay exactly, so a repeated call
            gives the same result.
        check_timeout: The seconds a check function may take on one answer before
            `CheckError`, over the check's own (default None: the check's own, 60 s).

    Returns:
        What the loop did on the prompt (the final answer, whether it passed, the
            rounds, the feedback and the full trajectory).

    Raises:
        VeriloopError: When there is no check and no reference (only the "standard"
            strategy runs without either); when a strategy, verifier, tool or model
            name is unknown; or when the model function raises or returns something
            other than text.
        CheckError: When the check raises, returns something that is not a verdict, or
            overstays its time limit; or when `check_timeout` is not a positive number.

    Examples:
        ```python
        import asyncio

        import veriloop

        async def llm(messages):
            return "8"

        async def main():
            return await veriloop.acorrect(llm, "Name an even number.",
                                           lambda prompt, answer: int(answer) % 2 == 0, cache=False)

        result = asyncio.run(main())
        assert result.ok and result.answer == "8"
        ```
    """
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

    The check receives `instance` (default: the prompt) and the answer (`extract(reply)`,
    default the whole reply). `feedback` and `max_rounds` fill the options a strategy
    spec leaves unset; a Strategy object is used as it is. Calls are cached (`cache=False`
    switches that off), so a repeated call replays exactly. Inside a running event loop,
    use `await veriloop.acorrect(...)`, which takes the same arguments.

    Args:
        model: Anything `veriloop.model` accepts: a model id, a function
            `messages -> str`, an object with `generate`, a Model, or a
            `(client, model_name)` pair. A model id is loaded for this call and closed
            at its end; a model object is left open.
        prompt: The prompt: text, or chat messages (dicts of role and content).
        check: A function `check(instance, answer)`, sync or async, returning a bool,
            an error string ('' when right), a list of error strings or a Verdict; or a
            verifier name ("llm", "llm-cot", "critic", "selfcheck@0.8", ...) or object.
            Default None: allowed with a `reference`, the "standard" strategy, or a
            Strategy object.

    Keyword Args:
        feedback: What the model is told of a rejected answer: "none", "binary", "first"
            (the default: the first error), "all" (every error) or "llm" (a critique).
        max_rounds: The answer budget (default 5): rounds for backprompt, samples for
            sampling, best-of-n and self-consistency.
        strategy: A strategy spec, as on the command line ("backprompt", the default;
            "sampling", "best-of-n:n=8", "selfcheck:n=4,gate=..."), or a Strategy object.
        instance: What the check receives as its instance (default: the prompt).
        reference: A known right answer (default: none). When given, it decides
            `Result.ok`: equal numbers, or equal text up to case and spacing.
        extract: A function from a reply to the answer the check sees (default: the whole
            reply, stripped).
        system: A system message put before the prompt (default: none).
        max_tokens: The most tokens one answer may take (default 512).
        seed: The seed of the run, sent to the model with its calls; the samples of a
            sampling strategy take the seeds after it (default 0).
        tools: Tools for the strategies that call them (CRITIC): names, Tool objects or a
            Toolbox, as `toolbox` takes them (default: none).
        cache: True (the default) for the default call cache, a path or a `CallCache` for
            another, False for none. Cached calls replay exactly, so a repeated call
            gives the same result.
        check_timeout: The seconds a check function may take on one answer before
            `CheckError`, over the check's own (default None: the check's own, 60 s).

    Returns:
        What the loop did on the prompt (the final answer, whether it passed, the
            rounds, the feedback and the full trajectory).

    Raises:
        VeriloopError: When there is no check and no reference (only the "standard"
            strategy runs without either); when a strategy, verifier, tool or model
            name is unknown; when the model function raises or returns something other
            than text; or when called inside a running event loop (use `acorrect`).
        CheckError: When the check raises, returns something that is not a verdict, or
            overstays its time limit; or when `check_timeout` is not a positive number.

    Examples:
        ```python
        import veriloop

        replies = iter(["7", "8"])

        def even(prompt, answer):
            return "" if int(answer) % 2 == 0 else f"{answer} is odd"

        result = veriloop.correct(lambda messages: next(replies), "Name an even number.", even, cache=False)
        assert result.ok and result.answer == "8" and result.rounds == 2
        print(result.feedback)  # the error fed back after "7"
        ```
    """
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
    """The async twin of `evaluate`: the same run, awaited.

    Use it inside a running event loop (a notebook, an async application), where
    `evaluate` refuses to run.

    Args:
        task: A `Task`, any domain object, or a built-in domain's name (see `data` and
            `domain_options`).
        strategies: Strategy specs as on the command line, or Strategy objects (default:
            "standard" alone).
        model: Anything `veriloop.model` accepts (required). A model id is loaded for
            this call and closed at its end; a model object is left open.
        out: The run directory. It holds every trajectory as it finishes, so an
            interrupted evaluate resumes there and a finished one re-runs with no model
            call.
        n: How many instances to run (default None: all of them).
        offset: How many instances to skip first (default 0).
        seed: The seed of the run (default 0).
        concurrency: How many trajectories run at once (default None: what the model
            prefers).
        data: A data file for a built-in domain named by `task` (default None: the
            domain's own). A Task reads no data file.
        domain_options: Options of a built-in domain named by `task` (default: none).
        max_rounds: Fills `max_rounds` in the strategies whose spec leaves it unset
            (default None: each strategy's own).
        k: Fills `k` in the strategies whose spec leaves it unset (default None: each
            strategy's own).
        tools: Tools for the strategies that call them (CRITIC): names, Tool objects or
            a Toolbox, as `toolbox` takes them (default: none).
        cache: True (the default) for the default call cache, a path or a `CallCache`
            for another, False for none.
        on_progress: A function called with `(done, total)` as trajectories finish
            (default: none).
        progress: Whether to show a progress bar on stderr (default None: only when
            stderr is a terminal).
        check_timeout: The seconds every check may take on one answer, over the task's
            own (default None: the task's own, 60 s unless `Task(check_timeout=...)`
            says otherwise).

    Returns:
        One summary per strategy, in the order of `strategies`.

    Raises:
        VeriloopError: When `task` is not a Task, a domain or a domain name; when the
            selection leaves no instances; when `strategies` is empty; when a strategy,
            domain, tool or model name is unknown; when a strategy cannot run on the
            task (a `sound` verifier on a Task without a check); when a Task is given a
            `data` file; when `out` holds a run made with other settings (another
            model, seed or task) or another run is using it; or when the model function raises or
            returns something other than text.
        CheckError: When a check raises, returns something that is not a verdict, or
            overstays its time limit (the finished trajectories are kept in `out`); or
            when `check_timeout` is not a positive number.

    Examples:
        ```python
        import asyncio

        import veriloop

        task = veriloop.Task.from_records([{"q": "2+2"}, {"q": "3+3"}], prompt="What is {q}?",
                                          check=lambda row, answer: answer == str(eval(row["q"])))
        summaries = asyncio.run(veriloop.aevaluate(task, ["standard"], model=lambda messages: "4",
                                                   out="runs/sums", cache=False, progress=False))
        assert [(s.n, s.correct) for s in summaries] == [(2, 1)]
        ```
    """
    domain: Any = get_domain(task, **(domain_options or {})) if isinstance(task, str) else task
    if not isinstance(domain, Domain):
        raise VeriloopError(f"evaluate() needs a Task, a domain object or a domain name, not {type(task).__name__}")
    instances = domain.load_instances(None if data is None else str(data), n=n, offset=offset)
    if not instances:
        raise VeriloopError(f"no instances selected from {domain.name} (n={n}, offset={offset})")
    if not strategies:
        raise VeriloopError("evaluate() needs at least one strategy")
    chosen = [parse_strategy(s, {"max_rounds": max_rounds, "k": k}) for s in strategies]
    # Described, not compared (runs.identity): the command line records a task by its
    # file and --check spec, which would never equal these labels of the same task.
    config = {
        "task_description": domain.description,
        "check_name": domain.check_name if isinstance(domain, FunctionChecked) else None,
        "data": None if data is None else str(data),
        "data_sha256": content_sha256(data),
        "offset": offset,
        "domain_options": domain_options or {},
        "api": "veriloop.evaluate",
    }
    from .experiment.engine import DomainPlan, ExecutorOptions, Progress, SingleRun, execute
    from .experiment.schema import ModelEntry

    box = toolbox(tools)
    # What a spec file cannot hold (the domain object, Strategy objects, the toolbox, the
    # model) is given beside it; the spec keeps what the engine reads of the rest.
    spec = Experiment.model_construct(name=f"evaluate {domain.name}", models={"main": ModelEntry.model_validate({})},
                                      seeds=[seed], concurrency=concurrency)
    given = SingleRun(config=config, strategies=chosen, domain=DomainPlan(
        domain.name, domain, instances, None if data is None else str(data), dict(config), toolbox=box,
        tools_given=True))

    async def run(lm: Model) -> list[Summary]:
        with _progress_bar(f"{domain.name} x {len(chosen)} strategies", progress, on_progress) as report:
            # The model is made (and closed) here, as `correct` makes its own: the executor takes it as it is.
            result = await execute(spec, Path(out), options=ExecutorOptions(use_cache=False, given={"main": lm}),
                                   progress=Progress(update=lambda _stage, done, total: report(done, total)),
                                   single=given)
        assert result.run is not None  # no budget stops it
        return result.run.summaries

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
    """Run strategies over every instance of a task and summarise each strategy.

    Each summary gives the accuracy with its 95% interval, rounds, calls, tokens and
    seconds. A check that overstays its time limit, like one that raises, stops the run
    with `CheckError`, keeping the finished trajectories. Inside a running event loop, use
    `await veriloop.aevaluate(...)`, which takes the same arguments.

    Args:
        task: A `Task`, any domain object, or a built-in domain's name (see `data` and
            `domain_options`).
        strategies: Strategy specs as on the command line, or Strategy objects (default:
            "standard" alone).

    Keyword Args:
        model: Anything `veriloop.model` accepts (required). A model id is loaded for
            this call and closed at its end; a model object is left open.
        out: The run directory. It holds every trajectory as it finishes, so an
            interrupted evaluate resumes there and a finished one re-runs with no model
            call.
        n: How many instances to run (default None: all of them).
        offset: How many instances to skip first (default 0).
        seed: The seed of the run (default 0).
        concurrency: How many trajectories run at once (default None: what the model
            prefers).
        data: A data file for a built-in domain named by `task` (default None: the
            domain's own). A Task reads no data file.
        domain_options: Options of a built-in domain named by `task` (default: none).
        max_rounds: Fills `max_rounds` in the strategies whose spec leaves it unset
            (default None: each strategy's own).
        k: Fills `k` in the strategies whose spec leaves it unset (default None: each
            strategy's own).
        tools: Tools for the strategies that call them (CRITIC): names, Tool objects or
            a Toolbox, as `toolbox` takes them (default: none).
        cache: True (the default) for the default call cache, a path or a `CallCache`
            for another, False for none.
        on_progress: A function called with `(done, total)` as trajectories finish
            (default: none).
        progress: Whether to show a progress bar on stderr (default None: only when
            stderr is a terminal).
        check_timeout: The seconds every check may take on one answer, over the task's
            own (default None: the task's own, 60 s unless `Task(check_timeout=...)`
            says otherwise).

    Returns:
        One summary per strategy, in the order of `strategies`.

    Raises:
        VeriloopError: When `task` is not a Task, a domain or a domain name; when the
            selection leaves no instances; when `strategies` is empty; when a strategy,
            domain, tool or model name is unknown; when a strategy cannot run on the
            task (a `sound` verifier on a Task without a check); when a Task is given a
            `data` file; when `out` holds a run made with other settings (another
            model, seed or task) or another run is using it; when the model function
            raises or returns something other than text; or when called inside a
            running event loop (use `aevaluate`).
        CheckError: When a check raises, returns something that is not a verdict, or
            overstays its time limit (the finished trajectories are kept in `out`); or
            when `check_timeout` is not a positive number.

    Examples:
        ```python
        import veriloop

        def digits_only(row, answer):
            return "" if answer.isdigit() else "answer with digits only"

        rows = [{"q": "2+2", "a": "4"}, {"q": "3+3", "a": "6"}]
        task = veriloop.Task.from_records(rows, prompt="What is {q}?", check=digits_only, reference_field="a")
        answers = {"What is 2+2?": "4", "What is 3+3?": "six"}
        summaries = veriloop.evaluate(task, ["standard", "sampling:k=2"], model=lambda m: answers[m[-1]["content"]],
                                      out="runs/sums", cache=False, progress=False)
        for summary in summaries:
            print(summary.strategy, summary.accuracy, summary.model_calls)
        assert [(s.correct, s.model_calls) for s in summaries] == [(1, 2), (1, 3)]
        ```
    """
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
    """The async twin of `eval_experiment`: the same run, awaited.

    Use it inside a running event loop (a notebook, an async application), where
    `eval_experiment` refuses to run.

    Args:
        experiment: A TOML file, a shipped experiment's name, a dict shaped like the
            file, or an `Experiment`.
        out: The experiment's directory: one resumable run directory per cell, and the
            results (results.csv, results.md, results.json, frontier.png).
        overrides: `key=value` items, as the command line's `--set` takes them, applied
            in order (default: none).
        models: Models by their name in the experiment, used instead of their `id`
            (your own function, object or client, as `veriloop.model` takes them).
            The models loaded here from their ids are closed at the end.
        cache: True (the default) for the default call cache, a path for another, False
            for none.
        progress: Whether to show a progress bar on stderr (default None: only when
            stderr is a terminal).
        executor: "local" (the default) runs the cells in this process; "ray" runs them
            on a Ray cluster (the result's `.cluster` then says what the workers did);
            a plugin's executor runs them where it says (`veriloop plugins` lists them).
        address: With `executor="ray"`, the cluster when none is initialised already:
            "auto", "ray://HOST:PORT", or None (the default) for a local one.
        shard_size: With `executor="ray"`, how many instances make one shard (default
            None: the experiment's concurrency, else the generator's preferred one).

    Returns:
        The experiment's result. Its `.rows` hold one `CellResult` per cell (accuracy
            with its interval, rounds, calls, tokens, seconds, dollars, status);
            `.stopped` says which budget stopped it early, if one did; `.out_dir` is
            where it was written.

    Raises:
        VeriloopError: When the experiment cannot be found or read, or is not valid
            (the message names the file, line and key); when an override is malformed;
            when `models` names a model the experiment does not have; when a model the
            cells need has no `id` and is not in `models`; when `executor` is not a
            registered executor's name, or `address` or `shard_size` is given with "local"; when
            Ray is not installed for "ray"; or when another run is using `out`.

    Examples:
        ```python
        import asyncio

        import veriloop

        def mine(messages):  # right on game24's first puzzle (1 1 11 13) only
            return "Answer: 13 + 11 * 1 * 1"

        spec = {"name": "demo", "models": {"mine": {}}, "domains": [{"name": "game24", "n": 2}],
                "strategies": ["standard"]}
        result = asyncio.run(veriloop.aeval_experiment(spec, out="exp", models={"mine": mine}, cache=False,
                                                       progress=False))
        [row] = result.rows
        assert (row.correct, row.n, row.status) == (1, 2, "complete")
        print(row.model, row.domain, row.strategy, row.accuracy)
        ```
    """
    from .experiment.engine import ExecutorOptions, Progress, execute, executor_names
    from .experiment.overrides import experiment_from_data, find_experiment, load_experiment
    from .experiment.schema import Experiment as Spec

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
    if executor not in (names := executor_names()):  # before any work
        raise VeriloopError(f"executor={executor!r}: choose one of: {', '.join(names)}")
    options = ExecutorOptions(cache_path=None if isinstance(cache, bool) else Path(cache), use_cache=cache is not False,
                              given=models, address=address, shard_size=shard_size)
    with ProgressReporter(spec.name, live=progress, plain_lines=False) as bar:
        return await execute(spec, Path(out), executor=executor, options=options,
                             progress=Progress(bar.update_stage, bar.tokens_done))


def eval_experiment(experiment: str | Path | Mapping[str, Any] | Experiment, **options: Any) -> EvalResult:
    """Run an experiment, as `veriloop eval` does, and return its result.

    An experiment is models x domains (or tasks) x strategies x seeds, with roles and
    budgets, in the file format of `veriloop eval`. Inside a running event loop, use
    `await veriloop.aeval_experiment(...)`, which takes the same arguments.

    Args:
        experiment: A TOML file, a shipped experiment's name, a dict shaped like the
            file, or an `Experiment`.

    Keyword Args:
        out: The experiment's directory: one resumable run directory per cell, and the
            results (results.csv, results.md, results.json, frontier.png).
        overrides: `key=value` items, as the command line's `--set` takes them, applied
            in order (default: none).
        models: Models by their name in the experiment, used instead of their `id`
            (your own function, object or client, as `veriloop.model` takes them).
            The models loaded here from their ids are closed at the end.
        cache: True (the default) for the default call cache, a path for another, False
            for none.
        progress: Whether to show a progress bar on stderr (default None: only when
            stderr is a terminal).
        executor: "local" (the default) runs the cells in this process; "ray" runs them
            on a Ray cluster (the result's `.cluster` then says what the workers did);
            a plugin's executor runs them where it says (`veriloop plugins` lists them).
        address: With `executor="ray"`, the cluster when none is initialised already:
            "auto", "ray://HOST:PORT", or None (the default) for a local one.
        shard_size: With `executor="ray"`, how many instances make one shard (default
            None: the experiment's concurrency, else the generator's preferred one).

    Returns:
        The experiment's result. Its `.rows` hold one `CellResult` per cell (accuracy
            with its interval, rounds, calls, tokens, seconds, dollars, status);
            `.stopped` says which budget stopped it early, if one did; `.out_dir` is
            where it was written.

    Raises:
        VeriloopError: When the experiment cannot be found or read, or is not valid
            (the message names the file, line and key); when an override is malformed;
            when `models` names a model the experiment does not have; when a model the
            cells need has no `id` and is not in `models`; when `executor` is not a
            registered executor's name, or `address` or `shard_size` is given with "local"; when
            Ray is not installed for "ray"; when another run is using `out`; or when
            called inside a running event loop (use `aeval_experiment`).

    Examples:
        ```python
        import veriloop

        spec = {
            "name": "demo",
            "models": {"mine": {}},  # no id: the model is given below
            "domains": [{"name": "game24", "n": 2}],  # its first puzzles: 1 1 11 13, then 1 1 2 12
            "strategies": ["standard", "sampling:k=2"],
        }

        def mine(messages):  # right on the first puzzle only
            return "Answer: 13 + 11 * 1 * 1"

        result = veriloop.eval_experiment(spec, out="exp", models={"mine": mine}, cache=False, progress=False)
        for row in result.rows:
            print(row.model, row.domain, row.strategy, f"{row.correct}/{row.n}", row.model_calls, row.status)
        assert [row.model_calls for row in result.rows] == [2, 3] and result.stopped is None
        ```
    """
    return _run_sync(aeval_experiment(experiment, **options), "aeval_experiment")


async def aaudit(
    domain: Domain | str,
    verifiers: str | Sequence[str],
    *,
    out: str | Path,
    model: ModelSpec | None = None,
    families: Sequence[str] | None = None,
    n: int | None = 10,
    offset: int = 0,
    seed: int = 0,
    data: str | Path | None = None,
    domain_options: dict[str, object] | None = None,
    answers: str | Path | None = None,
    max_calls: int | None = None,
    concurrency: int | None = None,
    cache: bool | str | Path | CallCache = True,
    on_progress: Callable[[int, int], None] | None = None,
    progress: bool | None = None,
) -> AuditResult:
    """The async twin of `audit`: the same audit, awaited.

    Use it inside a running event loop (a notebook, an async application), where `audit`
    refuses to run.

    Args:
        domain: A domain object or a built-in domain's name (see `data` and `domain_options`).
        verifiers: A verifier name (`veriloop.VERIFIERS`: "sound", "llm", "hidden", ...;
            `NAME@T` sets a threshold) or several; each judges every answer.
        out: The audit directory: every judgement is a line of its audit.jsonl as it is
            made, so an interrupted audit resumes there; audit.md and audit.json are
            written at the end.
        model: Anything `veriloop.model` accepts; required when a verifier asks a model
            (default None: for verifiers that call none, such as "sound" or "hidden").
        families: Exploit family names (`veriloop.audits.FAMILIES`; default None: every
            family that applies to the domain).
        n: How many instances (default 10; None: all).
        offset: How many instances to skip first (default 0).
        seed: Seeds the wrong answers' choice, the families' choices and the model calls
            (default 0).
        data: A data file for a built-in domain (default None: the domain's own).
        domain_options: Options of a built-in domain named by `domain` (default: none).
        answers: A run directory: audit the final replies of its trajectories that
            ground truth scores wrong, instead of the domain's own wrong answers
            (default None).
        max_calls: The most model calls the audit's records may hold, answered by the
            cache or not (default None: no cap); the audit stops there and reports what
            it judged.
        concurrency: How many judgements run at once (default None: as many as the
            model prefers; 4 when no verifier asks a model).
        cache: True (the default) for the default call cache, a path or a `CallCache`
            for another, False for none.
        on_progress: A function called with `(done, total)` as judgements finish
            (default: none).
        progress: Whether to show a progress bar on stderr (default None: only when
            stderr is a terminal).

    Returns:
        An `AuditResult` (see `audit`).

    Raises:
        VeriloopError: When a name (domain, verifier, family) is unknown, a family does
            not apply to the domain, a verifier cannot judge it, a verifier asks a model
            and none is given, no known-wrong answer is found, or `out` holds another
            audit or is in use.

    Examples:
        ```python
        import asyncio

        import veriloop

        result = asyncio.run(veriloop.aaudit("game24", "sound", out="audit", n=2, families=["equals-target"],
                                             progress=False))
        assert result.row("sound", "equals-target").dressed_accepts == 0
        ```
    """
    from .audits import families_for
    from .audits.engine import NoModel, plan_audit
    from .audits.report import execute_audit

    dom = get_domain(domain, **(domain_options or {})) if isinstance(domain, str) else domain
    instances = dom.load_instances(str(data) if data is not None else None, n=n, offset=offset)
    names = [verifiers] if isinstance(verifiers, str) else list(verifiers)
    answers_run = Path(answers) if answers is not None else None
    plan = plan_audit(dom, names, families_for(as_base(dom), list(families) if families is not None else None),
                      instances, seed=seed, answers_run=answers_run)
    if plan.needs_model and model is None:
        asked = [v for v, calls in plan.calls_per_judgement.items() if calls != 0]
        raise VeriloopError(f"verifier {asked[0]!r} asks a model; give model=...")
    out_dir = Path(out)

    async def go(lm: Model) -> AuditResult:
        with _progress_bar(f"audit {plan.domain.name}", progress, on_progress) as report:
            return await execute_audit(plan, lm, out_dir, answers=str(answers_run) if answers_run else "the domain's own",
                                       domain_options=dict(domain_options or {}), max_calls=max_calls,
                                       concurrency=concurrency, on_progress=report)

    if model is None:
        return await go(NoModel())
    return await _with_model(model, cache, go)


def audit(domain: Domain | str, verifiers: str | Sequence[str], **options: Any) -> AuditResult:
    """How often verifiers accept answers known to be wrong, plain and dressed by exploit
    families (`veriloop.audits.FAMILIES`): the audit `veriloop audit` runs.

    Every answer audited is wrong by the domain's ground truth, so every accept is a false
    accept. Inside a running event loop, use `await veriloop.aaudit(...)`, which takes the
    same arguments.

    Args:
        domain: A domain object or a built-in domain's name.
        verifiers: A verifier name (`veriloop.VERIFIERS`, e.g. "sound", "llm", "hidden")
            or several.

    Keyword Args:
        out: The audit directory (required; resumable).
        model: The model, for verifiers that ask one.
        families: Exploit family names (default: every family that applies).
        n: How many instances (default 10).
        offset: How many instances to skip first.
        seed: The seed of the choices and calls.
        data: A data file for a built-in domain.
        domain_options: Options of a built-in domain.
        answers: A run directory whose wrong final replies are audited.
        max_calls: A budget of model calls.
        concurrency: Judgements at once.
        cache: The call cache (as `aaudit` takes it).
        on_progress: A `(done, total)` callback.
        progress: Whether to show a progress bar.

    Returns:
        An `AuditResult`: one row per verifier and family (false-accept rates plain and
        dressed, Wilson intervals, the paired difference with McNemar's p), and where
        audit.md, audit.json and the records are.

    Raises:
        VeriloopError: As `aaudit` says, and when an event loop is already running here.

    Examples:
        ```python
        import veriloop

        result = veriloop.audit("game24", ["sound"], out="audit", n=3, progress=False)
        assert result.row("sound", "plain").plain_accepts == 0  # the sound checker accepts no wrong answer
        print(result.report_md.read_text())
        ```
    """
    return _run_sync(aaudit(domain, verifiers, **options), "aaudit")


def _run_sync(coroutine: Coroutine[Any, Any, T], twin: str) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise VeriloopError(f"an event loop is already running here (a notebook?): use `await veriloop.{twin}(...)`")
