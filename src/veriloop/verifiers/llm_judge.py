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

from ..domains.base import Verdict, VerdictError
from ..episode import Episode

JUDGE_SYSTEM = "You are a careful checker. You decide whether a proposed answer to a problem is correct."

JUDGE_INSTRUCTIONS = (
    "Check the proposed answer against every rule of the problem. Reply with only a JSON object of the form "
    '{"correct": true or false, "errors": ["one short sentence per mistake"]} '
    "with an empty errors list when the answer is correct."
)

_BOOL_WORDS = {"true": True, "yes": True, "correct": True, "false": False, "no": False, "incorrect": False}
_FALLBACK = re.compile(r'"?correct"?\s*[:=]\s*"?(true|false|yes|no)\b', re.IGNORECASE)
MAX_SHOWN_CHARS = 1500


def judge_messages(task: str, answer: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"{task}\n\nProposed answer:\n{answer}\n\n{JUDGE_INSTRUCTIONS}"},
    ]


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _BOOL_WORDS.get(value.strip().lower())
    return None


def parse_judgement(reply: str) -> Verdict:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", reply):
        try:
            obj, _ = decoder.raw_decode(reply, match.start())
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
    found = _FALLBACK.search(reply)
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


class LLMJudge:
    name = "llm"

    def __init__(self, max_tokens: int = 200) -> None:
        self.max_tokens = max_tokens

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        answer = episode.domain.extract_answer(episode.instance, text)
        shown = answer if answer is not None else text[:MAX_SHOWN_CHARS]
        messages = judge_messages(episode.domain.judge_task(episode.instance), shown)
        reply = await episode.call_one("verify", messages, episode.params(temperature=0.0, max_tokens=self.max_tokens), round)
        return parse_judgement(reply)
