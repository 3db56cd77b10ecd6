from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside the project")
    return SHARED_DATA


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The real SmolLM2-135M pack; `./test.sh` installs it before the suite runs."""
    from veriloop.models.packs import verified_pack_path

    return verified_pack_path("smollm2-135m")


@pytest.fixture(scope="session")
def smollm2(smollm2_path: Path):
    """The bare in-process backend (no cache) on the sequential path (concurrency 1), whose
    seeds and prefix reuse are exact; test_batched covers the batched default. Loaded once
    for the whole session."""
    from veriloop.models import load_backend

    return load_backend("smollm2-135m", concurrency=1)


@pytest.fixture(scope="session")
def server(smollm2_path: Path, tmp_path_factory):
    """A real llama_cpp.server with SmolLM2 on 127.0.0.1 (model alias "smollm2", API key
    servers.SECRET), shared by the whole session; its base URL."""
    from servers import llama_server

    with llama_server(smollm2_path, tmp_path_factory.mktemp("server")) as base_url:
        yield base_url
