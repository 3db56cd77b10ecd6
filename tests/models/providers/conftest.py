import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from veriloop.models.base import Completion, GenParams

# The keys and string values the native wire formats use, so that arbitrary JSON often has
# the shape of an answer and reaches deep into the parsers, not only their first check.
WIRE_KEYS = (
    "type", "content", "text", "thinking", "stop_reason", "usage", "input_tokens", "output_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens", "error", "message", "candidates", "parts",
    "thought", "finishReason", "usageMetadata", "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
    "cachedContentTokenCount", "promptFeedback", "blockReason", "logprobsResult", "chosenCandidates",
    "topCandidates", "token", "logProbability", "done", "done_reason", "prompt_eval_count", "eval_count",
    "logprobs", "top_logprobs", "logprob", "role",
)
WIRE_STRINGS = (
    "text", "thinking", "redacted_thinking", "message", "error", "end_turn", "max_tokens", "stop_sequence",
    "STOP", "MAX_TOKENS", "SAFETY", "overloaded_error", "model", "stop", "length",
)


@pytest.fixture(scope="session")
def wire_json() -> st.SearchStrategy[object]:
    """Any JSON value, its object keys and strings mostly those of the wire formats."""
    scalars = (st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False)
               | st.sampled_from(WIRE_STRINGS) | st.text(max_size=8))
    keys = st.sampled_from(WIRE_KEYS) | st.text(max_size=5)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
        max_leaves=40,
    )


SHORT = GenParams(max_tokens=32)


@pytest.fixture(scope="session")
def calls_of() -> Callable[[Path], list[dict[str, Any]]]:
    """The call records of a run directory, in order."""
    def read(run_dir: Path) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
        return [call for row in rows for call in row["calls"]]

    return read


@pytest.fixture(scope="session")
def generate() -> Callable[..., list[Completion]]:
    """One call of a model (closed after it), as a strategy would make it."""
    def call(model: Any, messages: list[dict[str, str]] | None = None,
             params: GenParams = SHORT) -> list[Completion]:
        async def go() -> list[Completion]:
            try:
                return list(await model.generate(messages or [{"role": "user", "content": "What is 3 + 4?"}], params))
            finally:
                await model.aclose()

        return asyncio.run(go())

    return call


@pytest.fixture(scope="session")
def mutated(wire_json: st.SearchStrategy[object]) -> Callable[[object], st.SearchStrategy[object]]:
    """Strategies of an example answer with any of its values (at any depth) replaced by
    arbitrary JSON, or dropped: answers a parser reads deep into before anything is odd."""
    def mutate(example: object) -> st.SearchStrategy[object]:
        if isinstance(example, dict):
            kept = st.fixed_dictionaries({key: mutate(value) for key, value in example.items()})
            pruned = kept.flatmap(lambda d: st.sets(st.sampled_from(sorted(d)) if d else st.nothing(), max_size=2).map(
                lambda gone: {k: v for k, v in d.items() if k not in gone}))
            inner: st.SearchStrategy[object] = kept | pruned
        elif isinstance(example, list):
            inner = st.tuples(*(mutate(item) for item in example)).map(list) if example else st.just([])
        else:
            inner = st.just(example)
        return st.one_of(inner, inner, inner, wire_json)

    return mutate
