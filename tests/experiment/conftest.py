"""Fixtures of the experiment tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def recording_executor() -> Iterator[list[tuple[str, list[str]]]]:
    """A plugin's executor registered by name ("recording") for the test: the local one,
    noting (the experiment's name, the models asked for) each time it is opened."""
    from veriloop.experiment.executor import EXECUTORS, local_cells

    opened: list[tuple[str, list[str]]] = []

    def recording(experiment, names, options):
        opened.append((experiment.name, list(names)))
        return local_cells(experiment, names, options)

    EXECUTORS.register("recording", recording, source="tests")
    try:
        yield opened
    finally:
        del EXECUTORS["recording"]
