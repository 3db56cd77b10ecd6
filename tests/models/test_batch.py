"""Batch mode (veriloop.models.batch) end to end through the runner, on both batch APIs
veriloop speaks (the OpenAI stand-in's Files and Batch APIs, the Anthropic stand-in's
Message Batches), loaded as `--batch` loads it: one batch per round, the journal,
resumption after a crash at each step without a batch submitted twice, expiry, a failed
batch, the key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_one_line_error, veriloop
from standins.base import Standin
from standins.openai import OpenAIStandin

from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.models.batch.apis import BATCH_APIS
from veriloop.models.cache import CachedModel, CallCache
from veriloop.runs.runner import TRAJECTORIES, run_experiment
from veriloop.strategies import parse_strategy

ROUNDS = 2  # the stand-in's reply is wrong for game24: backprompt uses every round
N = 3


def journal(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "batches.jsonl").read_text().splitlines()]


def custom_ids(standin: Standin) -> list[str]:
    return [cid for job in standin.batches for cid in job.custom_ids]


async def run(model: Any, out: Path, n: int = N) -> Any:
    domain = get_domain("game24")
    strategy = parse_strategy("backprompt:verifier=sound,feedback=first", {"max_rounds": ROUNDS, "k": 1})
    try:
        return await run_experiment(model, domain, [strategy], domain.load_instances(None, n=n), out)
    finally:
        await model.aclose()


def records(out: Path) -> list[tuple[Any, ...]]:
    """The trajectories without their timings: what must not change across a crash."""
    rows = [json.loads(line) for line in (out / TRAJECTORIES).read_text().splitlines()]
    return sorted((r["instance_id"], r["final_answer"], r["correct"], r["stop_reason"], [(c["messages"], c["response"], c["prompt_tokens"], c["completion_tokens"]) for c in r["calls"]])
                  for r in rows)


def test_a_two_round_loop_goes_in_one_batch_per_round(tmp_path: Path, batch_model: Any, batch_standin: Any,
                                                      batch_provider: str) -> None:
    with batch_standin(batch_provider, auto_advance=True) as standin:
        result = asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
    assert result.new_trajectories == N
    assert [len(job.custom_ids) for job in standin.batches] == [N] * ROUNDS
    assert standin.billed["requests"] == 0 and standin.billed_batch["requests"] == N * ROUNDS
    events = [(e["event"], e["intent"]) for e in journal(tmp_path / "run")]
    intents = list(dict.fromkeys(i for _, i in events))
    assert len(intents) == ROUNDS
    assert sorted(events) == sorted([(ev, i) for i in intents for ev in ("intent", "submitted", "collected")])
    submitted = [e["batch"] for e in journal(tmp_path / "run") if e["event"] == "submitted"]
    assert submitted == [job.id for job in standin.batches]
    rows = [json.loads(line) for line in (tmp_path / "run" / TRAJECTORIES).read_text().splitlines()]
    assert {c["sent"]["batch"] for r in rows for c in r["calls"]} == set(submitted)
    assert "sk-" not in (tmp_path / "run" / "batches.jsonl").read_text()
    assert standin.key not in (tmp_path / "run" / "batches.jsonl").read_text()


def test_a_finished_run_re_run_sends_nothing(tmp_path: Path, batch_model: Any, batch_standin: Any,
                                             batch_provider: str) -> None:
    with batch_standin(batch_provider, auto_advance=True) as standin:
        asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
        asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "other"))
    assert len(standin.batches) == ROUNDS  # the second directory's calls all came from the cache


Hook = Callable[[Any, Callable[..., Awaitable[Any]]], Awaitable[Any]]


async def crash_at(model: CachedModel, out: Path, patch: pytest.MonkeyPatch, target: Any, name: str,
                   after: bool) -> None:
    """Run until `target.name` is reached (after it returned, with `after`), then stop the
    run there as a kill would: nothing after that point happens."""
    reached = asyncio.Event()
    real = getattr(target, name)

    async def stopped(*args: Any, **kwargs: Any) -> Any:
        if after:
            await real(*args, **kwargs)
        reached.set()
        await asyncio.Event().wait()  # never returns: the run is cancelled here

    patch.setattr(target, name, stopped)
    task = asyncio.ensure_future(run(model, out))
    waiter = asyncio.ensure_future(reached.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    assert reached.is_set(), "the run ended before the crash point"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    waiter.cancel()
    patch.undo()


@pytest.mark.parametrize("point", ["before submit", "after submit, id unrecorded", "while polling",
                                   "results fetched, not committed"])
def test_a_crash_at_each_point_resumes_without_a_batch_sent_twice(tmp_path: Path, batch_model: Any,
                                                                   batch_standin: Any, batch_provider: str,
                                                                   point: str) -> None:
    api = BATCH_APIS[batch_provider]
    target, name, after = {
        "before submit": (api, "submit", False),
        "after submit, id unrecorded": (api, "submit", True),
        "while polling": (api, "look", True),
        "results fetched, not committed": (CallCache, "aput", False),
    }[point]
    with batch_standin(batch_provider, auto_advance=True) as standin:
        with pytest.MonkeyPatch.context() as patch:
            asyncio.run(crash_at(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run", patch, target,
                                 name, after))
        made = len(standin.batches)
        assert made == (0 if point == "before submit" else 1)
        crashed = [e["event"] for e in journal(tmp_path / "run")]
        assert crashed == {"before submit": ["intent"], "after submit, id unrecorded": ["intent"]}.get(
            point, ["intent", "submitted"])
        result = asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
    assert result.new_trajectories == N
    assert len(standin.batches) == ROUNDS  # the crashed round's batch was collected, not sent again
    ids = custom_ids(standin)
    assert len(ids) == len(set(ids)) == N * ROUNDS
    assert standin.billed["requests"] == 0
    entries = journal(tmp_path / "run")
    submitted = [e for e in entries if e["event"] == "submitted"]
    # One batch per intent that reached the provider, named in the journal (found again after a
    # submit whose answer the kill cut off), and every custom_id of a batch starts with its intent.
    assert [e["batch"] for e in submitted] == [job.id for job in standin.batches]
    for entry, job in zip(submitted, standin.batches):
        assert {cid.rsplit("-", 1)[0] for cid in job.custom_ids} == {entry["intent"]}
    events = [e["event"] for e in entries]
    assert events.count("abandoned") == (1 if point == "before submit" else 0)
    assert events.count("collected") == ROUNDS
    with batch_standin(batch_provider, auto_advance=True) as clean:
        asyncio.run(run(batch_model(clean, tmp_path / "clean.sqlite"), tmp_path / "clean"))
    assert records(tmp_path / "run") == records(tmp_path / "clean")


# Each batch's last state when a window passed with one line of the first batch answered.
EXPIRED_STATES = {"openai": ["expired", "completed", "completed"], "anthropic": ["ended", "ended", "ended"]}


def test_expired_lines_go_in_the_next_batch(tmp_path: Path, batch_model: Any, batch_standin: Any,
                                            batch_provider: str) -> None:
    with batch_standin(batch_provider) as standin:
        async def drive() -> Any:
            task = asyncio.ensure_future(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
            while not standin.batches:
                await asyncio.sleep(0.01)
            if standin.batches[0].state == "validating":  # OpenAI's first state; Anthropic's runs at once
                standin.advance()
            standin.expire(standin.batches[0].id, done=1)  # one line answered, two expired
            standin.auto_advance = True
            return await task

        result = asyncio.run(drive())
    assert result.new_trajectories == N
    # The two expired lines go again with the answered trajectory's second round; then the
    # second round of the two others.
    assert [job.state for job in standin.batches] == EXPIRED_STATES[batch_provider]
    assert [len(job.custom_ids) for job in standin.batches] == [N, N, N - 1]
    assert sum(len(job.custom_ids) for job in standin.batches) == N * ROUNDS + (N - 1)
    assert standin.billed_batch["requests"] == N * ROUNDS and standin.billed["requests"] == 0


def test_a_failed_batch_stops_the_run_in_one_line_and_a_re_run_sends_its_calls_again(
        tmp_path: Path, batch_model: Any, batch_standin: Any) -> None:
    # OpenAI's alone: an Anthropic message batch cannot fail as a whole (a bad request ends as
    # an errored result, test_a_refused_request_fails_its_call_in_one_line).
    with batch_standin("openai", auto_advance=True) as standin:
        real = OpenAIStandin.create_batch

        def broken(self: OpenAIStandin, body: Any) -> Any:
            answer = real(self, body)
            self.batches[-1].extra["errors"] = [{"code": "token_limit_exceeded", "line": None, "message":
                                                 "Enqueued token limit reached for gpt-4o-mini."}]
            return answer

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(OpenAIStandin, "create_batch", broken)
            with pytest.raises(VeriloopError) as caught:
                asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
        message = str(caught.value)
        assert "\n" not in message and "token_limit_exceeded" in message and "re-run" in message
        assert [e["event"] for e in journal(tmp_path / "run")] == ["intent", "submitted", "failed"]
        result = asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
    assert result.new_trajectories == N
    assert len(standin.batches) == 1 + ROUNDS


@pytest.mark.parametrize("options, named", [
    (["--batch-poll-seconds", "5"], "--batch-poll-seconds goes with --batch"),
    (["--batch", "--executor", "ray"], "drop --executor ray, or --batch"),
])
def test_the_batch_options_a_run_cannot_take_are_one_line(tmp_path: Path, options: list[str], named: str) -> None:
    assert_one_line_error(veriloop("run", "--model", "openai/gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1",
                                   "-n", "1", "--out", str(tmp_path / "run"), *options, home=tmp_path), named)
    assert not (tmp_path / "run").exists()


def test_a_refused_request_fails_its_call_in_one_line(tmp_path: Path, batch_model: Any, batch_standin: Any,
                                                      batch_provider: str) -> None:
    with batch_standin(batch_provider, auto_advance=True, models={}) as standin:
        with pytest.raises(VeriloopError) as caught:
            asyncio.run(run(batch_model(standin, tmp_path / "calls.sqlite"), tmp_path / "run"))
    assert str(caught.value) == {
        "openai": "OpenAI Batch API: the server does not know the model 'gpt-4o-mini'; give --model openai/NAME with "
                  "a name it serves",
        "anthropic": "Anthropic does not know the model 'claude-sonnet-4-5' ('model: claude-sonnet-4-5'); give an id "
                     "it lists, e.g. anthropic/claude-sonnet-4-5"}[batch_provider]
    assert len(standin.batches) == 1 and standin.billed["requests"] == 0
    assert [e["event"] for e in journal(tmp_path / "run")] == ["intent", "submitted"]  # nothing collected: an error
