"""Feedback levels: how a rejected answer becomes the next user message.

none    re-ask the base prompt, saying nothing about the answer
binary  only that the answer is wrong
first   the first error the verifier found
all     every error the verifier found
llm     a critique the model writes itself (one `critique` call)

LEVELS is the registry of these renderers: a new level is one async function
`(episode, text, verdict, round) -> str` registered there, and `run --help` lists it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .domains.base import DOMAIN_FEEDBACK_LEVELS, Domain
from .episode import Episode
from .records import Instance, Message, Verdict, VerdictError
from .registry import Registry

# (episode, the rejected reply, its verdict, the round) -> the next user message.
FeedbackRenderer = Callable[[Episode, str, Verdict, int], Awaitable[str]]
LEVELS: Registry[FeedbackRenderer] = Registry("feedback level")

CRITIC_SYSTEM = "You review answers to problems and explain precisely what is wrong with them."
CRITIC_INSTRUCTIONS = (
    "This answer was judged incorrect. In a few sentences, say what is wrong with it and how to fix it. "
    "Do not give a full new answer."
)


def check_level(level: str) -> str:
    LEVELS.lookup(level)
    return level


def critique_messages(domain: Domain, instance: Instance, text: str) -> list[Message]:
    """Ask the model what is wrong with an answer it was told is incorrect (the `llm`
    feedback level, and the critique study)."""
    answer = domain.extract_answer(instance, text)
    shown = answer if answer is not None else text
    return [
        {"role": "system", "content": CRITIC_SYSTEM},
        {"role": "user", "content": f"{domain.judge_task(instance)}\n\nProposed answer:\n{shown}\n\n{CRITIC_INSTRUCTIONS}"},
    ]


@LEVELS.register("none")
async def _reask(episode: Episode, text: str, verdict: Verdict, round: int) -> str:
    return episode.domain.prompt(episode.instance)[-1]["content"]


def _domain_renders(level: str) -> FeedbackRenderer:
    async def render(episode: Episode, text: str, verdict: Verdict, round: int) -> str:
        return episode.domain.feedback(episode.instance, verdict, level)

    return render


for _level in DOMAIN_FEEDBACK_LEVELS:
    LEVELS.register(_level, _domain_renders(_level))


@LEVELS.register("llm")
async def _critique(episode: Episode, text: str, verdict: Verdict, round: int) -> str:
    domain, instance = episode.domain, episode.instance
    messages = critique_messages(domain, instance, text)
    critique = await episode.call_one("critique", messages, episode.params(temperature=0.0, max_tokens=200), round)
    critique_verdict = Verdict(ok=False, errors=[VerdictError(kind="critique", message=critique.strip())])
    return domain.feedback(instance, critique_verdict, "all")


async def render_feedback(level: str, episode: Episode, text: str, verdict: Verdict, round: int) -> str:
    return await LEVELS.lookup(level)(episode, text, verdict, round)
