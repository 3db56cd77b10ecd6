"""The public Python API: correct / evaluate with a user's own model, check and task.

Models here are plain functions whose replies the test chooses (a scripted model), so
each test pins the exact control flow and the exact feedback text the model was sent."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest
from helpers import read_trajectories

import veriloop
from veriloop import CheckError, Task, Verdict, VerdictError, VeriloopError
from veriloop.runs.runner import load_trajectories

BASE = "Name an even number."
REJECT = "Your answer is not correct"
REASK = "Please give a corrected answer."


class Script:
    """A model function: replies in order, and every conversation it was sent."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.sent: list[list[dict[str, str]]] = []

    def __call__(self, messages):
        self.sent.append([dict(m) for m in messages])
        if not self.replies:
            raise AssertionError("more calls than scripted")
        return self.replies.pop(0)


def odd_as_text(prompt, answer):
    return "" if int(answer) % 2 == 0 else f"{answer} is odd"


def odd_as_list(prompt, answer):
    return [] if int(answer) % 2 == 0 else [f"{answer} is odd", "the last digit must be 0, 2, 4, 6 or 8"]


def odd_as_bool(prompt, answer):
    return int(answer) % 2 == 0


def odd_as_verdict(prompt, answer):
    if int(answer) % 2 == 0:
        return Verdict(ok=True)
    return Verdict(ok=False, errors=[VerdictError(kind="parity", message=f"{answer} is odd")])


# The exact second user message for each return shape at each level.
EXPECTED = {
    (odd_as_text, "first"): f"{REJECT}: 7 is odd.\n{REASK}",
    (odd_as_text, "all"): f"{REJECT}:\n- 7 is odd\n{REASK}",
    (odd_as_list, "first"): f"{REJECT}: 7 is odd.\n{REASK}",
    (odd_as_list, "all"): f"{REJECT}:\n- 7 is odd\n- the last digit must be 0, 2, 4, 6 or 8\n{REASK}",
    (odd_as_bool, "first"): f"{REJECT}. {REASK}",
    (odd_as_bool, "all"): f"{REJECT}. {REASK}",
    (odd_as_verdict, "first"): f"{REJECT}: 7 is odd.\n{REASK}",
    (odd_as_verdict, "all"): f"{REJECT}:\n- 7 is odd\n{REASK}",
}


@pytest.mark.parametrize(("check", "level"), list(EXPECTED), ids=lambda v: getattr(v, "__name__", v))
def test_each_check_shape_drives_first_and_all_feedback(check, level):
    llm = Script("7", "8")
    result = veriloop.correct(llm, BASE, check, feedback=level, cache=False)
    assert (result.answer, result.ok, result.rounds, result.stop_reason) == ("8", True, 2, "verifier_accepted")
    assert llm.sent[1] == [
        {"role": "user", "content": BASE},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": EXPECTED[(check, level)]},
    ]
    assert result.feedback == [EXPECTED[(check, level)]]
    assert [c.role for c in result.trajectory.calls] == ["generate", "generate"]
    assert [r.verdict.ok for r in result.trajectory.rounds] == [False, True]


def test_budget_ends_with_the_last_answer():
    llm = Script("7", "9", "11")
    result = veriloop.correct(llm, BASE, odd_as_text, max_rounds=3, cache=False)
    assert (result.answer, result.ok, result.rounds, result.stop_reason) == ("11", False, 3, "max_rounds")
    assert result.feedback == [f"{REJECT}: 7 is odd.\n{REASK}", f"{REJECT}: 9 is odd.\n{REASK}"]
    assert not result


def test_binary_and_none_levels():
    llm = Script("7", "8")
    veriloop.correct(llm, BASE, odd_as_text, feedback="binary", cache=False)
    assert llm.sent[1][-1]["content"] == f"{REJECT}. {REASK}"
    llm = Script("7", "8")
    veriloop.correct(llm, BASE, odd_as_text, feedback="none", cache=False)
    assert llm.sent[1][-1]["content"] == BASE


def test_llm_feedback_is_a_critique_call():
    llm = Script("7", "Seven is odd; pick a multiple of two.", "8")
    result = veriloop.correct(llm, BASE, odd_as_text, feedback="llm", cache=False)
    assert [c.role for c in result.trajectory.calls] == ["generate", "critique", "generate"]
    assert llm.sent[2][-1]["content"] == f"{REJECT}:\n- Seven is odd; pick a multiple of two.\n{REASK}"


def test_async_model_and_async_check():
    sent = []

    async def llm(messages):
        sent.append(messages)
        return "7" if len(sent) == 1 else "12"

    async def check(prompt, answer):
        await asyncio.sleep(0)
        return odd_as_text(prompt, answer)

    result = asyncio.run(veriloop.acorrect(llm, BASE, check, cache=False))
    assert (result.answer, result.ok, result.rounds) == ("12", True, 2)


def test_check_gets_the_instance_and_the_extracted_answer():
    seen = []

    def check(instance, answer):
        seen.append((instance, answer))
        return True

    llm = Script("The answer is: 8")
    result = veriloop.correct(llm, BASE, check, instance={"n": 1}, extract=lambda t: t.split(":")[-1].strip(),
                              cache=False)
    assert result.answer == "8" and result.ok
    assert seen == [({"n": 1}, "8")]


def test_a_verifier_name_is_a_check_too():
    llm = Script("7", '{"correct": false, "errors": ["7 is odd"]}', "8", '{"correct": true, "errors": []}')
    result = veriloop.correct(llm, BASE, "llm", cache=False)
    assert [c.role for c in result.trajectory.calls] == ["generate", "verify", "generate", "verify"]
    assert (result.answer, result.ok, result.stop_reason) == ("8", True, "verifier_accepted")
    assert llm.sent[2][-1]["content"] == f"{REJECT}: 7 is odd.\n{REASK}"


def test_reference_decides_ok_when_given():
    result = veriloop.correct(Script("9"), "What is 4+5?", strategy="standard", reference="9", cache=False)
    assert result.ok and result.stop_reason == "single_answer"
    result = veriloop.correct(Script("10"), "What is 4+5?", strategy="standard", reference=9, cache=False)
    assert not result.ok


@pytest.mark.parametrize("spec", ["sampling", "best-of-n"])
def test_sampling_strategies_take_a_check_function(spec):
    llm = Script("7", "5", "8", "3")
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy=spec, max_rounds=4, cache=False)
    expected = {"sampling": (3, "verifier_accepted"), "best-of-n": (4, "best_accepted")}[spec]
    assert (result.answer, result.ok, result.rounds, result.stop_reason) == ("8", True, *expected)
    assert all(len(m) == 1 for m in llm.sent)  # fresh samples of the base prompt, no history


def test_best_of_n_ranks_by_score_when_nothing_passes():
    def scored(prompt, answer):
        return Verdict(ok=False, score=float(answer) / 10, errors=[VerdictError(kind="low", message="too low")])

    result = veriloop.correct(Script("3", "7", "5"), BASE, scored, strategy="best-of-n:n=3", cache=False)
    assert (result.answer, result.ok, result.stop_reason) == ("7", False, "none_accepted")


def test_self_consistency_gets_one_call_per_sample():
    llm = Script("8", "6", "8")
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy="self-consistency:k=3", cache=False)
    assert (result.answer, result.rounds, result.stop_reason) == ("8", 3, "majority")
    assert len(llm.sent) == 3


def test_a_check_that_raises_names_function_instance_and_exception():
    def broken(prompt, answer):
        raise ValueError("cannot parse")

    with pytest.raises(CheckError) as info:
        veriloop.correct(Script("7"), BASE, broken, cache=False)
    message = str(info.value)
    assert "test_api:test_a_check_that_raises_names_function_instance_and_exception.<locals>.broken" in message
    assert "instance '1'" in message and "ValueError: cannot parse" in message
    assert "\n" not in message


def test_a_check_returning_none_is_a_clear_error():
    with pytest.raises(CheckError, match="returned NoneType None; return a bool, an error string"):
        veriloop.correct(Script("7"), BASE, lambda p, a: None, cache=False)


def test_a_model_returning_something_else_is_a_clear_error():
    with pytest.raises(VeriloopError, match="returned int; return the reply text"):
        veriloop.correct(lambda messages: 7, BASE, odd_as_bool, cache=False)


def test_correct_without_a_check_is_refused():
    with pytest.raises(VeriloopError, match="needs a check"):
        veriloop.correct(Script("7"), BASE)


def test_function_model_with_params_gets_each_sample_with_its_seed():
    seen = []

    def llm(messages, params):
        seen.append((params.n, params.sample_offset, params.sample_seed(0), params.temperature))
        return "8"

    veriloop.correct(llm, BASE, odd_as_bool, strategy="self-consistency:k=3", seed=10, cache=False)
    assert seen == [(1, 0, 10, 1.0), (1, 1, 11, 1.0), (1, 2, 12, 1.0)]


def test_cache_replays_a_model_with_an_identity(tmp_path):
    cache = tmp_path / "calls.sqlite"
    first = Script("7", "8")
    model = veriloop.model(first, identity="script-v1", cache=cache)
    a = veriloop.correct(model, BASE, odd_as_text)
    again = Script()  # any call would raise: everything must come from the cache
    b = veriloop.correct(veriloop.model(again, identity="script-v1", cache=cache), BASE, odd_as_text)
    assert (a.answer, b.answer, b.cached_calls, len(again.sent)) == ("8", "8", 2, 0)
    assert [c.cached for c in b.trajectory.calls] == [True, True]


def test_a_call_cache_the_caller_gives_stays_open_for_the_next_call(tmp_path):
    # correct() used to close a CallCache it was given, and the next use failed with a raw
    # sqlite3.ProgrammingError; a model made with one closed it too when it was closed.
    from veriloop import CallCache

    def scripted(*replies: str) -> veriloop.Model:
        return veriloop.model(Script(*replies), identity="script-v1", cache=False)

    cache = CallCache(str(tmp_path / "calls.sqlite"))  # a string is a path too
    a = veriloop.correct(scripted("7", "8"), BASE, odd_as_text, cache=cache)
    b = veriloop.correct(scripted(), BASE, odd_as_text, cache=cache)
    asyncio.run(veriloop.model(Script(), identity="script-v1", cache=cache).aclose())
    c = veriloop.correct(scripted(), BASE, odd_as_text, cache=cache)
    assert (a.answer, a.cached_calls, b.cached_calls, c.cached_calls) == ("8", 0, 2, 2)
    cache.close()


def test_cache_is_off_with_a_warning_without_an_identity(tmp_path):
    with pytest.warns(veriloop.VeriloopWarning, match="call cache is off for model 'Script'"):
        model = veriloop.model(Script("8"), name="Script", cache=tmp_path / "c.sqlite")
    assert not isinstance(model, veriloop.CachedModel)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        veriloop.model(Script("8"), cache=False)  # asked for no cache: nothing to warn about


def test_an_object_with_generate_is_a_model():
    class Mine:
        identity = None

        def __init__(self):
            self.calls = 0

        def generate(self, messages):
            self.calls += 1
            return "8"

    mine = Mine()
    result = veriloop.correct(mine, BASE, odd_as_bool, cache=False)
    assert result.ok and mine.calls == 1 and result.trajectory.model == "Mine"


def test_correct_inside_a_running_loop_points_to_acorrect():
    async def inside():
        veriloop.correct(Script("8"), BASE, odd_as_bool, cache=False)

    with pytest.raises(VeriloopError, match="await veriloop.acorrect"):
        asyncio.run(inside())


# ---------------------------------------------------------------------------- Task


ROWS = [{"q": "2+2", "a": 4}, {"q": "3+4", "a": 7}, {"q": "5+5", "a": 10}]


def test_task_from_records_renders_the_template_and_scores_against_the_reference():
    task = Task.from_records(ROWS, prompt="Compute {q}.", reference_field="a")
    instances = task.load_instances(None)
    assert [i.id for i in instances] == ["1", "2", "3"]
    assert task.prompt(instances[1]) == [{"role": "user", "content": "Compute 3+4."}]
    assert task.score(instances[1], " 7.0 ") and not task.score(instances[1], "8")
    assert [i.id for i in task.load_instances(None, n=1, offset=1)] == ["2"]


def test_task_template_naming_a_missing_field_is_one_clear_error():
    with pytest.raises(VeriloopError, match="record 2 has no field 'q' used by the prompt template"):
        Task.from_records([{"q": 1}, {"x": 2}], prompt="{q}")


@pytest.mark.parametrize("field", ["{q.__class__.__mro__}", "{q[0]}", "{0}", "{}", "{q!r}", "{q:>5}", "{q:{q}}"])
def test_a_prompt_template_names_plain_fields_only(field):
    template = f"Compute {field}."
    with pytest.raises(VeriloopError) as refused:
        Task.from_records(ROWS, prompt=template, name="sums")
    assert str(refused.value) == (
        f"sums: the prompt template {template!r} uses {field}; a template names fields only, as {{question}} "
        "(no attribute, index, position, conversion or format spec): use a prompt function for more"
    )


def test_a_lone_surrogate_in_a_data_row_is_replaced_once_and_the_run_is_recorded_and_cached(tmp_path):
    # Valid JSON whose "\ud800" escape decodes to a lone surrogate, which UTF-8 cannot carry.
    path = tmp_path / "rows.jsonl"
    path.write_text('{"q": "2+2\\ud800", "a": "4"}\n', encoding="utf-8")
    seen = []

    def check(row, answer):
        seen.append(row["q"])
        return answer == "4"

    task = Task.from_jsonl(path, prompt="Compute {q}.", check=check, reference_field="a")
    api_task = Task.from_records([{"q": "2+2\ud800", "a": "4"}], prompt="Compute {q}.", check=check,
                                 reference_field="a")
    for rows, out in ((task, "file"), (api_task, "api")):
        model = veriloop.model(Script("4"), identity="four-v1", cache=tmp_path / "calls.sqlite")
        (summary,) = veriloop.evaluate(rows, ["backprompt"], model=model, out=tmp_path / out)
        assert summary.accuracy == 1.0
        (trajectory,) = load_trajectories(tmp_path / out / "trajectories.jsonl")
        assert trajectory.calls[0].messages == [{"role": "user", "content": "Compute 2+2\ufffd."}]
    assert seen == ["2+2\ufffd", "2+2\ufffd"]  # the check sees the row as the model did


def test_a_reply_with_a_lone_surrogate_is_recorded_with_it_replaced_and_counted(tmp_path):
    model = veriloop.model(Script("4\ud800\udfff"), identity="odd-v1", cache=tmp_path / "calls.sqlite")
    veriloop.evaluate(Task.from_records(ROWS[:1], prompt="Compute {q}."), ["standard"], model=model,
                      out=tmp_path / "run")
    (trajectory,) = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    (call,) = trajectory.calls
    assert (call.response, call.surrogates_replaced, trajectory.final_text) == ("4\ufffd\ufffd", 2, "4\ufffd\ufffd")


def test_a_check_error_with_a_lone_surrogate_is_recorded_and_fed_back_replaced(tmp_path):
    llm = Script("5", "4")
    task = Task.from_records(ROWS[:1], prompt="Compute {q}.", check=lambda row, answer: answer == "4" or "not\ud800 4")
    veriloop.evaluate(task, ["backprompt"], model=llm, out=tmp_path / "run", cache=False)
    (trajectory,) = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert trajectory.rounds[0].verdict.errors[0].message == "not\ufffd 4"
    assert llm.sent[1][-1]["content"] == f"{REJECT}: not\ufffd 4.\n{REASK}"


def test_task_from_jsonl_reports_the_bad_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"q": "1"}\n[1, 2]\n')
    with pytest.raises(VeriloopError, match=r"t.jsonl, line 2: expected a JSON object of fields, got a list"):
        Task.from_jsonl(path, prompt="{q}")
    path.write_text("\n")
    with pytest.raises(VeriloopError, match="holds no records"):
        Task.from_jsonl(path, prompt="{q}")


def test_task_check_without_reference_is_the_ground_truth():
    task = Task.from_records(ROWS, prompt="{q}", check=lambda row, answer: int(answer) == row["a"])
    first = task.load_instances(None)[0]
    assert task.score(first, "4") and not task.score(first, "5")


def arithmetic_model(messages, params):
    """Right on the second try: the first answer is off by one."""
    question = messages[0]["content"]
    a, b = (int(x) for x in question.removeprefix("Compute ").rstrip(".").split("+"))
    return str(a + b + (1 if len(messages) == 1 and params.temperature == 0 else 0))


def test_evaluate_three_strategies_resumes_with_no_call(tmp_path):
    task = Task.from_records(ROWS, prompt="Compute {q}.", check=lambda row, answer: int(answer) == row["a"],
                             reference_field="a")
    calls = []

    def model_fn(messages, params):
        calls.append(messages)
        return arithmetic_model(messages, params)

    model = veriloop.model(model_fn, identity="arith-v1", cache=tmp_path / "calls.sqlite")
    strategies = ["standard", "backprompt:max_rounds=3", "sampling:k=2"]
    summaries = veriloop.evaluate(task, strategies, model=model, out=tmp_path / "run")
    assert [(s.strategy.split(":")[0], s.correct, s.n) for s in summaries] == [
        ("standard", 0, 3), ("backprompt", 3, 3), ("sampling", 3, 3),
    ]
    first_calls = len(calls)
    # standard 3; backprompt's first answers are standard's (same greedy call: cache hits), so 3
    # corrections; sampling 3 (the first sample of each is right).
    assert first_calls == 3 + 3 + 3
    again = veriloop.evaluate(task, strategies, model=model, out=tmp_path / "run")
    assert len(calls) == first_calls
    assert [s.model_dump() for s in again] == [s.model_dump() for s in summaries]
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert len(trajectories) == 9
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["api"] == "veriloop.evaluate" and config["check_name"].startswith("test_api:")


def test_evaluate_a_built_in_domain_by_name(tmp_path):
    replies = []

    def model_fn(messages):
        replies.append(messages)
        return "Answer: (1 + 1) * (4 + 6)"  # wrong for 1 1 4 6... and for every puzzle

    summaries = veriloop.evaluate("game24", ["standard"], model=model_fn, out=tmp_path / "run", n=2, cache=False)
    assert (summaries[0].n, summaries[0].correct, len(replies)) == (2, 0, 2)


def test_a_check_that_raises_in_evaluate_keeps_finished_trajectories(tmp_path):
    def check(row, answer):
        if row["q"] == "5+5":
            raise RuntimeError("boom")
        return True

    task = Task.from_records(ROWS, prompt="Compute {q}.", check=check)
    with pytest.raises(CheckError, match="raised on instance '3': RuntimeError: boom"):
        veriloop.evaluate(task, ["backprompt"], model=lambda m: "1", out=tmp_path / "run", cache=False)
    kept = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert sorted(t.instance_id for t in kept) == ["1", "2"]


def test_selfcheck_gate_keeps_rejected_solutions_out_of_the_vote():
    # Majority voting (no step checks): 7 twice, 8 once; the gate admits only even answers.
    llm = Script("7", "8", "7")
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy="selfcheck:n=3,vote=majority", cache=False)
    assert result.answer == "7"
    llm = Script("7", "8", "7")
    gated = veriloop.strategy("selfcheck:n=3,vote=majority", {"gate": odd_as_bool})
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy=gated, cache=False)
    assert (result.answer, result.stop_reason) == ("8", "majority_vote")
    assert [r.verdict.ok if r.verdict else None for r in result.trajectory.rounds] == [False, None, False]


def test_strategy_names_label_check_functions():
    spec = veriloop.strategy("backprompt:max_rounds=2", {"verifier": odd_as_bool})
    assert spec.canonical == "backprompt:feedback=first,max_rounds=2,temperature=0,verifier=test_api:odd_as_bool"


def test_every_public_name_is_documented():
    undocumented = [
        name for name in veriloop.__all__
        if callable(getattr(veriloop, name)) and not (getattr(veriloop, name).__doc__ or "").strip()
    ]
    assert undocumented == []
    assert "correct" in veriloop.__all__ and "Task" in veriloop.__all__ and "evaluate" in veriloop.__all__


def test_a_model_returning_fewer_samples_than_asked_is_an_error(tmp_path):
    class OneOnly:
        backend, identity, name, preferred_concurrency = "mine", "one-only", "one-only", 1

        async def generate(self, messages, params):
            return [veriloop.Completion(text="8", finish_reason="stop", prompt_tokens=1, completion_tokens=1)]

        async def aclose(self):
            pass

    for cache in (False, tmp_path / "calls.sqlite"):
        with pytest.raises(VeriloopError, match=r"returned 1 completions when asked for 3 \(params.n\)"):
            veriloop.correct(OneOnly(), BASE, odd_as_bool, strategy="self-consistency:k=3", cache=cache)


def test_an_openai_client_needs_its_model_name_and_must_be_async():
    import openai

    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(VeriloopError, match="needs the model's name"):
        veriloop.model(client, cache=False)
    for model in (veriloop.model(client, model_name="m", cache=False), veriloop.model((client, "m"), cache=False)):
        # The identity is the model's name at the client's (normalised) URL: other servers' "m" is another model.
        assert (model.backend, model.name, model.identity, model.preferred_concurrency) == (
            "openai", "m", "m@http://127.0.0.1:9/v1", 8)
    with pytest.raises(VeriloopError, match="give an openai.AsyncOpenAI client"):
        veriloop.model(openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"))


def test_a_model_id_string_names_a_pack_or_fails_clearly():
    with pytest.raises(VeriloopError, match="unknown model 'no-such-model'"):
        veriloop.model("no-such-model")


def test_evaluate_reports_progress_per_finished_trajectory(tmp_path, capsys):
    task = Task.from_records(ROWS, prompt="Compute {q}.", check=lambda row, answer: True)
    seen = []
    veriloop.evaluate(task, ["standard", "sampling:k=1"], model=lambda m: "1", out=tmp_path / "run", cache=False,
                      progress=False, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 6), (1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]
    assert capsys.readouterr().err == ""


def test_critic_corrects_a_task_of_records():
    llm = Script("7", "Seven is odd.\nVerdict: incorrect", "8", "Eight is even.\nVerdict: correct")
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy="critic", cache=False)
    assert [c.role for c in result.trajectory.calls] == ["generate", "verify", "correct", "verify"]
    assert (result.answer, result.ok, result.stop_reason) == ("8", True, "critic_accepted")
    assert llm.sent[2][-1]["content"] == (
        "A check of your answer found:\nSeven is odd.\nVerdict: incorrect\n\n"
        "Taking the check into account, give a corrected answer to the task, in the form it asks for."
    )


def test_rejection_sampling_on_a_task_maximises_ground_truth():
    llm = Script("7", "8", "9", "10")
    result = veriloop.correct(llm, BASE, odd_as_bool, strategy="rejection-sampling:n=4", cache=False)
    assert (result.answer, result.ok, result.rounds, result.stop_reason) == ("8", True, 4, "best_of_n")


def test_critic_on_a_task_calls_the_tools_it_is_given(tmp_path, monkeypatch):
    from veriloop.tools.calculator import Calculator

    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    task = Task.from_records([{"q": "17 * 3"}], prompt="Compute {q}.",
                             check=lambda row, answer: answer == "51", critic_tools=("calculator",))
    sent = []
    replies = iter(["41", "Action: calculator\nAction Input: 17 * 3", "It is 51, not 41.\nVerdict: incorrect", "51",
                    "Action: calculator\nAction Input: 17 * 3", "Matches.\nVerdict: correct"])

    def llm(messages):
        sent.append(messages)
        return next(replies)

    summaries = veriloop.evaluate(task, ["critic"], model=llm, out=tmp_path / "run", cache=False,
                                  tools=[Calculator()])
    assert (summaries[0].correct, summaries[0].stop_reasons) == (1, {"critic_accepted": 1})
    trajectory = load_trajectories(tmp_path / "run" / "trajectories.jsonl")[0]
    assert [(c.tool, c.input, c.text) for c in trajectory.tool_calls] == [("calculator", "17 * 3", "51")] * 2
    assert sent[2][-1] == {"role": "user", "content": "Observation: 51"}


def test_a_prompt_once_sent_is_never_changed():
    """A model may keep the list it was sent (a log, a queue): later rounds must not grow it."""
    kept = []

    def llm(messages):
        kept.append(messages)
        return "7" if len(kept) < 3 else "8"

    veriloop.correct(llm, BASE, odd_as_text, cache=False)
    assert [len(m) for m in kept] == [1, 3, 5]


def test_evaluate_refuses_a_run_directory_made_with_other_settings(tmp_path):
    from veriloop.errors import VeriloopError

    task = veriloop.Task.from_records([{"q": "a"}, {"q": "b"}], prompt="{q}", check=lambda row, answer: True)
    model = veriloop.model(lambda messages: "yes", identity="always-yes", name="yes-man")
    out = tmp_path / "run"
    veriloop.evaluate(task, ["standard"], model=model, out=out, cache=False)
    with pytest.raises(VeriloopError, match=rf"{out} holds a run made with seed 0, not 1: "):
        veriloop.evaluate(task, ["standard"], model=model, out=out, seed=1, cache=False)
    with pytest.raises(VeriloopError, match=r"model yes-man \(always-yes\), not other \(other\)"):
        veriloop.evaluate(task, ["standard"], model=veriloop.model(lambda m: "no", identity="other", name="other"), out=out,
                    cache=False)
    assert len(read_trajectories(out)) == 2


def test_the_public_surface_is_exactly_these_names():
    # A name added to or dropped from `veriloop` is a decision: this list changes with it.
    assert veriloop.__all__ == [
        "BaseDomain", "CachedModel", "CallCache", "CallRecord", "CheckError", "Completion", "DOMAINS", "Domain",
        "Experiment", "FunctionCheck", "FunctionModel", "GenParams", "Instance", "Message", "Model", "Observation",
        "Result", "RoundRecord", "STRATEGIES", "Strategy", "Summary", "Task", "Tool", "Toolbox", "Trajectory",
        "VERIFIERS", "Verdict", "VerdictError", "Verifier", "VeriloopError", "VeriloopWarning", "__version__",
        "aaudit", "acorrect", "aeval_experiment", "aevaluate", "audit", "correct", "domain", "eval_experiment", "evaluate",
        "load_check", "load_experiment", "model", "strategy", "toolbox", "verifier",
    ]
    assert all(getattr(veriloop, name) is not None for name in veriloop.__all__)
    assert veriloop.BaseDomain is veriloop.domains.base.BaseDomain


def test_an_openai_client_is_told_from_a_function_by_its_class():
    import openai

    sync = openai.OpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(VeriloopError, match="give an openai.AsyncOpenAI client"):
        veriloop.model(sync)
    client = openai.AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(VeriloopError, match="an OpenAI client needs the model's name"):
        veriloop.model(client)
    from veriloop.models.openai_compat import ServerModel

    model = veriloop.model(client, model_name="m", cache=False)
    assert isinstance(model, ServerModel) and model._client is client
    asyncio.run(model.aclose())
