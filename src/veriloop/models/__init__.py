"""Model ids and loading.

Ids: a pack name (`qwen2.5-coder-1.5b`), `llamacpp/<pack or path.gguf>`, a path to any
`.gguf` file, or `openai/<model>` for an OpenAI-compatible server (with --base-url).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import VeriloopError
from ..paths import default_cache_path
from .base import Completion, GenParams, Message, Model, TokenLogprob
from .cache import CachedModel, CallCache
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


def load_backend(model_id: str, base_url: str | None = None, api_key: str | None = None) -> Model:
    """The bare backend for an id, without the cache."""
    if model_id.startswith("openai/"):
        from .openai_compat import OpenAICompatModel

        return OpenAICompatModel(model_id.removeprefix("openai/"), base_url=base_url, api_key=api_key)
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
    return LlamaCppModel(path, identity=identity, name=name)


def load_model(
    model_id: str,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_path: Path | None = None,
    use_cache: bool = True,
) -> Model:
    """A backend wrapped in the call cache (unless use_cache is False)."""
    backend = load_backend(model_id, base_url=base_url, api_key=api_key)
    if not use_cache:
        return backend
    return CachedModel(backend, CallCache(cache_path or default_cache_path()))


__all__ = [
    "DEFAULT_MODEL",
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
