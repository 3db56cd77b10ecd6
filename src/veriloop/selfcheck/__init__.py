"""SelfCheck (Miao, Teh and Rainforth): check each step of a chain of thought by
regenerating it independently, turn the step results into a confidence, and vote with it.

    text.py     steps of a solution, facts of a question, the checker's replies
    checker.py  the four-stage step checker and the single-call global checker
    scoring.py  the confidence function and (weighted) voting over answer clusters

The verifier (verifiers/selfcheck.py) and the strategy (strategies/selfcheck.py) put
these into loops; reproduce/selfcheck.py evaluates them.
"""

from .checker import CheckSettings, StepChecker, check_solution, model_ask
from .scoring import answer_clusters, confidence, vote
from .text import parse_comparison, parse_global, parse_used, split_facts, split_steps

__all__ = [
    "CheckSettings", "StepChecker", "answer_clusters", "check_solution", "confidence", "model_ask",
    "parse_comparison", "parse_global", "parse_used", "split_facts", "split_steps", "vote",
]
