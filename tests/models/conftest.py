import json
from collections.abc import Iterator
from typing import Any

import pytest

from veriloop.models.base import Completion, GenParams
from veriloop.models.capped import CAP_ENV
from veriloop.models.providers.base import Damaged, Provider, Request, Supports


@pytest.fixture(scope="module", autouse=True)
def uncapped_replies() -> Iterator[None]:
    """The backends' own tests get replies as long as each call asks: the suite's reply cap
    (VERILOOP_MAX_REPLY_TOKENS, tests/conftest.py) is lifted for them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(CAP_ENV, raising=False)
        yield


# ---------------------------------------------------------------- batch mode (test_batch*.py)

class ChatProvider(Provider):
    """OpenAI's chat completions, at their simplest: the provider the batch tests use
    until providers/openai.py lands (it follows the same contract)."""

    prefix = "openai"
    title = "OpenAI"
    supports = Supports(seed=True, n=True, batch=True)

    def request(self, messages: list[Any], params: GenParams, first: int, count: int) -> Request:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": params.max_tokens,
                                "temperature": params.temperature, "n": count}
        if params.sample_seed(first) is not None:
            body["seed"] = params.sample_seed(first)
        return Request("/chat/completions", body, {k: v for k, v in body.items() if k != "messages"})

    def replies(self, data: Any, count: int, params: GenParams) -> list[Completion]:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or len(choices) != count:
            raise Damaged(f"{count} choices expected: {json.dumps(data)[:80]}")
        usage = data.get("usage") or {}
        return [Completion(text=c["message"]["content"] or "", finish_reason=c.get("finish_reason") or "stop",
                           prompt_tokens=usage.get("prompt_tokens", 0) if i == 0 else 0,
                           completion_tokens=usage.get("completion_tokens", 0) // count)
                for i, c in enumerate(choices)]


@pytest.fixture
def batch_model() -> Any:
    """A factory: the batch model on a stand-in's base URL behind a call cache at `cache`
    (what `--batch` loads), looking at its batches every 10 ms."""
    from veriloop.models.batch import BatchModel
    from veriloop.models.cache import CachedModel, CallCache

    def make(standin: Any, cache: Any, **options: Any) -> CachedModel:
        options.setdefault("poll_seconds", 0.01)
        options.setdefault("quiet_seconds", 60.0)  # the run's slots, not a timer, send the batches
        backend = BatchModel(ChatProvider("gpt-4o-mini"), base_url=standin.base_url, api_key=standin.key,
                             identity=f"gpt-4o-mini@{standin.base_url}", backend="openai", **options)
        return CachedModel(backend, CallCache(cache))

    return make


# `python -c BATCH_CLI` runs the CLI with `--batch` loading the batch model on ChatProvider
# (what load_backend does once the providers land), looking at batches every 20 ms.
BATCH_CLI = """
import sys
sys.path.insert(0, sys.argv.pop(1))
import veriloop.models as models
from veriloop.models.batch import BatchModel
from veriloop.models.openai_compat import server_identity
from conftest import ChatProvider
live = models.load_backend
def load_backend(model, *, api_key=None, **settings):
    chosen = models.ModelSettings.of(model, **settings)
    if not chosen.batch:
        return live(model, api_key=api_key, **settings)
    name = chosen.id.removeprefix("openai/")
    return BatchModel(ChatProvider(name), base_url=chosen.base_url, api_key=api_key, backend="openai",
                      identity=server_identity(name, chosen.base_url), poll_seconds=0.02, quiet_seconds=60.0)
models.load_backend = load_backend
from veriloop.cli import main
sys.argv[0] = "veriloop"
main()
"""


@pytest.fixture
def batch_cli() -> Any:
    """The command line (argv) of `veriloop` with batch mode, for a subprocess."""
    import sys
    from pathlib import Path

    return [sys.executable, "-c", BATCH_CLI, str(Path(__file__).parent)]
