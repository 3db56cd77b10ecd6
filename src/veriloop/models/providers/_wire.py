"""Pieces the native providers share: reading counts and error bodies out of JSON that may
be anything (every answer is hostile), the thinking budgets behind a reasoning effort, and
the one-line messages about keys.

Invariants: nothing here raises on any JSON value; a count is a whole number >= 0.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import VeriloopError
from ...records import Message
from ..base import TokenLogprob
from .base import Damaged

# The tokens of thinking a reasoning effort buys where an API takes a number (Anthropic's
# budget_tokens, Gemini 2.5's thinkingBudget), and the room added to the reply's own limit
# where thinking shares it (max_tokens, maxOutputTokens, num_predict), so that the answer
# keeps the room the call asked for. 1024 is Anthropic's smallest budget; 24576 the largest
# Gemini 2.5 Flash takes.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}


def whole(data: Any, key: str) -> int:
    """`data[key]` when it is a whole number >= 0 (not a bool), else 0."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def excerpt(text: str, limit: int = 120) -> str:
    """`text` on one line, cut to `limit` characters, quoted."""
    flat = " ".join(text.split())
    if not flat:
        return "an empty body"
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def shown(data: Any, limit: int = 120) -> str:
    """A JSON value as a message quotes it."""
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(data).__name__)
    return excerpt(text, limit)


def error_of(body: str) -> tuple[str, str]:
    """(kind, message) of an error body: {"error": {"type" | "status": ..., "message": ...}}
    (Anthropic, Google), {"error": "..."} (Ollama), {"object": "error", "message": ...,
    "type": ...} (vLLM); ("", the body) for anything else."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "", body
    if not isinstance(data, dict):
        return "", body
    error = data.get("error")
    if isinstance(error, str):
        return "", error
    if not isinstance(error, dict):
        error = data if isinstance(data.get("message"), str) else {}
    message = error.get("message")
    kind = error.get("type") or error.get("status") or error.get("code") or ""
    return (str(kind) if isinstance(kind, (str, int)) and not isinstance(kind, bool) else "",
            message if isinstance(message, str) and message.strip() else body)


def key_refused(title: str, variables: tuple[str, ...], message: str) -> VeriloopError:
    """The line for a key the API refused (or a call that carried none)."""
    names = " or ".join((*variables, "VERILOOP_API_KEY"))
    return VeriloopError(f"{title} refused the API key ({excerpt(message, 160)}); set {names} or pass --api-key")


def cut_at_stops(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """`text` up to the first of `stops` it holds, and whether one was found: for the stop
    strings an API could not be sent."""
    ends = [i for i in (text.find(stop) for stop in stops if stop) if i >= 0]
    return (text[: min(ends)], True) if ends else (text, False)


def number(value: Any) -> float:
    """A log probability as a float; a damaged answer when it is not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise Damaged(f"a log probability that is not a number ({shown(value, 40)})")


def token_logprob(token: Any, logprob: Any, top: dict[str, float]) -> TokenLogprob:
    if not isinstance(token, str):
        raise Damaged(f"a logprob token that is not text ({shown(token, 40)})")
    return TokenLogprob(token=token, logprob=number(logprob), top=top)


def turns(messages: list[Message]) -> tuple[str | None, list[tuple[str, str]]]:
    """The system text (system messages joined by a blank line; None when there is none) and
    the other messages as (role, text) turns that alternate: "assistant" or "user" (any
    other role), consecutive turns of one role joined by a blank line, empty ones left out
    (APIs with content parts refuse an empty one, and it says nothing)."""
    system = [m.get("content", "") for m in messages if m.get("role") == "system"]
    system = [text for text in system if text.strip()]
    merged: list[tuple[str, str]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content", "")
        if role == "system" or not content.strip():
            continue
        role = "assistant" if role == "assistant" else "user"
        if merged and merged[-1][0] == role:
            merged[-1] = (role, merged[-1][1] + "\n\n" + content)
        else:
            merged.append((role, content))
    return ("\n\n".join(system) if system else None), merged
