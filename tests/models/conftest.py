from collections.abc import Iterator

import pytest

from veriloop.models.capped import CAP_ENV


@pytest.fixture(scope="module", autouse=True)
def uncapped_replies() -> Iterator[None]:
    """The backends' own tests get replies as long as each call asks: the suite's reply cap
    (VERILOOP_MAX_REPLY_TOKENS, tests/conftest.py) is lifted for them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(CAP_ENV, raising=False)
        yield
