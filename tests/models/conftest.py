import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from veriloop.models.capped import CAP_ENV


@pytest.fixture(scope="module", autouse=True)
def uncapped_replies() -> Iterator[None]:
    """The backends' own tests get replies as long as each call asks: the suite's reply cap
    (VERILOOP_MAX_REPLY_TOKENS, tests/conftest.py) is lifted for them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(CAP_ENV, raising=False)
        yield


# ---------------------------------------------------------------- batch mode (test_batch*.py)

# The batch tests run on both batch APIs veriloop speaks: the provider's prefix -> its model id
# on the stand-in.
BATCH_MODELS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-sonnet-4-5"}


@pytest.fixture
def batch_standin() -> Callable[..., Any]:
    """A factory: `(provider, **options)` -> the stand-in of that provider's batch API, its
    clock at the real time (finding the batch a killed submit made compares the provider's
    creation times with the journal's)."""
    from standins.anthropic import AnthropicStandin
    from standins.openai import OpenAIStandin

    def make(provider: str, **options: Any) -> Any:
        kind = {"openai": OpenAIStandin, "anthropic": AnthropicStandin}[provider]
        return kind(clock=int(time.time()), **options)

    return make


@pytest.fixture
def batch_model_ids() -> dict[str, str]:
    """Each provider with a batch API (prefix) -> the model id the batch tests use."""
    return dict(BATCH_MODELS)


@pytest.fixture(params=list(BATCH_MODELS))
def batch_provider(request: pytest.FixtureRequest) -> str:
    """Each provider with a batch API, by prefix."""
    return str(request.param)


@pytest.fixture
def batch_model() -> Any:
    """A factory: what `--batch` loads for the stand-in's provider (load_backend, batch=True)
    on its base URL, behind a call cache at `cache`, looking at its batches every 10 ms."""
    from veriloop.models import load_backend
    from veriloop.models.cache import CachedModel, CallCache

    def make(standin: Any, cache: Any) -> CachedModel:
        provider = type(standin).__name__.removesuffix("Standin").lower()
        backend = load_backend(BATCH_MODELS[provider], base_url=standin.base_url, api_key=standin.key, batch=True,
                               batch_poll_seconds=0.01)
        return CachedModel(backend, CallCache(cache))

    return make


def _wait_for(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {seconds:g} s"
        time.sleep(0.02)


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """`(what, done, proc)`: wait until `done()` while the subprocess `proc` runs (it ending
    first, or two minutes passing, fails the test naming `what`)."""
    return _wait_for
