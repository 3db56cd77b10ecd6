"""CRITIC's verifier: the model checks its own answer by interacting with tools, and
writes a critique that ends in a verdict.

Two kinds of evidence go into a critique. Some comes from running tools on the answer
itself, chosen by the domain (a math program is executed, a continuation is scored for
toxicity). The rest the model gathers itself with the domain's `critic_tools` (QA issues
search queries), up to `max_interactions` times. When a domain can phrase the critique
from tool results alone (toxicity: "the text has 39% toxicity of insult"), no model call
is made. Without tools (the paper's "CRITIC w/o Tool" ablation), nothing is run: the
model writes its queries and answers them itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..domains.base import CriticDomain, CriticTask, Domain
from ..episode import Episode
from ..errors import VeriloopError
from ..react import observation_message, react, self_evidence_protocol, tool_protocol
from ..records import Message, Verdict, VerdictError
from ..tools.base import Observation
from ..verdict_text import parse_verdict
from .base import BaseVerifier

CRITIC_SYSTEM = "You check answers to problems carefully, using evidence, and write a critique of them."
VERDICT_LINE = 'End with a line that is exactly "Verdict: correct" if the answer is right, or "Verdict: incorrect" if it is not.'
WRAP_UP = f"You have used all your tool calls. Write your critique now from the evidence you have. {VERDICT_LINE}"
MAX_SHOWN_CHARS = 3000


def as_critic_task(domain: Domain) -> CriticDomain:
    """The domain as a CRITIC task, or a VeriloopError naming the tasks that are."""
    if not isinstance(domain, CriticTask):
        raise VeriloopError(
            f"domain {domain.name!r} does not support CRITIC (it has no tool evidence or correction prompt); "
            "use gsm8k, math500, svamp, hotpotqa, toxicity or humaneval"
        )
    return domain


@dataclass
class Critique:
    """One verification. `ok` is the critic's own verdict (None if it gave none);
    `good_enough` is the domain's threshold on the tool evidence (None if it has none);
    `messages` + `reply` let a study ask a follow-up question in the same context."""

    text: str
    ok: bool | None
    good_enough: bool | None = None
    observations: list[Observation] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    reply: str = ""


def _evidence_block(observations: list[Observation]) -> str:
    lines = []
    for obs in observations:
        shown = obs.input if len(obs.input) <= 1500 else obs.input[:1500] + " …"
        lines.append(f"Action: {obs.tool}\nAction Input: {shown}\n{observation_message(obs)}")
    return "\n".join(lines)


class CriticVerifier(BaseVerifier):
    def __init__(self, use_tools: bool = True, max_interactions: int = 7, max_tokens: int = 320) -> None:
        self.use_tools = use_tools
        self.max_interactions = max_interactions
        self.max_tokens = max_tokens
        self.name = "critic" if use_tools else "critic-notool"

    def check_domain(self, domain: Domain) -> None:
        as_critic_task(domain)

    async def critique(self, episode: Episode, text: str, round: int, temperature: float = 0.0) -> Critique:
        domain = as_critic_task(episode.domain)
        instance = episode.instance
        evidence = domain.evidence(instance, text)
        observations: list[Observation] = []
        if self.use_tools:
            for tool, tool_input in evidence:
                observations.append(await episode.use_tool(tool, tool_input, round))
            canned = domain.tool_critique(instance, text, observations)
            if canned is not None:
                good = domain.good_enough(instance, text, observations)
                return Critique(text=canned, ok=good, good_enough=good, observations=observations)

        shown = text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + " …"
        parts = [episode.domain.judge_task(instance), f"Proposed answer:\n{shown}"]
        if observations:
            parts.append(f"Evidence from running tools on the proposed answer:\n{_evidence_block(observations)}")
        parts.append(domain.verify_instructions(instance))
        # The model calls tools itself only when the task has some and this run has a
        # toolbox; otherwise, where evidence would have been gathered, it writes its own.
        interactive = self.use_tools and bool(domain.critic_tools) and episode.tools is not None
        if interactive and episode.tools is not None:
            parts.append(tool_protocol(episode.tools.subset(domain.critic_tools).describe(), self.max_interactions))
        elif domain.critic_tools or (evidence and not self.use_tools):
            parts.append(self_evidence_protocol())
        parts.append(VERDICT_LINE)
        messages: list[Message] = [
            {"role": "system", "content": CRITIC_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        params = episode.params(temperature=temperature, max_tokens=self.max_tokens)
        transcript = await react(
            episode,
            messages,
            params,
            round,
            role="verify",
            max_interactions=self.max_interactions,
            wrap_up=WRAP_UP,
            use_tools=interactive,
            allowed=tuple(domain.critic_tools),
        )
        # As in the paper, the critique the corrector sees is the tool results followed
        # by what the model made of them.
        critique_text = f"{_evidence_block(observations)}\n{transcript.text}".strip()
        observations += transcript.observations
        return Critique(
            text=critique_text,
            ok=parse_verdict(transcript.last_reply) if transcript.last_reply else None,
            good_enough=domain.good_enough(instance, text, observations) if self.use_tools else None,
            observations=observations,
            messages=_conversation(messages, transcript.steps),
            reply=transcript.last_reply,
        )

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        crit = await self.critique(episode, text, round)
        ok = crit.ok is True or crit.good_enough is True
        return Verdict(
            ok=ok,
            errors=[] if ok else [VerdictError(kind="critique", message=crit.text)],
            unreadable=crit.ok is None and crit.good_enough is None,
            verifier=self.name,
        )


def _conversation(messages: list[Message], steps: list[str]) -> list[Message]:
    """The verification as alternating turns: model replies are assistant turns,
    observations user turns."""
    convo = list(messages)
    for step in steps:
        role = "user" if step.startswith("Observation:") else "assistant"
        if convo and convo[-1]["role"] == role:
            convo[-1] = {"role": role, "content": f"{convo[-1]['content']}\n{step}"}
        else:
            convo.append({"role": role, "content": step})
    return convo
