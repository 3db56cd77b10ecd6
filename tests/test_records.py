"""Text that cannot be stored (issue 25, item 1): a lone surrogate is replaced by U+FFFD
where text enters (a completion of any backend, a tool's observation, data), so records,
cache keys and cache rows never fail on it."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veriloop.datafiles import loads
from veriloop.models.base import Completion, GenParams, TokenLogprob
from veriloop.models.cache import call_key
from veriloop.models.function import FunctionModel
from veriloop.records import CallRecord, storable, storable_text
from veriloop.tools.base import Observation, Toolbox, ToolCache


class Echo:
    """A deterministic tool that answers what a program might print: a lone surrogate."""

    name = "echo"
    description = "echoes"
    deterministic = True

    def __init__(self) -> None:
        self.runs = 0

    def run(self, tool_input: str) -> Observation:
        self.runs += 1
        return Observation(tool="echo", input=tool_input, text="out\udc80", data={"lines": ["a\ud800"]})

    def identity(self) -> str:
        return "echo-v1"


def test_storable_replaces_each_lone_surrogate_and_keeps_what_needs_nothing():
    assert storable_text("a\ud800b\udfff") == ("a\ufffdb\ufffd", 2)
    clean = {"q": ["fine", ("also", 1)], "n": None}
    assert storable(clean) is clean
    assert storable({"q\ud800": ["x", ("y\udc00", 1)], "n": None}) == {"q\ufffd": ["x", ("y\ufffd", 1)], "n": None}
    deep: list[object] = ["\ud800"]
    for _ in range(5000):  # deeper than recursion would allow
        deep = [deep]
    inner = storable(deep)
    for _ in range(5000):
        inner = inner[0]
    assert inner == ["\ufffd"]


def test_storable_finds_a_surrogate_however_deep_or_non_ascii_its_neighbours():
    clean = {"é": ["ü", ("ø", 1, 2.5, None, True)], 3: {"x": "中"}}
    assert storable(clean) is clean
    assert storable({"a": [{"b": ("é", "ok\udfff")}]}) == {"a": [{"b": ("é", "ok\ufffd")}]}
    assert storable({3: {"é\ud800": "x"}}) == {3: {"é\ufffd": "x"}}
    assert storable_text("é") == ("é", 0)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": "\\ud800"}', {"a": "\ufffd"}),  # a lone escape
    ('["\\uDC00x", "\\uDbFf"]', ["\ufffdx", "\ufffd"]),  # upper-case hex digits
    ('{"k\\udfff": 1}', {"k\ufffd": 1}),  # in a key
    ('["\\ud83d\\ude00"]', ["\U0001f600"]),  # a pair is the one character it encodes
    ('["\\\\ud800"]', ["\\ud800"]),  # an escaped backslash, then text
    ('["\ud800"]', ["\ufffd"]),  # the text's own character
    ('{"a": ["é", 1, null]}', {"a": ["é", 1, None]}),
])
def test_a_data_files_json_is_made_storable_whichever_way_the_surrogate_came(text, expected):
    assert loads(text) == expected


def test_every_completion_is_storable_whoever_built_it():
    made = Completion(text="x\ud800", finish_reason="stop", prompt_tokens=1, completion_tokens=1,
                      logprobs=[TokenLogprob(token="\udc80", logprob=-1.0, top={"\udc80": -1.0})])
    assert (made.text, made.logprobs[0].token, made.logprobs[0].top, made.surrogates_replaced) == (
        "x\ufffd", "\ufffd", {"\ufffd": -1.0}, 2)
    assert Completion.from_json(made.to_json()) == made  # the count travels with it (cache rows, Ray)
    (from_function,) = asyncio.run(FunctionModel(lambda messages: "y\udfff").generate([], GenParams()))
    assert (from_function.text, from_function.surrogates_replaced) == ("y\ufffd", 1)
    record = CallRecord(role="generate", round=0, messages=[], response=made.text, finish_reason="stop",
                        prompt_tokens=1, completion_tokens=1, seconds=0.0, cached=False, surrogates_replaced=2)
    assert json.loads(record.model_dump_json())["surrogates_replaced"] == 2


def test_a_cache_key_never_fails_and_is_unchanged_for_storable_text():
    params = GenParams()
    assert call_key("b", "m", [{"role": "user", "content": "\ud800"}], params) != call_key(
        "b", "m", [{"role": "user", "content": "\ufffd"}], params)
    # Pinned: keys of ordinary text are those every earlier version computed.
    assert call_key("b", "m", [{"role": "user", "content": "é"}], params) == (
        "21cd2f97f0aedebe2e65f5944d574db307b1546ae016145d4a421b7697a10952")


def test_a_tools_observation_is_storable_and_a_damaged_cached_result_runs_the_tool_again(tmp_path):
    tool, cache = Echo(), ToolCache(tmp_path / "tools.sqlite")
    box = Toolbox([tool], cache)
    first = asyncio.run(box.call("echo", "in"))
    assert (first.text, first.data) == ("out\ufffd", {"lines": ["a\ufffd"]})
    with sqlite3.connect(tmp_path / "tools.sqlite") as db:
        db.execute("UPDATE tool_results SET observation = '{\"text\": \"torn'")
    again = asyncio.run(box.call("echo", "in"))
    assert (again.text, again.cached, tool.runs) == ("out\ufffd", False, 2)
    assert asyncio.run(box.call("echo", "in")).cached  # the damaged row was replaced
    cache.close()



# Every surrogate escape's spelling (either case of each hex digit), escaped backslashes
# before a "u", and plain text: whatever JSON the text is, `loads` gives the walk's value.
_SURROGATE_ESCAPES = st.sampled_from(["\\ud800", "\\uD8FF", "\\uDc00", "\\udfff", "\\uDBFF", "\\uDfFf"])
_JSON_STRING_BODIES = st.lists(
    _SURROGATE_ESCAPES | st.sampled_from(["\\\\ud800", "\\\\", "\\u00e9", "\\ud7ff", "\\ue000", "\\n", "a"])
    | st.text(st.characters(exclude_characters='"\\', exclude_categories=("Cc",)), max_size=3),
    max_size=6).map("".join)


@given(keys=st.lists(_JSON_STRING_BODIES, max_size=3), values=st.lists(_JSON_STRING_BODIES, max_size=3))
def test_loads_replaces_what_the_walk_replaces_whatever_the_escapes(keys: list[str], values: list[str]) -> None:
    mapping = "{" + ", ".join(f'"{k}": 1' for k in keys) + "}"
    text = "[" + ", ".join([*(f'"{v}"' for v in values), mapping]) + "]"
    assert loads(text) == storable(json.loads(text))
    assert not any(_SURROGATE_RE.search(s) for s in _strings(loads(text)))


def test_loads_replaces_surrogates_given_as_escapes_in_either_case_or_as_text():
    assert loads('["\\uD800", {"\\udFfF": "\\\\ud800"}, "a\\ud83d\\ude00"]') == [
        "\ufffd", {"\ufffd": "\\ud800"}, "a\U0001f600"]  # a valid pair is the one character it encodes
    assert loads('"x\ud800"') == "x\ufffd"
    clean = '{"q": ["fine", 1], "e": "\\u00e9"}'
    assert loads(clean) == json.loads(clean) == {"q": ["fine", 1], "e": "\u00e9"}


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []
