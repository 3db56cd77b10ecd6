from __future__ import annotations

import gc
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import SHARED_DATA, TEST_REPLY_TOKENS
from hypothesis import settings
from servers import CannedHandler, InstantReplies, serving

from veriloop.models.capped import CAP_ENV

# No outcome may depend on the machine's speed: Hypothesis's per-example deadline (200 ms)
# fails a test whose first example starts a worker process (math answers are compared in
# one) on a busy 2-core machine, and reruns it as "flaky". The examples' own limits stay.
settings.register_profile("veriloop", deadline=None)
settings.load_profile("veriloop")

# The tier's workers hold a large heap (the package, Hypothesis, pydantic schemas, imported
# runs), and the default first-generation threshold (700 allocations) walked it often enough
# to take 19 s of the tier's CPU (gc.callbacks, 2 cores, 2026-11-28); at 20,000 it took 7 s.
# The older generations keep their default ratios, so a full pass still comes every two
# million allocations and nothing a model test frees waits longer than that.
gc.set_threshold(20_000, 10, 10)


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts a background job (`bash .ci/run &`) with Ctrl-C
    # ignored, and every process the suite starts would inherit that: the tests that press
    # Ctrl-C on a run or on `view --serve` would wait for an exit that cannot come. The
    # suite's children get Ctrl-C as a terminal would give it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The real small model's replies are cut at TEST_REPLY_TOKENS in every test and every command a
    # test starts: the tests check what the loops do with a reply, not how good it is, and
    # SmolLM2 writes to whatever length a call allows (a 400-token reply took 5.0 s here, 48 tokens
    # 0.55 s). Set whatever the shell says, since smollm2_capped's identity must be the commands'.
    # Tests of the cap itself set or remove the variable.
    os.environ[CAP_ENV] = str(TEST_REPLY_TOKENS)


HEAVY = ("model", "server", "browser", "ray")
"""The markers of tests that load a model, start a server, a browser or a Ray cluster."""


# tryfirst: xdist's own hook names each item's group from its marks as it runs, and a
# conftest's hook ran after it (the marks added here were ignored: heavy tests ran on both
# workers at once).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under xdist (-n, pyproject's default) these run one after another on one worker:
    # llama.cpp's threads wait on each other by spinning, so two model runs (or a model
    # beside Ray) on two cores slow each other 10-45x. The other tests share the cores.
    # A module that sets ONE_WORKER = True (its module fixtures cost seconds: an import of
    # the authors' runs, a site build) runs on one worker too: xdist spreads a module's tests
    # over every worker, and each worker builds the module fixtures its tests use. Its heavy
    # tests stay in "heavy" alone (xdist joins every group an item has into one name).
    for item in items:
        if any(item.get_closest_marker(name) for name in HEAVY):
            item.add_marker(pytest.mark.xdist_group("heavy"))
        elif isinstance(item, pytest.Function) and getattr(item.module, "ONE_WORKER", False):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))  # its file


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside the project")
    return SHARED_DATA


@pytest.fixture(scope="session")
def chromium() -> Path:
    """The system Chromium (Debian's package, which `scripts/setup.sh --browser` installs;
    VERILOOP_CHROMIUM names another) that the browser tests drive through Playwright."""
    path = Path(os.environ.get("VERILOOP_CHROMIUM", "/usr/bin/chromium"))
    if not path.is_file():
        pytest.fail(f"no Chromium at {path}: run scripts/setup.sh --browser (./test.sh does), or set VERILOOP_CHROMIUM")
    return path


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The real SmolLM2-135M pack; `./test.sh` installs it before the suite runs."""
    from veriloop.models.packs import verified_pack_path

    return verified_pack_path("smollm2-135m")


@pytest.fixture(scope="session")
def smollm2(smollm2_path: Path):
    """The bare in-process backend (no cache, no reply cap) on the sequential path (concurrency 1), whose
    seeds and prefix reuse are exact; test_batched covers the batched default. Loaded once
    for the whole session."""
    from veriloop.models import load_backend
    from veriloop.models.counting import innermost

    return innermost(load_backend("smollm2-135m", concurrency=1))


@pytest.fixture(scope="session")
def smollm2_capped(smollm2):
    """SmolLM2 as every command the suite starts runs it: replies cut at TEST_REPLY_TOKENS
    (the VERILOOP_MAX_REPLY_TOKENS set above), under the identity that names the cap, so
    what a test's own run calls is replayed by a command it starts, and the other way round."""
    from veriloop.models.capped import CappedModel

    return CappedModel(smollm2, TEST_REPLY_TOKENS)


@pytest.fixture(scope="session")
def server(smollm2_path: Path, tmp_path_factory):
    """A real llama_cpp.server with SmolLM2 on 127.0.0.1 (model alias "smollm2", API key
    servers.SECRET), shared by the whole session; its base URL."""
    from servers import llama_server

    with llama_server(smollm2_path, tmp_path_factory.mktemp("server")) as base_url:
        yield base_url


@pytest.fixture
def canned_server() -> Iterator[str]:
    """A stdlib HTTP server on 127.0.0.1 answering servers.ROUTES; its root URL (no /v1)."""
    with serving(CannedHandler) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def instant_server() -> Iterator[list[str]]:
    """Model options for a scripted server on 127.0.0.1 (servers.SERVER_REPLY to every
    call), so the long commands run in seconds."""
    with serving(InstantReplies) as port:
        yield ["--model", "openai/scripted", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", "none"]


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch) -> str:
    """Tags every sandboxed process through its environment, so a test can look for
    leftovers of its own run only (helpers.processes_with)."""
    from veriloop.tools import sandbox

    marker = f"VERILOOP_TEST_MARK={uuid.uuid4().hex}"
    plain = sandbox._environment

    def with_marker(workdir: str) -> dict[str, str]:
        env = plain(workdir)
        name, value = marker.split("=")
        env[name] = value
        return env

    monkeypatch.setattr(sandbox, "_environment", with_marker)
    return marker


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A folder on sys.path for fake distributions; the modules they bring are forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for module in set(sys.modules) - before:
        if module.startswith("fake_"):
            del sys.modules[module]
