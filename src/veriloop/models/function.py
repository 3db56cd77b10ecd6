"""A user's own LLM call as a model: any function from chat messages to a reply.

The function may be sync or async, and may take the sampling parameters as a second
argument (`fn(messages, params)`) to honour temperature, seeds and max_tokens. It returns
the reply text, or a `Completion` to report token counts. Each of the n samples of a call
is its own function call, so a vote of k samples always gets k replies.

Calls are cached only when the model declares an `identity` (a name for exactly what
answers: the model and its settings); without one, replaying a function's answers could
silently return another model's, so the cache is off and a warning says so.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from ..errors import VeriloopError
from ..records import Message
from .base import Completion, GenParams


class FunctionModel:
    """A Model around a function `fn(messages) -> str` (or `fn(messages, params)`), sync or async.

    `veriloop.model(fn)` builds one, and adds the call cache when it has an identity.
    Each of the n samples of a call is one call of `fn`. The function returns the reply
    text, or a `Completion` to report token counts; an exception it raises becomes a
    `VeriloopError` naming the model (a `VeriloopError` passes as it is), and so does a
    reply of any other type.

    Args:
        fn: The function: takes the chat messages (and the `GenParams`, if it takes a
            second argument) and returns the reply text or a `Completion`.
        name: The label of the model in records (default: the function's name).
        identity: A name for exactly what answers (the model and its settings); when given,
            it keys the call cache. Without it, calls are not cached.
        concurrency: How many trajectories may call it at once. Sync functions run on
            worker threads, so more than 1 needs a thread-safe function.

    Raises:
        VeriloopError: When `fn` is not callable or `concurrency` is below 1.

    Examples:
        ```python
        import asyncio
        from veriloop import FunctionModel, GenParams

        model = FunctionModel(lambda messages, params: f"8 (t={params.temperature})", identity="eight-v1")
        messages = [{"role": "user", "content": "Name an even number."}]
        completions = asyncio.run(model.generate(messages, GenParams(n=2, temperature=1.0)))
        assert [c.text for c in completions] == ["8 (t=1.0)", "8 (t=1.0)"]
        assert (model.backend, model.name, model.preferred_concurrency) == ("function", "<lambda>", 1)
        ```
    """

    backend = "function"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        identity: str | None = None,
        concurrency: int = 1,
    ) -> None:
        if not callable(fn):
            raise VeriloopError(f"a model function must be callable, not {type(fn).__name__}")
        if concurrency < 1:
            raise VeriloopError("concurrency must be at least 1")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        self.identity: str | None = identity
        self.preferred_concurrency = concurrency
        self._takes_params = _takes_second_argument(fn)
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        out = []
        for i in range(params.n):
            one = params.with_(n=1, sample_offset=params.sample_offset + i)
            out.append(await self._one(messages, one))
        return out

    async def _one(self, messages: list[Message], params: GenParams) -> Completion:
        args: tuple[Any, ...] = (messages, params) if self._takes_params else (messages,)
        started = time.perf_counter()
        try:
            if self._is_async:
                reply = await self.fn(*args)
            else:
                reply = await asyncio.to_thread(self.fn, *args)
                if inspect.isawaitable(reply):
                    reply = await reply
        except VeriloopError:
            raise
        except Exception as exc:
            raise VeriloopError(f"model function {self.name} raised {type(exc).__name__}: {exc}") from exc
        seconds = time.perf_counter() - started
        if isinstance(reply, Completion):
            reply.seconds = reply.seconds or seconds
            return reply
        if isinstance(reply, str):
            # Token counts are unknown for a bare string; 0 says so rather than guessing.
            return Completion(text=reply, finish_reason="stop", prompt_tokens=0, completion_tokens=0, seconds=seconds)
        raise VeriloopError(
            f"model function {self.name} returned {type(reply).__name__}; return the reply text (str) or a "
            "veriloop.Completion"
        )

    async def aclose(self) -> None:
        """Nothing to close: the function and what it holds belong to the caller."""


def _takes_second_argument(fn: Callable[..., Any]) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = [
        p for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values())
    return variadic or len(positional) >= 2
