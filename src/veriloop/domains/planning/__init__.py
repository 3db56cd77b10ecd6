"""STRIPS planning as a veriloop domain: a domain is data, not code.

A planning domain is a PDDL domain file, problem files and a TOML template saying how
facts, actions and objects read in words (`templates/`). `PlanningDomain` turns those
into prompts, reads plans back, and checks them by simulation, reporting what VAL
reports: the first action whose preconditions fail, or the goals left unmet.
Blocksworld and Mystery Blocksworld are two templates; adding a STRIPS domain needs a
template and PDDL, no Python. Without a template, plans are read and written in PDDL.

The package, one module per concern:

    pddl_model.py  PDDL domains and problems read into a typed model (`Task`), with simulation
    compiled.py    the bit-level simulator plans are checked with, and what a simulation found
    language.py    templates: how facts, actions and objects read in words, and reading plans back
    planner.py     optimal plans (pyperplan, Fast Downward) and random Blocksworld problems
    domain.py      `PlanningDomain`, `Blocksworld`, `MysteryBlocksworld`

`templates/*.toml` and `domains/*.pddl` are data shipped with the package. This module
only re-exports; "veriloop.domains.planning:PlanningDomain" names the domain.
"""

from .domain import TEMPLATES, Blocksworld, MysteryBlocksworld, PlanningDomain
from .language import Step
from .pddl_model import GroundAction, Task
from .planner import PlannerError, PlanTooLargeError, generate_problems, optimal_plan

__all__ = [
    "TEMPLATES",
    "Blocksworld",
    "GroundAction",
    "MysteryBlocksworld",
    "PlanTooLargeError",
    "PlannerError",
    "PlanningDomain",
    "Step",
    "Task",
    "generate_problems",
    "optimal_plan",
]
