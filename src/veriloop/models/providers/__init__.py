"""The providers a server model can speak, by the prefix of its id: `openai/` (OpenAI and
any OpenAI-compatible server), `anthropic/`, `google/`, `vllm/`, `ollama/`, and any a
plugin adds through the entry point group `veriloop.providers` (a `Provider` subclass).

Entries are lazy "module:attr" paths: naming the providers imports none of them, and
`import veriloop` imports no provider module (tests/test_layers.py, the start-up tests).
"""

from __future__ import annotations

from ...registry import Registry
from .base import REASONING_EFFORTS, Damaged, Provider, Request, Reshape, Supports, WrongShape, apportion

PROVIDERS: Registry[type[Provider]] = Registry("provider", "veriloop.providers")
PROVIDERS.register("openai", "veriloop.models.providers.openai:OpenAIProvider")
PROVIDERS.register("anthropic", "veriloop.models.providers.anthropic:AnthropicProvider")
PROVIDERS.register("google", "veriloop.models.providers.google:GoogleProvider")
PROVIDERS.register("vllm", "veriloop.models.providers.vllm:VLLMProvider")
PROVIDERS.register("ollama", "veriloop.models.providers.ollama:OllamaProvider")


def provider_prefix(model_id: str) -> str | None:
    """The provider prefix of a server model id ("anthropic" for "anthropic/claude-x"), or
    None for a local model (a pack, a .gguf path, llamacpp/...)."""
    prefix, slash, rest = model_id.partition("/")
    return prefix if slash and rest and prefix in PROVIDERS else None


def limits_of(model_id: str | None, reasoning_effort: str | None = None) -> list[str]:
    """What the model of this id will not do that a strategy may ask of it (e.g. greedy
    decoding), known without a call; [] for a local model."""
    prefix = provider_prefix(model_id) if model_id else None
    if prefix is None or model_id is None:
        return []
    return PROVIDERS.lookup(prefix)(model_id.partition("/")[2], reasoning_effort).limits()


__all__ = ["PROVIDERS", "REASONING_EFFORTS", "Damaged", "Provider", "Request", "Reshape", "Supports", "WrongShape", "apportion",
           "limits_of", "provider_prefix"]
