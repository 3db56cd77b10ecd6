"""SelfCheck's four-stage step checker, and the single-call global checker it is compared
with.

For step i of a solution: (1) target — what the step sets out to do, in one sentence;
(2) collection — which facts of the question and which earlier steps it uses; (3)
regeneration — reach that target again from only those, without seeing step i; (4)
comparison — does the regenerated result support, contradict or not bear on step i?
Each stage is its own zero-shot call. Stages 1 and 2 share their whole prompt up to the
last instruction, so an in-process model evaluates the shared part once; stage 3 sees
neither the step nor the rest of the solution, which is what makes it independent.

Calls go through an `Ask` function, so the same checker runs inside an episode (every
call recorded in the trajectory) or on any model a user brings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..models.base import GenParams, Model
from ..progress import count_calls
from ..records import Message
from .records import SolutionCheck, StepCheck
from .scoring import LAMBDA_CONTRADICT, LAMBDA_UNRELATED, confidence
from .text import parse_comparison, parse_global, parse_used, split_facts, split_steps

# (messages, params, stage, round of the solution, step) -> the reply text
Ask = Callable[[list[Message], GenParams, str, int, int | None], Awaitable[str]]

CHECK_SYSTEM = "You examine step-by-step solutions to math problems, one step at a time, and answer exactly what is asked."
SOLVE_SYSTEM = "You carry out small, well-defined math tasks carefully and state the result."
GLOBAL_SYSTEM = "You check solutions to math problems."


@dataclass(frozen=True)
class CheckSettings:
    lambda_contradict: float = LAMBDA_CONTRADICT
    lambda_unrelated: float = LAMBDA_UNRELATED
    # Steps checked per solution: a runaway solution of hundreds of steps costs at most
    # this many step checks (the first ones); None checks every step.
    max_steps: int | None = 20
    # Longer steps and questions are cut when shown, so one huge step cannot overflow a prompt.
    max_shown_chars: int = 1500
    target_tokens: int = 64
    collect_tokens: int = 48
    regenerate_tokens: int = 192
    compare_tokens: int = 128
    global_tokens: int = 384

    def __post_init__(self) -> None:
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be at least 1 (or None for no cap)")
        if self.lambda_contradict < 0 or self.lambda_unrelated < 0:
            raise ValueError("the lambdas must not be negative")


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_sentence(text: str, limit: int = 400) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return _cut(line, limit)


class StepChecker:
    """Checks solutions to one question. `concurrency` is how many steps may be in
    flight at once (the backend's preferred concurrency: 1 for an in-process model).
    `on_step(done, total)` is called as the steps of a `check_many` are checked (four
    calls each), from (0, total) on."""

    def __init__(self, ask: Ask, settings: CheckSettings | None = None, seed: int | None = 0, concurrency: int = 1,
                 on_step: Callable[[int, int], None] | None = None) -> None:
        self.ask = ask
        self.settings = settings or CheckSettings()
        self.seed = seed
        self.concurrency = max(1, concurrency)
        self.on_step = on_step

    def _params(self, max_tokens: int) -> GenParams:
        return GenParams(temperature=0.0, max_tokens=max_tokens, seed=self.seed)

    # ------------------------------------------------------------------ prompts

    def _context(self, facts: Sequence[str], steps: Sequence[str], i: int) -> str:
        limit = self.settings.max_shown_chars
        lines = ["The problem, split into numbered pieces of information:"]
        lines += [f"Information {k}: {_cut(f, limit)}" for k, f in enumerate(facts, start=1)]
        if i > 1:
            lines += ["", "The solution so far:"]
            lines += [f"Step {k}: {_cut(s, limit)}" for k, s in enumerate(steps[: i - 1], start=1)]
        lines += ["", "The step to examine:", f"Step {i}: {_cut(steps[i - 1], limit)}"]
        return "\n".join(lines)

    def target_messages(self, facts: Sequence[str], steps: Sequence[str], i: int) -> list[Message]:
        ask = (
            f"In one sentence, state what Step {i} sets out to work out or establish: its goal, not its "
            f"result, and without copying its wording. Begin with \"The step aims to\"."
        )
        return [{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": f"{self._context(facts, steps, i)}\n\n{ask}"}]

    def collect_messages(self, facts: Sequence[str], steps: Sequence[str], i: int) -> list[Message]:
        # The reply format carries no example numbers: small models copy them.
        ask = (
            f"Which pieces of information and which earlier steps does Step {i} directly rely on? Reply with "
            "a single line of the form \"Information: <their numbers>; Steps: <their numbers>\", writing none "
            "where it relies on nothing of that kind."
        )
        return [{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": f"{self._context(facts, steps, i)}\n\n{ask}"}]

    def regenerate_messages(self, facts: Sequence[str], steps: Sequence[str], used_facts: Sequence[int],
                            used_steps: Sequence[int], target: str) -> list[Message]:
        limit = self.settings.max_shown_chars
        given = [f"Information {k}: {_cut(facts[k - 1], limit)}" for k in used_facts]
        given += [f"Step {k}: {_cut(steps[k - 1], limit)}" for k in used_steps]
        user = (
            "What you are given:\n" + "\n".join(given) + f"\n\nYour task: {target}\n\n"
            "Using only what you are given, carry out this task yourself in a few short lines, "
            "and end by stating the result you reach."
        )
        return [{"role": "system", "content": SOLVE_SYSTEM}, {"role": "user", "content": user}]

    def compare_messages(self, step_text: str, i: int, regenerated: str) -> list[Message]:
        limit = self.settings.max_shown_chars
        user = (
            f"An independent attempt at the same task:\n{_cut(regenerated, limit)}\n\n"
            f"The original step:\nStep {i}: {_cut(step_text, limit)}\n\n"
            "Compare the result of the independent attempt with the conclusion of the original step. "
            "Does the attempt support the step's conclusion, contradict it, or is it not directly related "
            "to it? Explain in one or two sentences, then finish with exactly one of these lines:\n"
            "Conclusion: supports\nConclusion: contradicts\nConclusion: not related"
        )
        return [{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": user}]

    def global_messages(self, question: str, solution: str) -> list[Message]:
        user = (
            f"Problem:\n{_cut(question, 4 * self.settings.max_shown_chars)}\n\n"
            f"Proposed solution:\n{_cut(solution, 8 * self.settings.max_shown_chars)}\n\n"
            "Is this solution correct? Check it, then finish with exactly one line: "
            "Verdict: correct, or Verdict: incorrect."
        )
        return [{"role": "system", "content": GLOBAL_SYSTEM}, {"role": "user", "content": user}]

    # ------------------------------------------------------------------ checking

    async def check_step(self, facts: Sequence[str], steps: Sequence[str], i: int, round: int = 1) -> StepCheck:
        s = self.settings
        target_reply, collect_reply = await asyncio.gather(
            self.ask(self.target_messages(facts, steps, i), self._params(s.target_tokens), "target", round, i),
            self.ask(self.collect_messages(facts, steps, i), self._params(s.collect_tokens), "collect", round, i),
        )
        target = _first_sentence(target_reply) or f"Work out what Step {i} works out."
        used_facts, used_steps, readable = parse_used(collect_reply, len(facts), i)
        if not readable:
            used_facts, used_steps = list(range(1, len(facts) + 1)), list(range(1, i))
        elif not used_facts and not used_steps:
            # Nothing to work from would make the task unanswerable: give the question.
            used_facts = list(range(1, len(facts) + 1))
        regenerated = await self.ask(
            self.regenerate_messages(facts, steps, used_facts, used_steps, target), self._params(s.regenerate_tokens),
            "regenerate", round, i,
        )
        comparison = await self.ask(
            self.compare_messages(steps[i - 1], i, regenerated), self._params(s.compare_tokens), "compare", round, i
        )
        result, comparison_readable = parse_comparison(comparison)
        return StepCheck(
            index=i, text=steps[i - 1], target=target, facts_used=used_facts, steps_used=used_steps,
            collection_unreadable=not readable, regenerated=regenerated.strip(), comparison=comparison.strip(),
            result=result, unreadable=not comparison_readable,
        )

    def _summarise(self, round: int, steps: Sequence[str], checks: list[StepCheck]) -> SolutionCheck:
        contradicted = [c.index for c in checks if c.result == -1]
        unrelated = sum(c.result == 0 for c in checks)
        return SolutionCheck(
            round=round, checker="steps", steps_total=len(steps), steps_checked=len(checks),
            max_steps=self.settings.max_steps, steps=checks, contradicted=contradicted, unrelated=unrelated,
            confidence=confidence(len(contradicted), unrelated, self.settings.lambda_contradict, self.settings.lambda_unrelated),
        )

    async def check_many(self, question: str, solutions: Sequence[tuple[int, str]]) -> list[SolutionCheck]:
        """Check every step of every solution, `concurrency` steps at a time (in order of
        solution then step, so a sequential backend reuses each solution's prompt prefix).
        A solution without steps gets no step check and full confidence: there is nothing
        the checker can hold against it (its missing answer is for the vote to see)."""
        facts = split_facts(question) or [question.strip() or "(no question text)"]
        gate = asyncio.Semaphore(self.concurrency)
        cap = self.settings.max_steps
        split = [(round, split_steps(text)) for round, text in solutions]
        total = sum(len(steps if cap is None else steps[:cap]) for _, steps in split)
        done = 0
        if self.on_step is not None:
            self.on_step(done, total)

        async def one(steps: list[str], i: int, round: int) -> StepCheck:
            nonlocal done
            async with gate:
                check = await self.check_step(facts, steps, i, round)
            done += 1
            if self.on_step is not None:
                self.on_step(done, total)
            return check

        plans = []
        for round, steps in split:
            checked = steps if cap is None else steps[:cap]
            plans.append((round, steps, [asyncio.ensure_future(one(steps, i, round)) for i in range(1, len(checked) + 1)]))
        try:
            results = [(round, steps, list(await asyncio.gather(*tasks))) for round, steps, tasks in plans]
        except BaseException:
            for _, _, tasks in plans:
                for task in tasks:
                    task.cancel()
            raise
        return [self._summarise(round, steps, checks) for round, steps, checks in results]

    async def check(self, question: str, solution: str, round: int = 1) -> SolutionCheck:
        return (await self.check_many(question, [(round, solution)]))[0]

    async def check_global_many(self, question: str, solutions: Sequence[tuple[int, str]]) -> list[SolutionCheck]:
        """The global check of several solutions, `concurrency` at a time."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(round: int, text: str) -> SolutionCheck:
            async with gate:
                return await self.check_global(question, text, round)

        return list(await asyncio.gather(*(one(r, t) for r, t in solutions)))

    async def check_global(self, question: str, solution: str, round: int = 1) -> SolutionCheck:
        """The ablation: one call asks whether the whole solution is correct. Its verdict
        is scored like a one-step check (correct +1, incorrect -1, unreadable 0), so its
        confidences are on the same scale as the step checker's."""
        reply = await self.ask(self.global_messages(question, solution), self._params(self.settings.global_tokens), "global", round, None)
        result, readable = parse_global(reply)
        s = self.settings
        return SolutionCheck(
            round=round, checker="global", steps_total=len(split_steps(solution)), steps_checked=0, max_steps=None,
            contradicted=[], unrelated=int(result == 0), global_reply=reply.strip(),
            confidence=confidence(int(result == -1), int(result == 0), s.lambda_contradict, s.lambda_unrelated),
        )


def model_ask(model: Model) -> Ask:
    """An Ask that calls a model directly, for checking outside an episode."""

    async def ask(messages: list[Message], params: GenParams, stage: str, round: int, step: int | None) -> str:
        text = (await model.generate(messages, params))[0].text
        count_calls()
        return text

    return ask


async def check_solution(model: Model, question: str, solution: str, settings: CheckSettings | None = None,
                         seed: int | None = 0, on_progress: Callable[[int, int], None] | None = None) -> SolutionCheck:
    """SelfCheck one solution to `question` with `model`: the per-step results and the
    solution's confidence. For wrapping your own generations in the same check.
    `on_progress(steps checked, steps to check)` follows the check step by step."""
    checker = StepChecker(model_ask(model), settings, seed=seed, concurrency=model.preferred_concurrency,
                          on_step=on_progress)
    return await checker.check(question, solution)
