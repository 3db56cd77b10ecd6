"""A check is a plain function: `check(instance, answer)` says whether an answer is right.

It may return
- a `bool` (no error text: feedback levels `first` and `all` can only say "wrong"),
- a `str`: the error to feed back ("" means correct),
- a list of such strings (every error; `first` feeds back the first, `all` all of them),
- a `Verdict`, for full control (score, malformed, error kinds),

and may be sync or async. `FunctionCheck` turns such a function into a verifier, so it is
accepted wherever a verifier name is (backprompt, sampling, best-of-n, selfcheck's gate).
`load_check` finds one from the command line (`pkg.module:fn`, `python:path/file.py:fn`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .errors import VeriloopError, invalid_options_text
from .records import Instance, Verdict, VerdictError

if TYPE_CHECKING:
    from .episode import Episode

CheckResult = bool | str | Sequence[str] | Verdict
CheckFunction = Callable[[Any, Any], CheckResult | Awaitable[CheckResult]]

# The error kind a check's own messages carry in a verdict.
CHECK_ERROR_KIND = "check"


class CheckError(VeriloopError):
    """A user's check raised, or returned something that is not a verdict."""


def function_name(fn: Callable[..., Any]) -> str:
    """`module:qualname` for a function, the class name for a callable object."""
    module = getattr(fn, "__module__", None) or "?"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}"


def as_verdict(result: object, name: str) -> Verdict:
    """The verdict a check's return value stands for; CheckError for anything else."""
    if isinstance(result, Verdict):
        return result if result.verifier != "sound" else result.model_copy(update={"verifier": name})
    if isinstance(result, bool):
        return Verdict(ok=result, verifier=name)
    if isinstance(result, str):
        message = result.strip()
        errors = [VerdictError(kind=CHECK_ERROR_KIND, message=message)] if message else []
        return Verdict(ok=not errors, errors=errors, verifier=name)
    if isinstance(result, (list, tuple)) and all(isinstance(e, str) for e in result):
        errors = [VerdictError(kind=CHECK_ERROR_KIND, message=e.strip()) for e in result if e.strip()]
        return Verdict(ok=not errors, errors=errors, verifier=name)
    raise CheckError(
        f"check {name} returned {type(result).__name__} {_short(repr(result))}; return a bool, an error string "
        "('' when correct), a list of error strings, or a veriloop.Verdict"
    )


class FunctionCheck:
    """A check function as a verifier. `name` labels it in strategy names and records
    (default: the function's `module:qualname`)."""

    def __init__(self, fn: CheckFunction, name: str | None = None) -> None:
        if not callable(fn):
            raise CheckError(f"a check must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.name = name or function_name(fn)

    def __repr__(self) -> str:
        return f"FunctionCheck({self.name})"

    async def check(self, instance: Instance, user_instance: Any, answer: Any) -> Verdict:
        """Run the function on what the user sees of the instance and the answer."""
        try:
            result = self.fn(user_instance, answer)
            if inspect.isawaitable(result):
                result = await result
        except VeriloopError:
            raise
        except ValidationError as exc:
            # Most often a Verdict built with a wrong value: name the field and what it takes.
            raise CheckError(
                f"check {self.name} built an invalid {exc.title} on instance {instance.id!r}: "
                + invalid_options_text(exc, exc.title, (), noun="field")
            ) from exc
        except Exception as exc:
            raise CheckError(
                f"check {self.name} raised on instance {instance.id!r}: {type(exc).__name__}: {_short(str(exc))}"
            ) from exc
        return as_verdict(result, self.name)

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        domain, instance = episode.domain, episode.instance
        answer = domain.extract_answer(instance, text)
        user_instance = getattr(domain, "user_instance", lambda i: i)(instance)
        return await self.check(instance, user_instance, text if answer is None else answer)


def is_check_function(obj: object) -> bool:
    """A plain callable that is not already a verifier (which has `verify`)."""
    return callable(obj) and not hasattr(obj, "verify")


# Modules loaded from a check's file: no other process can import them by name, so a Ray
# worker gets their functions by value (the driver registers them with Ray's pickler).
CHECK_FILES: set[str] = set()


def load_check(spec: str) -> Callable[..., Any]:
    """The function named by `pkg.module:function` or `python:path/to/file.py:function`."""
    if spec.startswith("python:"):
        location, sep, attr = spec.removeprefix("python:").rpartition(":")
        if not sep or not location or not attr:
            raise VeriloopError(f"--check {spec!r} should look like python:path/to/file.py:function")
        path = Path(location).expanduser()
        if not path.is_file():
            raise VeriloopError(f"--check {spec!r}: {path} is not a file")
        # A stable module name: the check's label (module:function) names it in records.
        module_name = path.stem if path.stem.isidentifier() else "user_check"
        loaded = sys.modules.get(module_name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path.resolve():
            module_name = f"veriloop_check_{module_name}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise VeriloopError(f"--check {spec!r}: {path} cannot be loaded as a Python file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise VeriloopError(f"--check {spec!r}: importing {path} failed: {type(exc).__name__}: {exc}") from None
        CHECK_FILES.add(module_name)
    else:
        module_path, sep, attr = spec.partition(":")
        if not sep or not module_path or not attr:
            raise VeriloopError(
                f"--check {spec!r} should look like package.module:function or python:path/to/file.py:function"
            )
        try:
            module = importlib.import_module(module_path)
        except Exception as exc:
            raise VeriloopError(f"--check {spec!r}: cannot import {module_path}: {type(exc).__name__}: {exc}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise VeriloopError(f"--check {spec!r}: {module.__name__} has no {attr!r}")
    if not callable(fn):
        raise VeriloopError(f"--check {spec!r}: {attr} is a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
