"""Reading a verdict out of free text: the "Verdict: correct|incorrect" line that
CRITIC's critiques and SelfCheck's global checker end with. Text in, bool out; no
model, no verifier."""

from __future__ import annotations

import re

_VERDICT = re.compile(
    r"verdict\W{0,3}\s*(?:is\s*)?\W{0,3}(correct|incorrect|wrong|right|true|false|not correct)\b", re.IGNORECASE
)
_OK = {"correct": True, "right": True, "true": True, "incorrect": False, "wrong": False, "false": False, "not correct": False}


def parse_verdict(text: str) -> bool | None:
    """The last "Verdict: correct|incorrect" in a text; None when there is none."""
    found = list(_VERDICT.finditer(text))
    return _OK[found[-1].group(1).lower()] if found else None
