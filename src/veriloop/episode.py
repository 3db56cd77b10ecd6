"""One strategy working on one instance: the single door to the model, which records
every call into the trajectory.

The messages sent are made storable here (lone surrogates replaced, see
veriloop.records), whatever built them: a domain's prompt, a check's feedback, a tool's
observation. So the model, the cache key and the record all see the same text.

A domain's answer and ground truth are functions of (instance, text): a final text that
a round already read and scored takes that round's answer and correctness.

The domain is given the whole contract here, once (`as_base_domain`): an episode's
`domain` is a `BaseDomain`, so strategies and verifiers ask it any hook, and ask
`isinstance` about a capability, without wrapping it again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .domains.base import BaseDomain, Domain, as_base_domain
from .errors import VeriloopError
from .models.base import Completion, GenParams, Model
from .progress import count_calls
from .records import CallRecord, Instance, Message, Role, RoundRecord, ToolRecord, Trajectory, Verdict, storable

if TYPE_CHECKING:
    from .tools.base import Observation, Toolbox


def check_count(model_name: str, completions: list[Completion], wanted: int) -> None:
    """A backend must return one completion per sample asked for: fewer would silently
    shrink a vote or a best-of-n."""
    if len(completions) != wanted:
        raise VeriloopError(
            f"model {model_name!r} returned {len(completions)} completions when asked for {wanted} (params.n); "
            "a model must return exactly params.n completions (wrap a one-reply function with veriloop.model(fn))"
        )


@dataclass(init=False)
class Episode:
    model: Model
    domain: BaseDomain
    instance: Instance
    seed: int
    trajectory: Trajectory
    tools: Toolbox | None
    # Calls of these roles go to another model than the generator (a judge, a critic,
    # SelfCheck's checker); each such call record names the model that answered.
    role_models: dict[str, Model]

    def __init__(
        self, model: Model, domain: Domain, instance: Instance, seed: int, trajectory: Trajectory,
        tools: Toolbox | None = None, role_models: dict[str, Model] | None = None,
    ) -> None:
        self.model = model
        self.domain = as_base_domain(domain)
        self.instance = instance
        self.seed = seed
        self.trajectory = trajectory
        self.tools = tools
        self.role_models = role_models if role_models is not None else {}

    def model_for(self, role: Role) -> Model:
        return self.role_models.get(role, self.model)

    def params(self, **overrides: object) -> GenParams:
        base = GenParams(seed=self.seed, max_tokens=self.domain.answer_tokens)
        return base.with_(**overrides)

    async def call(
        self, role: Role, messages: list[Message], params: GenParams, round: int,
        stage: str | None = None, step: int | None = None,
    ) -> list[Completion]:
        model = self.model_for(role)
        messages = storable(messages)
        completions = await model.generate(messages, params)
        check_count(model.name, completions, params.n)
        count_calls(len(completions))
        for i, c in enumerate(completions):
            self.trajectory.calls.append(
                CallRecord(
                    role=role,
                    round=round,
                    sample_index=params.sample_offset + i,
                    messages=messages,
                    response=c.text,
                    finish_reason=c.finish_reason,
                    prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens,
                    seconds=0.0 if c.cached else c.seconds,
                    cached=c.cached,
                    stage=stage,
                    step=step,
                    model=None if model is self.model else model.name,
                    surrogates_replaced=c.surrogates_replaced,
                    reasoning=c.reasoning,
                    reasoning_tokens=c.reasoning_tokens,
                    cached_prompt_tokens=c.cached_prompt_tokens,
                    sent=c.sent,
                )
            )
        return completions

    async def call_one(
        self, role: Role, messages: list[Message], params: GenParams, round: int,
        stage: str | None = None, step: int | None = None,
    ) -> str:
        return (await self.call(role, messages, params.with_(n=1), round, stage, step))[0].text

    async def use_tool(
        self, name: str, tool_input: str, round: int, allowed: tuple[str, ...] | None = None
    ) -> Observation:
        """Call a tool through the episode's toolbox and record the call. A name outside
        `allowed` is answered like an unknown one, naming the tools that are allowed."""
        if self.tools is None:
            raise VeriloopError(f"this run has no tools configured, but the strategy asked for {name!r}")
        box = self.tools if allowed is None else self.tools.subset(allowed)
        obs = await box.call(name, tool_input)
        self.trajectory.tool_calls.append(
            ToolRecord(
                round=round, tool=obs.tool, input=tool_input, text=obs.text, ok=obs.ok, data=obs.data,
                seconds=obs.seconds, cached=obs.cached,
            )
        )
        return obs

    def add_round(self, round: int, text: str, verdict: Verdict | None = None) -> RoundRecord:
        record = RoundRecord(
            round=round,
            text=text,
            answer=self.domain.extract_answer(self.instance, text),
            verdict=verdict,
            correct=self.domain.score(self.instance, text),
        )
        self.trajectory.rounds.append(record)
        return record

    def finish(self, text: str | None, stop_reason: str) -> None:
        t = self.trajectory
        t.final_text = text
        # A final text a round already scored is not read and scored again: a domain's
        # answer and ground truth are functions of (instance, text), and scoring can be
        # costly (Game of 24's checker on every trajectory, HumanEval's hidden tests in the
        # sandbox), so the round's record and the trajectory's can never disagree.
        scored = next((r for r in reversed(t.rounds) if text is not None and r.text == text), None)
        if scored is not None:
            t.final_answer, t.correct = scored.answer, scored.correct
        else:
            t.final_answer = None if text is None else self.domain.extract_answer(self.instance, text)
            t.correct = text is not None and self.domain.score(self.instance, text)
        t.stop_reason = stop_reason
