"""The CRITIC agent of the blog post: Generator -> Verifier -> Critic -> Corrector.

One turn: the Verifier picks the single claim of the current answer that most needs
checking and one tool call that would check it (`Claim / Action / Action Input`); the
tool runs; the Critic, taking the tool's result as ground truth, either says
"No problem." (the loop ends) or says what is wrong; the Corrector rewrites the answer
from the claim, the tool result and the critique. At most `max_turns` turns.

`ask()` is the Python entry point: a question in, the answer and its whole trajectory
out. `on_step` sees every step as it happens (the chat command prints them).

The loop is CRITIC's own (`strategies.critic.critique_loop`): the agent gives it its
check (claim, tool, critic) and its correction, ends with the last correction instead
of checking it, and stops when there is nothing to check or the critic finds no problem.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .episode import Episode
from .models.base import Model
from .react import observation_message, parse_action
from .records import Instance, Message, Trajectory, Verdict, VerdictError
from .strategies.critic import Check, critique_loop
from .tools.base import Observation, Toolbox

NO_PROBLEM = "no problem"
_CLAIM = re.compile(r"^\s*\**Claim\**\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


class OpenQuestion:
    """A question with no domain-specific checker: what the agent answers. With a
    reference, an answer is right when it contains the reference (case-insensitive)."""

    name = "question"
    description = "An open question answered in free text."
    answer_tokens = 400

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        return Instance(id="q", data={"question": str(raw["question"])}, reference=raw.get("reference"))

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        return []

    def prompt(self, instance: Instance) -> list[Message]:
        return [{"role": "user", "content": instance.data["question"]}]

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        return text.strip() or None

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return None if answer is None else " ".join(answer.lower().split())

    def verify(self, instance: Instance, text: str) -> Verdict:
        ok = self.score(instance, text)
        return Verdict(ok=ok, errors=[] if ok else [VerdictError(kind="reference", message="the reference answer is not in the reply")])

    def score(self, instance: Instance, text: str | None) -> bool:
        ref = instance.reference
        return bool(ref) and text is not None and str(ref).lower() in text.lower()

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        return "; ".join(e.message for e in verdict.errors) or "The answer is not right."

    def judge_task(self, instance: Instance) -> str:
        return f"Question: {instance.data['question']}"


@dataclass
class AgentStep:
    turn: int
    role: str  # "generator" | "verifier" | "tool" | "critic" | "corrector"
    text: str
    claim: str | None = None
    observation: Observation | None = None


@dataclass
class AgentResult:
    question: str
    answer: str
    steps: list[AgentStep] = field(default_factory=list)
    trajectory: Trajectory | None = None
    stop_reason: str = ""


GENERATOR_SYSTEM = (
    "You are a helpful assistant. Today's date is {today}. Answer the user's question from what you know, "
    "clearly and concisely."
)
VERIFIER_INSTRUCTIONS = (
    "Pick the single claim in this answer that most needs checking (a fact, a number, a calculation, a date), and "
    "one tool call that would check it. Reply in exactly this form:\n"
    "Claim: <the claim>\nAction: <tool name>\nAction Input: <the input for the tool>\n"
    "If nothing in the answer can be checked with these tools, reply with Action: none."
)
CRITIC_INSTRUCTIONS = (
    "Treat the tool result as the truth. If the answer agrees with it, reply exactly: No problem. "
    "Otherwise say in one or two sentences what is wrong in the answer and what the tool result shows instead."
)
CORRECTOR_INSTRUCTIONS = (
    "Rewrite the answer so that it agrees with the tool result and the critique. Keep what was right. "
    "Reply with the new answer only."
)


async def ask(
    model: Model,
    question: str,
    tools: Toolbox,
    max_turns: int = 5,
    history: list[tuple[str, str]] | None = None,
    on_step: Callable[[AgentStep], None] | None = None,
    seed: int = 0,
    today: _dt.date | None = None,
) -> AgentResult:
    domain = OpenQuestion()
    instance = domain.parse_instance({"question": question})
    trajectory = Trajectory(strategy="agent", domain=domain.name, model=model.name, instance_id="q", seed=seed)
    episode = Episode(model=model, domain=domain, instance=instance, seed=seed, trajectory=trajectory, tools=tools)
    params = episode.params(temperature=0.0)
    result = AgentResult(question=question, answer="", trajectory=trajectory)

    def emit(step: AgentStep) -> None:
        result.steps.append(step)
        if on_step:
            on_step(step)

    system = GENERATOR_SYSTEM.format(today=(today or _dt.date.today()).isoformat())
    messages: list[Message] = [{"role": "system", "content": system}]
    for past_q, past_a in history or []:
        messages += [{"role": "user", "content": past_q}, {"role": "assistant", "content": past_a}]
    messages.append({"role": "user", "content": question})
    answer = (await episode.call_one("generate", messages, params, round=1)).strip()
    emit(AgentStep(turn=0, role="generator", text=answer))

    def asked(answer: str) -> str:
        return f"Question: {question}\n\nAnswer:\n{answer}"

    async def check(answer: str, turn: int) -> Check:
        verifier_prompt = [{"role": "user", "content": f"{asked(answer)}\n\nTools:\n{tools.describe()}\n\n{VERIFIER_INSTRUCTIONS}"}]
        plan = await episode.call_one("verify", verifier_prompt, params.with_(max_tokens=200), round=turn)
        claim_match = _CLAIM.search(plan)
        claim = claim_match.group(1).strip() if claim_match else None
        emit(AgentStep(turn=turn, role="verifier", text=plan.strip(), claim=claim))
        action = parse_action(plan)
        if action is None:
            return Check(None, "", stop="nothing_to_check")
        obs = await episode.use_tool(action.tool, action.input, round=turn)
        emit(AgentStep(turn=turn, role="tool", text=obs.text, observation=obs))
        evidence = f"Claim: {claim or '(not stated)'}\nAction: {action.tool}\nAction Input: {action.input}\n{observation_message(obs)}"
        critic_prompt = [{"role": "user", "content": f"{asked(answer)}\n\n{evidence}\n\n{CRITIC_INSTRUCTIONS}"}]
        critique = (await episode.call_one("critique", critic_prompt, params.with_(max_tokens=200), round=turn)).strip()
        emit(AgentStep(turn=turn, role="critic", text=critique))
        accepted = critique.lower().strip(" .!").startswith(NO_PROBLEM)
        errors = [] if accepted else [VerdictError(kind="critique", message=critique)]
        # The corrector sees the evidence and the critique together.
        return Check(Verdict(ok=accepted, verifier="critic", errors=errors), f"{evidence}\n\nCritique: {critique}",
                     stop="no_problem" if accepted else None)

    async def correct(answer: str, found: Check, turn: int) -> str:
        corrector_prompt = [{"role": "user", "content": f"{asked(answer)}\n\n{found.critique}\n\n{CORRECTOR_INSTRUCTIONS}"}]
        answer = (await episode.call_one("correct", corrector_prompt, params, round=turn + 1)).strip()
        emit(AgentStep(turn=turn, role="corrector", text=answer))
        return answer

    await critique_loop(episode, answer, check, correct, max_turns, check_last=False, out_of_rounds="max_turns")
    result.answer = trajectory.final_text or ""
    result.stop_reason = trajectory.stop_reason or ""
    return result
