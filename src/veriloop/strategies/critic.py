"""CRITIC (verify with tools, critique, correct) and the baselines it is compared with:
ReAct, ReAct -> CRITIC, CRITIC without tools, CRITIC* (oracle) and rejection sampling.

Rounds: round 1 is the initial answer, round r+1 the r-th correction. Each answer is
verified before the loop decides whether to stop, so a trajectory's rounds carry the
critic's verdict on every answer it produced (what the iteration plots are drawn from).

Sampling follows the paper per task unless the spec says otherwise: greedy for QA;
greedy first and top-p 0.5 for math corrections; top-p 0.9 throughout for toxicity.
A domain states its defaults as `critic_sampling` (the `CriticSampling` capability).

The verify -> critique -> correct loop is written once, as `critique_loop`: the CRITIC
strategy and the blog's chat agent (veriloop.agent) are two configurations of it, each
giving its own check of an answer and its own correction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..domains.base import CriticSampling, Domain
from ..episode import Episode
from ..react import react, tool_protocol
from ..records import Message, Verdict, VerdictError
from ..verifiers.critic import CriticVerifier, as_critic_task
from .base import Strategy

GREEDY = {"temperature": 0.0, "top_p": 1.0, "correction_temperature": 0.0, "correction_top_p": 1.0}
REACT_WRAP_UP = "You have used all your tool calls. Give your final answer now, in the format asked for."


def _sampling(episode: Episode, key: str, override: float | None) -> float:
    if override is not None:
        return override
    own = episode.domain.critic_sampling if isinstance(episode.domain, CriticSampling) else {}
    return {**GREEDY, **own}[key]


def _react_messages(episode: Episode, max_interactions: int) -> list[Message]:
    domain = as_critic_task(episode.domain)
    messages = [dict(m) for m in episode.domain.prompt(episode.instance)]
    box = episode.tools.subset(domain.critic_tools) if episode.tools is not None else None
    if box is not None and box.names:
        protocol = tool_protocol(box.describe(), max_interactions)
        messages[-1]["content"] += f"\n\nBefore you answer, look up what you need.\n{protocol}"
    return messages


async def react_answer(episode: Episode, temperature: float, top_p: float, max_interactions: int, round: int) -> str:
    """An answer reached by interleaving reasoning and tool calls (the ReAct baseline)."""
    domain = as_critic_task(episode.domain)
    params = episode.params(temperature=temperature, top_p=top_p)
    transcript = await react(
        episode,
        _react_messages(episode, max_interactions),
        params,
        round,
        role="generate",
        max_interactions=max_interactions,
        wrap_up=REACT_WRAP_UP,
        use_tools=episode.tools is not None,
        allowed=tuple(domain.critic_tools),
    )
    last = transcript.last_reply
    # The answer line is normally in the last reply; if the model put it earlier, the
    # whole exchange still contains it.
    return last if episode.domain.extract_answer(episode.instance, last) is not None else transcript.text


@dataclass
class Check:
    """One check of the current answer inside `critique_loop`."""

    verdict: Verdict | None  # the round's verdict; None: the answer is not recorded as a round
    critique: str  # what the correction is made from
    stop: str | None = None  # a stop reason: the loop ends with this answer


async def critique_loop(
    episode: Episode,
    text: str,
    check: Callable[[str, int], Awaitable[Check]],
    correct: Callable[[str, Check, int], Awaitable[str]],
    max_corrections: int,
    *,
    check_last: bool = True,
    stop_on_unchanged: int = 0,
    out_of_rounds: str = "max_rounds",
) -> None:
    """Check the answer `text`, stop or correct it, and again, at most `max_corrections`
    times; finish the episode. Round r holds the answer checked r-th (round 1 the initial
    one), with its verdict; a correction is asked for in the round of the answer it makes.
    `check_last`: check the last correction too (CRITIC) or end with it (the chat agent).
    `stop_on_unchanged`: stop when the last n answers share one canonical key (0: never)."""
    domain, instance = episode.domain, episode.instance
    keys = [domain.canonical(instance, domain.extract_answer(instance, text))]
    for round in range(1, max_corrections + 2):
        if round > max_corrections and not check_last:
            break
        found = await check(text, round)
        if found.verdict is not None:
            episode.add_round(round, text, found.verdict)
        if found.stop is not None:
            episode.finish(text, found.stop)
            return
        if round > max_corrections:
            break
        text = await correct(text, found, round)
        keys.append(domain.canonical(instance, domain.extract_answer(instance, text)))
        n = stop_on_unchanged
        if n and len(keys) >= n and len(set(keys[-n:])) == 1 and keys[-1] is not None:
            episode.add_round(round + 1, text)
            episode.finish(text, "unchanged")
            return
    episode.finish(text, out_of_rounds)


class Critic(Strategy):
    kind = "critic"
    summary = (
        "initial answer, then verify with tools -> critique -> correct until the critic accepts, the answer "
        "stops changing, the task threshold is met, or max_corrections (tools=false: the model writes its own "
        "evidence; oracle=true: CRITIC*, only wrong answers are corrected; init=react: ReAct -> CRITIC)"
    )

    tools: bool = True
    oracle: bool = False
    init: Literal["standard", "react"] = "standard"
    max_corrections: int | None = Field(None, ge=0)  # None: the task's own (QA 3, math 4, toxicity 4)
    max_interactions: int = Field(7, ge=1)
    stop_on_verdict: bool = True
    stop_on_unchanged: int = Field(2, ge=0)  # 0: never stop for that
    stop_on_threshold: bool = True
    temperature: float | None = None
    correction_temperature: float | None = None

    def check_domain(self, domain: Domain) -> None:
        as_critic_task(domain)

    async def run(self, episode: Episode) -> None:
        domain = as_critic_task(episode.domain)
        instance = episode.instance
        max_corrections = domain.max_corrections if self.max_corrections is None else self.max_corrections
        verifier = CriticVerifier(use_tools=self.tools, max_interactions=self.max_interactions)
        temperature = _sampling(episode, "temperature", self.temperature)
        top_p = _sampling(episode, "top_p", None)
        if self.init == "react":
            text = await react_answer(episode, temperature, top_p, self.max_interactions, round=1)
        else:
            params = episode.params(temperature=temperature, top_p=top_p)
            text = await episode.call_one("generate", episode.domain.prompt(instance), params, round=1)
        correction_params = episode.params(
            temperature=_sampling(episode, "correction_temperature", self.correction_temperature),
            top_p=_sampling(episode, "correction_top_p", None),
        )

        async def check(text: str, round: int) -> Check:
            if self.oracle and episode.domain.score(instance, text):
                return Check(Verdict(ok=True, verifier="oracle"), "", stop="oracle_correct")
            crit = await verifier.critique(episode, text, round, temperature=0.0)
            ok = crit.ok is True
            verdict = Verdict(
                ok=ok,
                errors=[] if ok else [VerdictError(kind="critique", message=crit.text)],
                unreadable=crit.ok is None and crit.good_enough is None,
                score=None,
                verifier=verifier.name,
            )
            stop = None
            if self.stop_on_threshold and crit.good_enough is True:
                stop = "threshold"
            elif self.stop_on_verdict and not self.oracle and crit.ok is True:
                stop = "critic_accepted"
            return Check(verdict, crit.text, stop)

        async def correct(text: str, found: Check, round: int) -> str:
            messages = [
                *episode.domain.prompt(instance),
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"A check of your answer found:\n{found.critique}\n\n{domain.correction_request(instance)}"},
            ]
            return await episode.call_one("correct", messages, correction_params.with_(sample_offset=round), round + 1)

        await critique_loop(episode, text, check, correct, max_corrections, stop_on_unchanged=self.stop_on_unchanged)


class React(Strategy):
    kind = "react"
    summary = "ReAct: reason and call the task's tools (e.g. search) before answering; no correction"

    max_interactions: int = Field(7, ge=1)
    temperature: float | None = None

    def check_domain(self, domain: Domain) -> None:
        as_critic_task(domain)

    async def run(self, episode: Episode) -> None:
        text = await react_answer(
            episode,
            _sampling(episode, "temperature", self.temperature),
            _sampling(episode, "top_p", None),
            self.max_interactions,
            round=1,
        )
        episode.add_round(1, text)
        episode.finish(text, "answered")


class RejectionSampling(Strategy):
    kind = "rejection-sampling"
    summary = "n fresh samples of the base prompt; keep the best by the task metric (an oracle baseline: it reads the reference)"

    n: int = Field(4, ge=1)
    temperature: float = 1.0
    top_p: float = 0.5

    def check_domain(self, domain: Domain) -> None:
        as_critic_task(domain)

    async def run(self, episode: Episode) -> None:
        domain = as_critic_task(episode.domain)
        params = episode.params(temperature=self.temperature, top_p=self.top_p, n=self.n)
        completions = await episode.call("generate", episode.domain.prompt(episode.instance), params, round=1)
        best_text, best_score = completions[0].text, float("-inf")
        for i, c in enumerate(completions, start=1):
            episode.add_round(i, c.text)
            score = domain.sample_metric(episode.instance, c.text)
            if score > best_score:  # ties keep the earliest sample
                best_text, best_score = c.text, score
        episode.finish(best_text, "best_of_n")
