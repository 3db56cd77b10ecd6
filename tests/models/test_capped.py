"""The reply cap (models/capped.py): what a call asks for, what the cache and a run
directory see, and where the cap comes from."""

from __future__ import annotations

import asyncio

import pytest
from scripted import ScriptedModel

from veriloop.errors import VeriloopError
from veriloop.models import CachedModel, CallCache, GenParams, as_model, load_backend
from veriloop.models.capped import CAP_ENV, CappedModel
from veriloop.models.counting import innermost

MESSAGES = [{"role": "user", "content": "Say something long."}]


def asked_max_tokens(cap: int, asked: int) -> int:
    inner = ScriptedModel(["a reply"])
    asyncio.run(CappedModel(inner, cap).generate(MESSAGES, GenParams(max_tokens=asked)))
    ((_, params),) = inner.asked
    return params.max_tokens


def test_a_call_asking_for_more_than_the_cap_gets_the_cap_and_a_shorter_one_is_left_alone():
    assert (asked_max_tokens(64, 400), asked_max_tokens(64, 64), asked_max_tokens(64, 3)) == (64, 64, 3)


def test_a_capped_model_is_another_model_to_the_call_cache(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    uncapped = CachedModel(ScriptedModel(["long answer"]), cache, owns_cache=False)
    capped = CachedModel(CappedModel(ScriptedModel(["short answer"]), 8), cache, owns_cache=False)
    params = GenParams(max_tokens=400)
    first = asyncio.run(uncapped.generate(MESSAGES, params))[0].text
    second = asyncio.run(capped.generate(MESSAGES, params))[0].text
    cache.close()
    assert (first, second) == ("long answer", "short answer")
    assert (capped.identity, uncapped.identity) == ("scripted|max_reply_tokens=8", "scripted")


SERVER = {"base_url": "http://127.0.0.1:9/v1", "api_key": "none"}


def test_a_model_loaded_by_id_takes_the_cap_from_its_setting_else_the_variable(monkeypatch):
    monkeypatch.delenv(CAP_ENV, raising=False)
    assert not isinstance(load_backend("openai/m", **SERVER), CappedModel)
    assert load_backend("openai/m", max_reply_tokens=32, **SERVER).cap == 32
    monkeypatch.setenv(CAP_ENV, "48")
    model = load_backend("openai/m", **SERVER)
    assert (model.cap, model.identity, model.name) == (48, f"{innermost(model).identity}|max_reply_tokens=48", "m")
    assert load_backend("openai/m", max_reply_tokens=32, **SERVER).cap == 32  # the setting wins


def test_a_function_model_is_capped_only_when_asked(monkeypatch):
    monkeypatch.setenv(CAP_ENV, "48")
    assert not isinstance(as_model(lambda messages: "hi", identity="mine", cache=False), CappedModel)
    capped = as_model(lambda messages: "hi", identity="mine", cache=False, max_reply_tokens=16)
    assert (capped.cap, capped.identity) == (16, "mine|max_reply_tokens=16")


@pytest.mark.parametrize("value", ["0", "-3", "lots", "1.5"])
def test_a_bad_variable_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv(CAP_ENV, value)
    with pytest.raises(VeriloopError) as error:
        load_backend("openai/m", **SERVER)
    assert str(error.value) == (f"{CAP_ENV}: the most tokens a reply may have must be a whole number, 1 or more, "
                       f"not {value!r}")


def test_a_bad_setting_is_one_line_naming_it():
    with pytest.raises(VeriloopError) as error:
        load_backend("openai/m", max_reply_tokens=0, **SERVER)
    assert str(error.value) == "model setting max_reply_tokens=0: Input should be greater than or equal to 1"
