"""A scripted model: the test chooses every reply, so a loop's control flow can be pinned
exactly. Everything else a strategy touches (domain, verifier, feedback, episode
records, tools) stays the real thing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from veriloop.domains.base import Domain
from veriloop.episode import Episode
from veriloop.models.base import Completion, GenParams
from veriloop.records import Instance, Message, Trajectory
from veriloop.strategies import Strategy, parse_strategy
from veriloop.tools.base import Toolbox, ToolCache
from veriloop.tools.search import make_search_tool


class ScriptedModel:
    """Replies from a list, in call order (one reply per completion, so a call with n=3
    takes three); records a copy of what it was asked, one entry per reply. Asking for
    more replies than were scripted fails the test, naming the prompt."""

    backend = "scripted"
    identity = "scripted"
    name = "scripted"
    preferred_concurrency = 1

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.asked: list[tuple[list[Message], GenParams]] = []
        self.requests = 0  # generate() calls, whatever their n

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        self.requests += 1
        out = []
        for _ in range(params.n):
            # A copy: a loop may extend its message list after the call.
            self.asked.append(([dict(m) for m in messages], params))
            if not self.replies:
                raise AssertionError(
                    f"the loop made more calls than scripted; last prompt: {messages[-1]['content'][-300:]}"
                )
            text = self.replies.pop(0)
            out.append(Completion(text=text, finish_reason="stop", prompt_tokens=10, completion_tokens=5))
        return out

    async def aclose(self) -> None:
        pass


class SameReply(ScriptedModel):
    """Gives `reply` to every completion, however many are asked for: for long runs whose
    control flow is not the point (what a loop does on chosen replies is pinned with
    ScriptedModel; what it does on a real model's, by the model-marked tests)."""

    def __init__(self, reply: str) -> None:
        super().__init__([])
        self.reply = reply

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        self.requests += 1
        return [Completion(text=self.reply, finish_reason="stop", prompt_tokens=10, completion_tokens=5)
                for _ in range(params.n)]


def play(
    strategy: str | Strategy,
    domain: Domain,
    instance: Instance,
    replies: Sequence[str],
    tools: Toolbox | None = None,
    seed: int = 0,
) -> tuple[Trajectory, ScriptedModel]:
    """Run one strategy on one instance against the scripted replies; the trajectory it
    left and the model (what it was asked, what is left of its script)."""
    strategy = parse_strategy(strategy)
    model = ScriptedModel(replies)
    t = Trajectory(
        strategy=strategy.canonical, domain=domain.name, model=model.name, instance_id=instance.id, seed=seed
    )
    episode = Episode(model=model, domain=domain, instance=instance, seed=seed, trajectory=t, tools=tools)
    asyncio.run(strategy.run(episode))
    return t, model


def search_toolbox(folder: Path, documents: list[dict[str, str]]) -> Toolbox:
    """The real BM25 search tool over `documents` ({title, text}), with its cache in `folder`."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in documents))
    return Toolbox([make_search_tool(corpus=corpus)], cache=ToolCache(folder / "tools.sqlite"))


class Gated:
    """A model function whose calls each wait for `gate`, logging each start, end, failure
    and cancellation: a test decides when a call in flight answers. The reply names the
    call's number (and, with `say_sample`, the sample and temperature asked for). The first
    call fails with `fail_first`, every call with `fail_all` (a request the server refuses).
    Calls wait for the gate of the moment they start: a test that opens it and puts a new
    one in its place holds the calls that start next."""

    def __init__(self, fail_first: bool = False, say_sample: bool = False, fail_all: bool = False) -> None:
        self.gate = asyncio.Event()
        self.log: list[str] = []
        self.fail_first = fail_first
        self.fail_all = fail_all
        self.say_sample = say_sample

    async def __call__(self, messages: list[dict], params: GenParams) -> str:
        number = sum(entry.startswith("start") for entry in self.log) + 1
        self.log.append(f"start {number}")
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.log.append(f"cancelled {number}")
            raise
        if self.fail_all:
            self.log.append(f"failed {number}")
            raise RuntimeError("the server refused the request")
        if self.fail_first and number == 1:
            self.log.append(f"failed {number}")
            raise RuntimeError("the server went away")
        self.log.append(f"end {number}")
        if self.say_sample:
            return f"reply {number} to sample {params.sample_offset} at t={params.temperature}"
        return f"reply {number}"


class Adder:
    """A model that adds the two numbers of a prompt "L+R", and counts its closings."""

    backend = "function"
    identity = "adder-v1"
    name = "adder"
    preferred_concurrency = 2

    def __init__(self) -> None:
        self.closed = 0

    async def generate(self, messages, params):
        left, right = messages[-1]["content"].split("+")
        return [Completion(text=str(int(left) + int(right)), finish_reason="stop", prompt_tokens=10,
                           completion_tokens=5) for _ in range(params.n)]

    async def aclose(self) -> None:
        self.closed += 1
