"""The scripted runs the report viewer's tests show (tests/view/; the fixtures that play
them are in tests/view/conftest.py), and a writer of run directories.

The run: on Game of 24's 1 1 4 6 (see test_strategy_control_flow), `standard` answers
right; backprompting with the sound checker answers 8, is told so and answers right;
backprompting with the LLM judge once has the judge accept the 8 (a false accept) and
once has it reject the right answer first (a false reject); and a `standard` run on a
second puzzle replies with markup meant to break out of the page.

A second run holds what the verifiers themselves did: CRITIC on a GSM8K problem runs
the wrong program and then the corrected one with the python tool, and SelfCheck checks
two step-by-step solutions of two steps each, whose verdicts are +1, -1 and then 0, +1.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from veriloop.domains import get_domain
from veriloop.records import Trajectory

GAME24 = get_domain("game24")
PUZZLE = GAME24.parse_instance({"instance": "1 1 4 6"})
OTHER = GAME24.parse_instance({"instance": "2 3 4 1"})
RIGHT = "Answer: 1 + 4 * 6 - 1"
EIGHT = "Answer: 6 / (1 - 1/4)"
JUDGE_REJECTS = '{"evaluation": "8", "correct": false, "errors": ["6 / (1 - 1/4) is 8, not 24"]}'
JUDGE_ACCEPTS = '{"evaluation": "24", "correct": true, "errors": []}'
HOSTILE = "</script><script>alert(1)</script> <img src=x onerror=alert(1)> Answer: (2 + 3 - 1) * 4"
SOUND = "backprompt:verifier=sound,feedback=first,max_rounds=3"
JUDGE = "backprompt:verifier=llm,feedback=first,max_rounds=2"
FEEDBACK = (
    "That answer is not correct: `6 / (1 - 1/4)` evaluates to 8, not 24.\nThe numbers are 1 1 4 6. Please try "
    "again and reply with one line of the form `Answer: <expression>`."
)


APPLES = "Tom has 12 apples. He buys 5 more. How many apples does he have?"
GSM8K = get_domain("gsm8k")
PROGRAM_QUESTION = GSM8K.parse_instance({"question": APPLES, "reference": "17"})
WRONG_PROGRAM = "apples = 12 + 6\nanswer = apples"
RIGHT_PROGRAM = "apples = 12 + 5\nanswer = apples"
CRITIQUE = "He buys 5 apples, not 6.\nVerdict: incorrect"
# (round, tool, input, observation): what the python tool made of each program.
TOOL_CALLS = [(1, "python", WRONG_PROGRAM, "Execution: answer = 18"),
              (2, "python", RIGHT_PROGRAM, "Execution: answer = 17")]

GSM8K_COT = get_domain("gsm8k-cot")
STEP_QUESTION = GSM8K_COT.parse_instance({"question": APPLES, "reference": "17"})
WRONG_STEPS = "Step 1: He starts with 12 apples.\nStep 2: 12 + 5 = 18.\nAnswer: 18"
RIGHT_STEPS = "Step 1: Apples are red.\nStep 2: 12 + 5 = 17.\nAnswer: 17"
# By solution (round), each step's (index, text, target reply, collect reply, facts used,
# steps used, regenerated, comparison, result), in the order SelfCheck asks its stages.
STEP_CHECKS = {
    1: [(1, "He starts with 12 apples.", "The step aims to state how many apples Tom starts with.",
         "Information: 1; Steps: none", [1], [], "Tom starts with 12 apples.", "Both say 12.\nConclusion: supports", 1),
        (2, "12 + 5 = 18.", "The step aims to add the apples he buys.", "Information: 2; Steps: 1", [2], [1],
         "12 + 5 = 17.", "17 is not 18.\nConclusion: contradicts", -1)],
    # Collecting nothing would leave nothing to work from: SelfCheck gives every fact.
    2: [(1, "Apples are red.", "The step aims to describe the apples.", "Information: none; Steps: none", [1, 2, 3],
         [], "Nothing to work out.", "Conclusion: not related", 0),
        (2, "12 + 5 = 17.", "The step aims to add the apples he buys.", "Information: 2; Steps: none", [2], [],
         "12 + 5 = 17.", "Conclusion: supports", 1)],
}

# The audit the viewer's tests show (tests/view/conftest.audited): the sound checker
# accepts no wrong answer, so hand-made verdicts stand in for a judge a family fooled.
FOOLED = "claim-correct"
AUDIT_FAMILIES = [FOOLED, "note-to-grader"]
DRESSED_MARKUP = "</script><script>alert(1)</script><img src=x onerror=alert(1)> Answer: it is right"


def write_run(folder: Path, trajectories: list[Trajectory]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trajectories.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in trajectories))
    return folder


def embedded_payload(html: str) -> dict:
    """The JSON payload a report page embeds."""
    found = re.search(r'<script type="application/json" id="veriloop-data">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed, checked to be one line and no traceback."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]
