"""SelfCheck (Miao, Teh and Rainforth): check each step of a chain of thought by
regenerating it independently, turn the step results into a confidence, and vote with it.

    records.py  what each stage said of each step, and a solution's confidence
                (defined in the ground-floor veriloop.records, named here)
    text.py     steps of a solution, facts of a question, the checker's replies
    checker.py  the four-stage step checker and the single-call global checker
    scoring.py  the confidence function and (weighted) voting over answer clusters

The verifier (verifiers/selfcheck.py) and the strategy (strategies/selfcheck.py) put
these into loops; reproduce/selfcheck.py evaluates them.

Names are imported on first use: importing the records must not pull the checker (and
the whole engine) with them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckSettings": "checker", "StepChecker": "checker", "check_solution": "checker", "model_ask": "checker",
    "answer_clusters": "scoring", "confidence": "scoring", "vote": "scoring",
    "parse_comparison": "text", "parse_global": "text", "parse_used": "text", "split_facts": "text",
    "split_steps": "text", "SolutionCheck": "records", "StepCheck": "records",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'veriloop.selfcheck' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
