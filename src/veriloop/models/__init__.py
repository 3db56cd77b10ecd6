"""Model ids and loading.

Ids: a pack name (`qwen2.5-coder-1.5b`), `llamacpp/<pack or path.gguf>`, a path to any
`.gguf` file, or `openai/<model>` for an OpenAI-compatible server (with --base-url).
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any

from ..errors import VeriloopError
from ..paths import default_cache_path
from ..records import Message
from .base import Completion, GenParams, Model, TokenLogprob
from .cache import CachedModel, CallCache
from .function import FunctionModel
from .packs import DEFAULT_MODEL, PACKS, file_identity, verified_pack_path

GGUF_MAGIC = b"GGUF"


def _gguf_path(spec: str) -> Path:
    path = Path(spec).expanduser()
    if not path.is_file():
        raise VeriloopError(f"model file {path} does not exist; give a .gguf path or one of: {', '.join(PACKS)}")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise VeriloopError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise VeriloopError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")
    return path


def load_backend(
    model_id: str, base_url: str | None = None, api_key: str | None = None, threads: int | None = None,
    context: int | None = None, concurrency: int | None = None, deployment: str | None = None,
    retry_budget: float | None = None, stall_timeout: float | None = None, attempt_timeout: float | None = None,
    max_reply_bytes: int | None = None,
) -> Model:
    """The bare backend for an id, without the cache. `threads`: llama.cpp's threads (default
    $VERILOOP_THREADS, else the CPU count) and `context` its context size in tokens; a
    server model has neither to set. `concurrency`: trajectories at once on the model (for
    a server, also its requests in flight). `deployment`, `retry_budget`, `stall_timeout`,
    `attempt_timeout` and `max_reply_bytes` are a server model's (see OpenAICompatModel)."""
    server_options = {"a deployment name": deployment, "a retry budget": retry_budget,
                      "a stall timeout": stall_timeout, "an attempt timeout": attempt_timeout,
                      "a reply size limit": max_reply_bytes}
    if model_id.startswith("openai/"):
        from .openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            model_id.removeprefix("openai/"), base_url=base_url, api_key=api_key, concurrency=concurrency or 8,
            deployment=deployment, retry_budget=retry_budget, stall_timeout=stall_timeout,
            attempt_timeout=attempt_timeout, max_reply_bytes=max_reply_bytes,
        )
    for what, value in server_options.items():
        if value is not None:
            raise VeriloopError(f"{what} applies to a server model (openai/<model>), not to {model_id!r}")
    spec = model_id.removeprefix("llamacpp/")
    if spec in PACKS:
        path, identity, name = verified_pack_path(spec), PACKS[spec].sha256, spec
    elif spec.endswith(".gguf") or Path(spec).expanduser().is_file():
        path = _gguf_path(spec)
        identity, name = file_identity(path), path.name
    else:
        raise VeriloopError(
            f"unknown model {model_id!r}; use a pack ({', '.join(PACKS)}), a path to a .gguf file, "
            "or openai/<model> with --base-url"
        )
    try:
        from .llamacpp import LlamaCppModel
    except ImportError:
        raise VeriloopError("llama-cpp-python is not installed; run the set-up command in the README") from None
    model = LlamaCppModel(path, identity=identity, name=name, threads=threads, **({"n_ctx": context} if context else {}))
    if concurrency is not None:
        model.preferred_concurrency = concurrency
    return model


def load_model(
    model_id: str,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_path: Path | None = None,
    use_cache: bool = True,
    threads: int | None = None,
    context: int | None = None,
    concurrency: int | None = None,
    deployment: str | None = None,
    retry_budget: float | None = None,
    stall_timeout: float | None = None,
    attempt_timeout: float | None = None,
    max_reply_bytes: int | None = None,
) -> Model:
    """A backend wrapped in the call cache (unless use_cache is False)."""
    backend = load_backend(
        model_id, base_url=base_url, api_key=api_key, threads=threads, context=context, concurrency=concurrency,
        deployment=deployment, retry_budget=retry_budget, stall_timeout=stall_timeout,
        attempt_timeout=attempt_timeout, max_reply_bytes=max_reply_bytes,
    )
    if not use_cache:
        return backend
    return CachedModel(backend, CallCache(cache_path or default_cache_path()))


class VeriloopWarning(UserWarning):
    """Something the user may want to know that does not stop the run (e.g. the call
    cache is off for a model with no identity)."""


def is_model(obj: object) -> bool:
    """Whether obj already follows the Model protocol (async generate + identity, backend,
    name, preferred_concurrency)."""
    return all(hasattr(obj, a) for a in ("backend", "identity", "name", "preferred_concurrency", "aclose")) and (
        inspect.iscoroutinefunction(getattr(obj, "generate", None))
    )


def as_model(
    spec: Any,
    *,
    model_name: str | None = None,
    name: str | None = None,
    identity: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    cache: bool | str | Path | CallCache = True,
    concurrency: int | None = None,
    threads: int | None = None,
    deployment: str | None = None,
    retry_budget: float | None = None,
    stall_timeout: float | None = None,
    attempt_timeout: float | None = None,
    max_reply_bytes: int | None = None,
) -> Model:
    """A Model from whatever names or wraps one:

    - a model id string (a pack name, a .gguf path, `openai/<model>` with `base_url`);
    - an object that follows the Model protocol (returned as it is, cached if asked);
    - an `openai.AsyncOpenAI` client, with `model_name` (or a `(client, model_name)` pair);
    - a function `messages -> str` (or `(messages, params) -> str | Completion`), sync or
      async, or an object with such a `generate` method: see FunctionModel. Give it an
      `identity` to cache its calls; without one the cache is off (with a warning).

    `cache`: True for the default call cache, a path or a CallCache for another, False
    for none. `concurrency` overrides how many trajectories may use the model at once.
    `threads`: how many threads a local (llama.cpp) model computes with (default
    $VERILOOP_THREADS, else the CPU count). For a server model (an `openai/` id or a
    client): `deployment` names the server in the cache identity instead of its base URL
    (several URLs of one deployment then share cached answers), `retry_budget` is how many
    seconds its faults are retried (default 120); an attempt is abandoned, as a fault, after
    `stall_timeout` seconds without a byte (default 60), after `attempt_timeout` seconds in
    all (default 600), or when the reply exceeds `max_reply_bytes` (default 8 MiB).
    """
    server: dict[str, Any] = dict(retry_budget=retry_budget, stall_timeout=stall_timeout,
                                  attempt_timeout=attempt_timeout, max_reply_bytes=max_reply_bytes)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str):
        spec, model_name = spec
    backend: Any
    if isinstance(spec, CachedModel):
        return spec
    if isinstance(spec, str):
        backend = load_backend(spec, base_url=base_url, api_key=api_key, threads=threads, deployment=deployment,
                               **server)
    elif _is_sync_openai_client(spec):
        raise VeriloopError(
            "veriloop calls models asynchronously: give an openai.AsyncOpenAI client (or wrap your openai.OpenAI "
            "call in a function messages -> str)"
        )
    elif _is_openai_client(spec):
        if not model_name:
            raise VeriloopError("an OpenAI client needs the model's name: model_name='...' or (client, 'model-name')")
        from .openai_compat import OpenAICompatModel

        backend = OpenAICompatModel(model_name, client=spec, concurrency=concurrency or 8, deployment=deployment,
                                    **server)
    elif is_model(spec):
        backend = spec
    elif callable(getattr(spec, "generate", None)):
        backend = FunctionModel(spec.generate, name=name or type(spec).__name__,
                                identity=identity or getattr(spec, "identity", None), concurrency=concurrency or 1)
    elif callable(spec):
        backend = FunctionModel(spec, name=name, identity=identity, concurrency=concurrency or 1)
    else:
        raise VeriloopError(
            f"cannot use a {type(spec).__name__} as a model: give a model id, a function messages -> str, "
            "an object with generate(), or an openai.AsyncOpenAI client with model_name"
        )
    if concurrency is not None:
        backend.preferred_concurrency = concurrency
    if cache is False:
        return backend  # type: ignore[no-any-return]
    if not getattr(backend, "identity", None):
        warnings.warn(
            f"the call cache is off for model {backend.name!r}: it declares no identity, so its answers could not "
            "be told apart from another model's; pass identity='...' to cache and replay its calls",
            VeriloopWarning,
            stacklevel=2,
        )
        return backend  # type: ignore[no-any-return]
    store = cache if isinstance(cache, CallCache) else CallCache(Path(cache) if not isinstance(cache, bool) else default_cache_path())
    return CachedModel(backend, store)


def _is_openai_client(obj: object) -> bool:
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a dependency
        return False
    return isinstance(obj, openai.AsyncOpenAI)


def _is_sync_openai_client(obj: object) -> bool:
    import openai

    return isinstance(obj, openai.OpenAI)


__all__ = [
    "DEFAULT_MODEL",
    "FunctionModel",
    "VeriloopWarning",
    "as_model",
    "is_model",
    "CachedModel",
    "CallCache",
    "Completion",
    "GenParams",
    "Message",
    "Model",
    "TokenLogprob",
    "load_backend",
    "load_model",
]
