"""SelfCheck's records, by the name the selfcheck package gives them: `StepCheck` (what
each stage said of one step) and `SolutionCheck` (a solution's confidence). They are
defined on the ground floor, `veriloop.records`, beside the `Trajectory` that keeps them
(`step_checks`)."""

from __future__ import annotations

from ..records import SolutionCheck, StepCheck

__all__ = ["SolutionCheck", "StepCheck"]
