"""The same model asked to judge an answer, replying with a JSON verdict.

Small models wrap JSON in prose or code fences, or break it: the parser takes the first
JSON object that has a `correct` field, then falls back to a `correct: true|false`
pattern. A reply that still cannot be read counts as a rejection and is marked
`unreadable`, so studies can count such replies separately.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..episode import Episode
from ..records import Verdict, VerdictError
from .base import BaseVerifier

JUDGE_SYSTEM = "You are a careful checker. You decide whether a proposed answer to a problem is correct."

def _json_shape(extra_fields: dict[str, str]) -> str:
    fields = [f'"{name}": <{meaning}>' for name, meaning in extra_fields.items()]
    fields += ['"correct": true or false', '"errors": ["one short sentence per mistake"]']
    return "{" + ", ".join(fields) + "}"


def judge_instructions(extra_fields: dict[str, str], cot: bool) -> str:
    shape = _json_shape(extra_fields)
    if cot:
        return (
            "First think step by step: check the proposed answer against each rule of the problem in turn. "
            f"Then, on the last line, give your verdict as a JSON object of the form {shape}, "
            "with an empty errors list when the answer is correct."
        )
    return (
        f"Check the proposed answer against every rule of the problem. Reply with only a JSON object of the form "
        f"{shape}, with an empty errors list when the answer is correct."
    )

_BOOL_WORDS = {"true": True, "yes": True, "correct": True, "false": False, "no": False, "incorrect": False}
_FALLBACK = re.compile(r'"?correct"?\s*[:=]\s*"?(true|false|yes|no)\b', re.IGNORECASE)
MAX_SHOWN_CHARS = 1500


def judge_messages(task: str, answer: str, extra_fields: dict[str, str] | None = None, cot: bool = False) -> list[dict[str, str]]:
    instructions = judge_instructions(extra_fields or {}, cot)
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"{task}\n\nProposed answer:\n{answer}\n\n{instructions}"},
    ]


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _BOOL_WORDS.get(value.strip().lower())
    return None


def parse_judgement(reply: str, last: bool = False) -> Verdict:
    """The verdict in a judge's reply: the first JSON object with a readable `correct`
    (the last one when `last`, for chain-of-thought replies that reason before it)."""
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"\{", reply)]
    for start in reversed(starts) if last else starts:
        try:
            obj, _ = decoder.raw_decode(reply, start)
        except ValueError:
            continue
        if not isinstance(obj, dict) or "correct" not in obj:
            continue
        correct = _as_bool(obj["correct"])
        if correct is None:
            continue
        raw_errors = obj.get("errors") or []
        if isinstance(raw_errors, str):
            raw_errors = [raw_errors]
        errors = [
            VerdictError(kind="judge", message=str(e).strip())
            for e in raw_errors
            if isinstance(e, (str, int, float)) and str(e).strip()
        ]
        if not correct and not errors:
            errors = [VerdictError(kind="judge", message="the checker judged the answer incorrect")]
        return Verdict(ok=correct, errors=[] if correct else errors, verifier="llm")
    matches = list(_FALLBACK.finditer(reply))
    found = matches[-1] if last and matches else (matches[0] if matches else None)
    if found:
        ok = _BOOL_WORDS[found.group(1).lower()]
        errors = [] if ok else [VerdictError(kind="judge", message="the checker judged the answer incorrect")]
        return Verdict(ok=ok, errors=errors, verifier="llm")
    return Verdict(
        ok=False,
        unreadable=True,
        verifier="llm",
        errors=[VerdictError(kind="unreadable", message="the checker's reply could not be read as a verdict")],
    )


class LLMJudge(BaseVerifier):
    """`cot` asks the judge to reason step by step before its verdict (the paper's
    Table A2 condition); the plain judge answers with the JSON alone."""

    calls = 1

    def __init__(self, cot: bool = False, max_tokens: int | None = None) -> None:
        self.cot = cot
        self.name = "llm-cot" if cot else "llm"
        self.max_tokens = max_tokens or (500 if cot else 200)

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        answer = episode.domain.extract_answer(episode.instance, text)
        shown = answer if answer is not None else text[:MAX_SHOWN_CHARS]
        extra = episode.domain.judge_fields
        messages = judge_messages(episode.domain.judge_task(episode.instance), shown, extra, self.cot)
        reply = await episode.call_one("verify", messages, episode.params(temperature=0.0, max_tokens=self.max_tokens), round)
        verdict = parse_judgement(reply, last=self.cot)
        verdict.verifier = self.name
        return verdict
