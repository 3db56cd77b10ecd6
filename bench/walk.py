"""How far a command's `model` travels before a model call, and how much of the engine
the command wires itself.

Three counts, for `veriloop run` (in this process, through the CLI's own main) and for
`veriloop.correct` (the baseline, measured in the same run):
- wired: the veriloop functions the entrance's own body calls (cli/run.py:run;
  api.py:acorrect): the parts it joins by hand instead of handing a spec to one door;
- loading: the stack where the model id becomes a model (load_backend for `run`;
  as_model for `correct`, which is handed a function);
- calling: the stack at the model call. The backend is replaced by one whose `generate`
  raises (every other part is the real one); the traceback that reaches the entrance is
  the walk through every await and thread hop (a stack taken inside the call would start
  at its asyncio task).
For each stack: its veriloop frames, the modules they lie in, and how often it goes back
into a module it had left; then the ratio of `run`'s modules to `correct`'s.

    python bench/walk.py                                 # this checkout
    PYTHONPATH=/path/to/other/src python bench/walk.py   # another version, to compare

Nothing here depends on the machine's speed: the figures are counts.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import threading
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


WIRED: list[str] = []  # what the entrance's own body calls of veriloop, in order
ENTRANCE: set[tuple[str, str]] = set()  # (module path, function) of the entrance: cli/run.py run, api.py acorrect


def profile(frame: Any, event: str, arg: Any) -> None:
    """Each veriloop function the entrance's body calls itself: the parts it wires by hand."""
    caller = frame.f_back
    if (event == "call" and caller is not None and caller.f_code.co_filename.startswith(PACKAGE)
            and (str(Path(caller.f_code.co_filename).relative_to(PACKAGE)), caller.f_code.co_name) in ENTRANCE
            and frame.f_code.co_filename.startswith(PACKAGE)
            and not frame.f_code.co_name.startswith("<")):
        WIRED.append(f"{Path(frame.f_code.co_filename).relative_to(PACKAGE)}:{frame.f_code.co_name}")


def walk(call: Any) -> list[tuple[str, str]]:
    """The veriloop frames `call()` went through to Reached, as (module path, function), entrance first."""
    WIRED.clear()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        call()
    except Reached as reached:
        stack = traceback.extract_tb(reached.__traceback__)
    else:
        raise SystemExit("the model was never called")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return frames_of(stack)


def wired(title: str) -> int:
    parts = list(dict.fromkeys(WIRED))
    print(f"{title}: its body calls {len(parts)} veriloop functions itself")
    for part in parts:
        print(f"    {part}")
    return len(parts)


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
            ENTRANCE.clear()
            ENTRANCE.add(("cli/run.py", "run"))
            run_frames = walk(cli_main)
    wired("veriloop run (cli/run.py:run)")
    run_load = show("veriloop run, loading", LOADS.pop())
    run_modules = show("veriloop run, calling", run_frames)

    def answer(messages: Any) -> str:
        raise Reached

    import veriloop.api

    veriloop.api.as_model = loads(veriloop.api.as_model)  # type: ignore[attr-defined]
    ENTRANCE.clear()
    ENTRANCE.add(("api.py", "acorrect"))
    correct_frames = walk(lambda: veriloop.correct(
        answer, "What is 1 + 1?", check=lambda prompt, reply: reply.strip() == "2", cache=False))
    wired("veriloop.correct (api.py:acorrect)")
    correct_load = show("veriloop.correct, loading", LOADS.pop())
    correct_modules = show("veriloop.correct, calling", correct_frames)
    print(f"modules crossed (loading + calling): run {run_load} + {run_modules}, correct {correct_load} + "
          f"{correct_modules} (baseline); ratio {(run_load + run_modules) / (correct_load + correct_modules):.2f}")


if __name__ == "__main__":
    main()
