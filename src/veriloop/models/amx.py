"""Keep llama.cpp's AMX matrix kernels out of every model veriloop loads.

llama.cpp built for the machine it compiles on (`GGML_NATIVE`, what pip's source build
does) adds an "AMX" buffer type on Intel CPUs with Advanced Matrix Extensions (Sapphire
Rapids and later). Weights placed in it are multiplied by `ggml_backend_amx_mul_mat`,
which crashes the process with a segmentation fault on such machines (seen here on
2026-11-25 with llama-cpp-python 0.3.36 and SmolLM2 Q4_1 on a prompt of a few hundred
tokens, in the sequential and the batched path alike; upstream: ggml-org/llama.cpp#20824,
open without a fix, and DSPy's CI removed the AMX variant for the same crash).

The weights' placement is chosen when the model loads, by the model parameter
`use_extra_bufts`; llama-cpp-python's `Llama` does not expose it, so while a model loads
`without_amx()` hands `Llama` default parameters with it off. That also turns off
llama.cpp's other weight repacking, so it is done only when the library was built with
the AMX kernels (`ggml_cpu_has_amx_int8`): on every other machine loading is unchanged.

`python -m veriloop.models.amx ARGS` runs `python -m llama_cpp.server ARGS` the same way,
for the tests' server and for users who serve a pack to veriloop's openai backend.
"""

from __future__ import annotations

import ctypes
import functools
import runpy
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_patching = threading.Lock()


@functools.cache
def built_with_amx() -> bool:
    """Whether the installed llama.cpp has the AMX kernels (and so may put weights in them)."""
    import llama_cpp

    for library in sorted((Path(llama_cpp.__file__).parent / "lib").glob("libggml-cpu.so*")):
        try:
            has_amx = ctypes.CDLL(str(library)).ggml_cpu_has_amx_int8
        except (OSError, AttributeError):
            continue
        has_amx.restype = ctypes.c_int
        return bool(has_amx())
    return False


@contextmanager
def without_amx() -> Iterator[None]:
    """Inside the block, a `Llama` loads its weights without the AMX buffer type."""
    if not built_with_amx():
        yield
        return
    import llama_cpp.llama_cpp as c

    with _patching:
        default = c.llama_model_default_params

        def params() -> Any:
            p = default()
            p.use_extra_bufts = False
            return p

        c.llama_model_default_params = params
        try:
            yield
        finally:
            c.llama_model_default_params = default


def main() -> None:
    from ..errors import VeriloopError
    from ..extras import require

    try:
        require("local", "python -m veriloop.models.amx (llama.cpp's server)")
    except VeriloopError as exc:
        sys.exit(f"error: {exc}")
    sys.argv[0] = "llama_cpp.server"
    with without_amx():  # the server loads its model before it serves, inside the block
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
