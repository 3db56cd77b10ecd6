"""Model ids and loading.

Ids: a pack name (`qwen2.5-coder-1.5b`), `llamacpp/<pack or path.gguf>`, a path to any
`.gguf` file, or `<provider>/<model>` for a model behind an API: `openai/` (OpenAI or any
OpenAI-compatible server, with --base-url), `anthropic/`, `google/`, `vllm/`, `ollama/`
(models.providers). A local id runs in this process on llama.cpp, the extra `local`:
loading one without it is one MissingExtra line, before the model file is looked at.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import VeriloopError
from ..extras import require
from ..paths import default_cache_path
from ..records import Message
from .base import Completion, GenParams, Model, TokenLogprob
from .cache import CachedModel, CallCache
from .capped import CappedModel, with_cap
from .function import FunctionModel
from .packs import DEFAULT_MODEL, PACKS, file_identity, verified_pack_path
from .settings import ModelSettings

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


def load_backend(model: str | ModelSettings, *, api_key: str | None = None, **settings: Any) -> Model:
    """The bare backend of a model, without the cache: `model` is its id or its
    ModelSettings, `settings` more of them by field name (threads, context, concurrency,
    base_url, deployment, retry_budget, stall_timeout, attempt_timeout, max_reply_bytes,
    max_reply_tokens: see ModelSettings for each). `api_key`: a server model's key (never a
    setting). Under a reply cap (max_reply_tokens, or $VERILOOP_MAX_REPLY_TOKENS) the
    backend comes inside a capped.CappedModel."""
    chosen = ModelSettings.of(model, **settings)
    if chosen.id is None:
        raise VeriloopError("a model to load needs its id: a pack, a .gguf path or openai/<model>")
    model_id = chosen.id
    if chosen.is_server:
        from .openai_compat import ServerModel
        from .providers import PROVIDERS

        prefix, _, name = model_id.partition("/")
        provider = PROVIDERS.lookup(prefix)(name, chosen.reasoning_effort)
        live = ServerModel(name, base_url=chosen.base_url, api_key=api_key, provider=provider,
                           concurrency=chosen.concurrency or 8, **chosen.server_settings())
        if not chosen.batch:
            return with_cap(live, chosen.max_reply_tokens)
        return with_cap(_batch_of(live, chosen), chosen.max_reply_tokens)
    chosen.check_applies()
    spec = model_id.removeprefix("llamacpp/")
    if spec not in PACKS and not (spec.endswith(".gguf") or Path(spec).expanduser().is_file()):
        raise VeriloopError(
            f"unknown model {model_id!r}; use a pack ({', '.join(PACKS)}), a path to a .gguf file, "
            "or a model behind an API: " + ", ".join(f"{name}/<model>" for name in _provider_names())
        )
    # Before the file is looked at: without llama.cpp, installing or fixing it would not help.
    require("local", f"the local model {model_id!r}")
    if spec in PACKS:
        path, identity, name = verified_pack_path(spec), PACKS[spec].sha256, spec
    else:
        path = _gguf_path(spec)
        identity, name = file_identity(path), path.name
    from .llamacpp import LlamaCppModel
    context = {"n_ctx": chosen.context} if chosen.context else {}
    backend = LlamaCppModel(path, identity=identity, name=name, threads=chosen.threads, **context)
    if chosen.concurrency is not None:
        backend.preferred_concurrency = chosen.concurrency
    return with_cap(backend, chosen.max_reply_tokens)


def load_model(
    model: str | ModelSettings, *, api_key: str | None = None, cache_path: Path | None = None,
    use_cache: bool = True, **settings: Any,
) -> Model:
    """A backend (as load_backend loads it) wrapped in the call cache at `cache_path`
    (default: $VERILOOP_HOME/calls.sqlite), unless use_cache is False."""
    backend = load_backend(model, api_key=api_key, **settings)
    if not use_cache:
        return backend
    return CachedModel(backend, CallCache(cache_path or default_cache_path()))


def _batch_of(live: Any, chosen: ModelSettings) -> Model:
    """The batch model of a server model: the same provider, URL, key and identity (so its
    answers and the live model's share the call cache), the calls sent by batch."""
    from .batch.apis import BATCH_APIS
    from .batch.model import batch_model_of

    provider = live.provider
    if provider.prefix not in BATCH_APIS:
        raise VeriloopError(f"{provider.title} has no batch API that veriloop speaks; batch mode is for "
                            f"{' and '.join(f'{p}/' for p in BATCH_APIS)} models: drop --batch (batch = true)")
    client = live._client
    key = str(client.api_key) if client.api_key and client.api_key != "not-needed" else None
    # Many trajectories at once is what puts their calls in one batch: an explicit
    # concurrency still bounds them.
    return batch_model_of(provider, base_url=str(client.base_url), api_key=key, identity=live.identity,
                          backend=live.backend, poll_seconds=chosen.batch_poll_seconds, concurrency=chosen.concurrency,
                          retry_budget=chosen.retry_budget)


def _provider_names() -> list[str]:
    from .providers import PROVIDERS

    return list(PROVIDERS)


class VeriloopWarning(UserWarning):
    """Something the user may want to know that does not stop the run.

    For example: the call cache is off for a model with no identity. It is a
    `UserWarning`, so the `warnings` module's filters select it by this class.

    Examples:
        ```python
        import warnings

        import veriloop

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            veriloop.model(lambda messages: "8")  # no identity, so no call cache
        assert [w.category for w in caught] == [veriloop.VeriloopWarning]
        print(caught[0].message)
        ```
    """


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
    api_key: str | None = None,
    cache: bool | str | Path | CallCache = True,
    **settings: Any,
) -> Model:
    """A Model from whatever names or wraps one:

    - a model id string (a pack name, a .gguf path, `openai/<model>` with `base_url`);
    - an object that follows the Model protocol (returned as it is, cached if asked);
    - an `openai.AsyncOpenAI` client, with `model_name` (or a `(client, model_name)` pair);
    - a function `messages -> str` (or `(messages, params) -> str | Completion`), sync or
      async, or an object with such a `generate` method: see FunctionModel. Give it an
      `identity` to cache its calls; without one the cache is off (with a warning).

    `cache`: True for the default call cache, a path or a CallCache for another, False
    for none. `settings`: the model's settings by name, as ModelSettings' fields
    (models/settings.py says each one and its default). `concurrency` overrides how many
    trajectories may use the model at once. `threads` and `context`: a local (llama.cpp)
    model's threads and context size. `max_reply_tokens`: the most tokens any one reply
    may have (a model loaded by id takes $VERILOOP_MAX_REPLY_TOKENS when it is not given).
    For a server model (an `openai/` id or a client):
    `base_url`, `deployment` (its name in the cache identity instead of the base URL, so
    several URLs of one deployment share cached answers), `retry_budget` (seconds its
    faults are retried, default 120), and the limits after which an attempt is abandoned
    as a fault: `stall_timeout` seconds without a byte (default 60), `attempt_timeout`
    seconds in all (default 600), a reply over `max_reply_bytes` (default 8 MiB).
    """
    chosen = ModelSettings.of(None, **settings)
    concurrency = chosen.concurrency
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str):
        spec, model_name = spec
    backend: Any
    if isinstance(spec, CachedModel):
        return spec
    if isinstance(spec, str):
        backend = load_backend(spec, api_key=api_key, **settings)
    elif _is_sync_openai_client(spec):
        raise VeriloopError(
            "veriloop calls models asynchronously: give an openai.AsyncOpenAI client (or wrap your openai.OpenAI "
            "call in a function messages -> str)"
        )
    elif _is_openai_client(spec):
        if not model_name:
            raise VeriloopError("an OpenAI client needs the model's name: model_name='...' or (client, 'model-name')")
        from .openai_compat import OpenAICompatModel

        backend = OpenAICompatModel(model_name, client=spec, concurrency=concurrency or 8, **chosen.server_settings())
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
    if chosen.max_reply_tokens is not None and not isinstance(spec, str):  # load_backend capped a model id
        backend = CappedModel(backend, chosen.max_reply_tokens)
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
    if isinstance(cache, CallCache):  # the caller's: it stays open when this model closes
        return CachedModel(backend, cache, owns_cache=False)
    return CachedModel(backend, CallCache(Path(cache) if not isinstance(cache, bool) else default_cache_path()))


def _openai_client_class(name: str) -> type | None:
    """openai's `name` class if the caller has imported openai, else None. An object can
    only be an openai client once openai is imported, so a plain function given to
    `model()` does not pay for importing the SDK (0.5-1 s of CPU)."""
    openai = sys.modules.get("openai")
    return getattr(openai, name, None) if openai is not None else None


def _is_openai_client(obj: object) -> bool:
    client = _openai_client_class("AsyncOpenAI")
    return client is not None and isinstance(obj, client)


def _is_sync_openai_client(obj: object) -> bool:
    client = _openai_client_class("OpenAI")
    return client is not None and isinstance(obj, client)


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
    "ModelSettings",
    "TokenLogprob",
    "load_backend",
    "load_model",
]
