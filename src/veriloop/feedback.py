"""Feedback levels: how a rejected answer becomes the next user message.

none    re-ask the base prompt, saying nothing about the answer
binary  only that the answer is wrong
first   the first error the verifier found
all     every error the verifier found
llm     a critique the model writes itself (one `critique` call)
"""

from __future__ import annotations

from .domains.base import Domain
from .episode import Episode
from .errors import VeriloopError
from .records import Instance, Message, Verdict, VerdictError

LEVELS = ("none", "binary", "first", "all", "llm")

CRITIC_SYSTEM = "You review answers to problems and explain precisely what is wrong with them."
CRITIC_INSTRUCTIONS = (
    "This answer was judged incorrect. In a few sentences, say what is wrong with it and how to fix it. "
    "Do not give a full new answer."
)


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise VeriloopError(f"unknown feedback level {level!r}; choose one of: {', '.join(LEVELS)}")
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


async def render_feedback(level: str, episode: Episode, text: str, verdict: Verdict, round: int) -> str:
    domain, instance = episode.domain, episode.instance
    if level == "none":
        return domain.prompt(instance)[-1]["content"]
    if level in ("binary", "first", "all"):
        return domain.feedback(instance, verdict, level)
    if level == "llm":
        messages = critique_messages(domain, instance, text)
        critique = await episode.call_one("critique", messages, episode.params(temperature=0.0, max_tokens=200), round)
        critique_verdict = Verdict(ok=False, errors=[VerdictError(kind="critique", message=critique.strip())])
        return domain.feedback(instance, critique_verdict, "all")
    raise VeriloopError(f"unknown feedback level {level!r}")
