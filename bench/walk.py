"""How far a command's `model` travels before a model call: the call stack at the backend.

Two parts make the walk: the stack where the model id becomes a model (load_backend for
`run`, as_model for `correct`, which is handed a function), and the stack at the model
call. For the second, the backend is replaced by one whose `generate` raises (every other part is the real
one), then `veriloop run` (in this process, through the CLI's own main) and
`veriloop.correct` each make one call; the traceback that reaches the entrance is the
walk, through every await and thread hop (a stack taken inside the call would start at
its asyncio task). Printed for each: the veriloop frames
from the entrance to the call, the modules they lie in, and how often the walk goes back
to a module it had left; then the ratio of `run`'s modules to `correct`'s, the baseline
measured in the same run.

    python bench/walk.py            # this checkout
    PYTHONPATH=/path/to/old/src python bench/walk.py   # another version, to compare

Nothing here depends on the machine's speed: the figures are counts.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import veriloop
import veriloop.models as models
from veriloop.models.base import Completion

PACKAGE = str(Path(veriloop.__file__).parent)


class Reached(BaseException):
    """Raised at the model call; a BaseException, so no `except Exception` on the way stops it."""


class StackTaker:
    """A backend whose call raises Reached."""

    backend = "bench"
    identity = "bench-walk"
    name = "bench-walk"
    preferred_concurrency = 1

    async def generate(self, messages: Any, params: Any) -> list[Completion]:
        raise Reached

    async def aclose(self) -> None:
        pass


def walk(call: Any) -> list[tuple[str, str]]:
    """The veriloop frames `call()` went through to Reached, as (module path, function), entrance first."""
    try:
        call()
    except Reached as reached:
        stack = traceback.extract_tb(reached.__traceback__)
    else:
        raise SystemExit("the model was never called")
    return frames_of(stack)


LOADS: list[list[tuple[str, str]]] = []


def frames_of(stack: list[traceback.FrameSummary]) -> list[tuple[str, str]]:
    return [(str(Path(f.filename).relative_to(PACKAGE)), f.name) for f in stack if f.filename.startswith(PACKAGE)]


def loads(real: Any) -> Any:
    """`real`, keeping the stack of each call."""

    def keeping(*args: Any, **kwargs: Any) -> Any:
        LOADS.append(frames_of(traceback.extract_stack()[:-1]))
        return real(*args, **kwargs)

    return keeping


def show(title: str, frames: list[tuple[str, str]]) -> int:
    modules: list[str] = []
    returns = 0
    for path, _ in frames:
        if modules and modules[-1] == path:
            continue
        if path in modules:
            returns += 1
        modules.append(path)
    print(f"{title}: {len(frames)} veriloop frames, {len(set(modules))} modules, {returns} returns to a module left")
    for path, function in frames:
        print(f"    {path}:{function}")
    return len(set(modules))


def main() -> None:
    models.load_backend = loads(lambda *args, **kwargs: StackTaker())  # type: ignore[assignment]
    from veriloop.cli import main as cli_main

    with tempfile.TemporaryDirectory() as tmp:
        sys.argv = ["veriloop", "run", "-n", "1", "-s", "standard", "--no-cache", "--out", f"{tmp}/run"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run_frames = walk(cli_main)
    run_load = show("veriloop run, loading", LOADS.pop())
    run_modules = show("veriloop run, calling", run_frames)

    def answer(messages: Any) -> str:
        raise Reached

    import veriloop.api

    veriloop.api.as_model = loads(veriloop.api.as_model)  # type: ignore[attr-defined]
    correct_frames = walk(lambda: veriloop.correct(
        answer, "What is 1 + 1?", check=lambda prompt, reply: reply.strip() == "2", cache=False))
    correct_load = show("veriloop.correct, loading", LOADS.pop())
    correct_modules = show("veriloop.correct, calling", correct_frames)
    print(f"modules crossed (loading + calling): run {run_load} + {run_modules}, correct {correct_load} + "
          f"{correct_modules} (baseline); ratio {(run_load + run_modules) / (correct_load + correct_modules):.2f}")


if __name__ == "__main__":
    main()
