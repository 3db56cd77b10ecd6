"""Tool use as plain text that any chat model can follow (ReAct style).

The model writes

    Action: <tool name>
    Action Input: <what to give the tool>

and stops; the loop runs the tool and answers with a user turn `Observation: <result>`.
Generation stops at "Observation:" so a model cannot invent a tool's answer, except in
the no-tool ablation, where inventing the evidence is exactly what is measured: there
the model's own "Observation:" lines are left in place and no tool ever runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .episode import Episode
from .models.base import GenParams
from .records import Message, Role
from .tools.base import Observation

OBSERVATION = "Observation:"
_ACTION = re.compile(r"^\s*\**Action\**\s*:\s*(?P<name>[^\n]*)$", re.IGNORECASE | re.MULTILINE)
_INPUT = re.compile(r"^\s*\**Action Input\**\s*:\**[ \t]*", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*?)\n?```\s*$", re.DOTALL)
# Names models use for "I have finished with tools".
_FINISH = {"finish", "none", "no action", "done", "answer", "final answer", "stop", "n/a", ""}
MAX_OBSERVATION_CHARS = 2000


@dataclass
class Action:
    tool: str
    input: str


@dataclass
class ReactTranscript:
    """What a tool-using exchange produced: the model's turns with the observations
    between them, and the observations on their own."""

    steps: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(s.strip() for s in self.steps if s.strip())

    @property
    def last_reply(self) -> str:
        return self.steps[-1] if self.steps else ""


def tool_protocol(tools_description: str, max_interactions: int) -> str:
    return (
        "You can use these tools:\n"
        f"{tools_description}\n"
        "To use a tool, write these two lines and then stop:\n"
        "Action: <tool name>\n"
        "Action Input: <the input for the tool>\n"
        f'The result will come back as a message starting with "{OBSERVATION}". '
        f"You may use tools at most {max_interactions} times; use one tool per message."
    )


def self_evidence_protocol() -> str:
    """The no-tool ablation: same format, but the model supplies the evidence itself."""
    return (
        "You have no tools. Where you would look something up or run something, write the query as\n"
        "Action: <what you would use>\nAction Input: <the query>\n"
        f"and then write {OBSERVATION} followed by what you yourself know the result to be."
    )


def parse_action(reply: str) -> Action | None:
    """The last action a reply asks for, or None when it asks for none (or says it is
    finished). The input runs from "Action Input:" to the end of the reply, so a
    multi-line program arrives whole; code fences around it are removed."""
    actions = list(_ACTION.finditer(reply))
    if not actions:
        return None
    last = actions[-1]
    name = last.group("name").strip().strip("`*[]()\"'").strip()
    if name.lower() in _FINISH:
        return None
    after = reply[last.end():]
    m = _INPUT.search(after)
    raw = after[m.end():] if m else ""
    raw = raw.split(OBSERVATION, 1)[0].strip()
    fenced = _FENCE.match(raw)
    if fenced:
        raw = fenced.group(1).strip()
    elif "\n" in raw and name.lower() != "python":
        # Single-line tools: prose after the input line is the model thinking aloud.
        raw = raw.splitlines()[0].strip()
    return Action(tool=name.split()[0].lower() if name else name, input=raw.strip().strip('"').strip())


def observation_message(obs: Observation) -> str:
    text = obs.text if len(obs.text) <= MAX_OBSERVATION_CHARS else obs.text[:MAX_OBSERVATION_CHARS] + " …(cut)"
    return f"{OBSERVATION} {text}"


async def react(
    episode: Episode,
    messages: list[Message],
    params: GenParams,
    round: int,
    role: Role,
    max_interactions: int,
    wrap_up: str,
    use_tools: bool = True,
    allowed: tuple[str, ...] | None = None,
) -> ReactTranscript:
    """Let the model work through `messages` with tools until it stops asking for them
    (or has used `max_interactions`), then return the exchange. `wrap_up` is the user
    turn sent when the budget is spent, asking for the final text without tools.
    `allowed` limits which of the episode's tools this exchange may call."""
    transcript = ReactTranscript()
    convo = list(messages)
    if not use_tools:
        reply = await episode.call_one(role, convo, params, round)
        transcript.steps.append(reply)
        return transcript
    step_params = params.with_(stop=tuple(dict.fromkeys((*params.stop, OBSERVATION))))
    for _ in range(max_interactions):
        reply = await episode.call_one(role, convo, step_params, round)
        transcript.steps.append(reply)
        action = parse_action(reply)
        if action is None:
            return transcript
        obs = await episode.use_tool(action.tool, action.input, round, allowed=allowed)
        transcript.observations.append(obs)
        shown = observation_message(obs)
        transcript.steps.append(shown)
        convo += [{"role": "assistant", "content": reply}, {"role": "user", "content": shown}]
    # The budget is spent: the wrap-up rides on the last observation turn, so the
    # conversation keeps alternating user and assistant turns.
    last = convo[-1]
    convo[-1] = {"role": last["role"], "content": f"{last['content']}\n\n{wrap_up}"}
    reply = await episode.call_one(role, convo, params, round)
    transcript.steps.append(reply)
    return transcript
