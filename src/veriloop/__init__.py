"""veriloop: LLM self-verification and self-correction loops with swappable parts.

The public API, importable from here (names load on first use, so `import veriloop` is
cheap for the command line):

- `correct(model, prompt, check, ...)` / `acorrect`: one prompt, corrected until the
  check passes or the budget ends; returns a `Result`.
- `Task.from_records(rows, prompt=..., check=...)` / `Task.from_jsonl(path, ...)`: a task
  from plain records; `evaluate(task, strategies, model=..., out=...)` / `aevaluate`: every
  strategy on every instance, resumable, returns a `Summary` per strategy.
- `eval_experiment(file_or_dict, out=..., models={...})` / `aeval_experiment`: an
  experiment (models x domains x strategies x seeds, roles, budgets) as `veriloop eval`
  runs it; returns one `CellResult` per cell in `.rows`.
- `audit(domain, verifiers, out=..., model=...)` / `aaudit`: how often verifiers accept
  known-wrong answers, plain and dressed by exploit families; returns an `AuditResult`.
- `model(spec, ...)`: a model from an id, a function, an object or an OpenAI client.
- `strategy(spec)`, `verifier(name)`, `FunctionCheck`, `Verdict`, `VerdictError`:
  the pieces, for users who assemble their own loops.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.5.1"  # pyproject.toml reads it; CHANGELOG.md says what each version changed

_EXPORTS = {
    "correct": "api", "acorrect": "api", "evaluate": "api", "aevaluate": "api", "model": "api",
    "toolbox": "api", "audit": "api", "aaudit": "api", "Result": "api", "Summary": "api", "eval_experiment": "api", "aeval_experiment": "api",
    "Experiment": "experiment.schema", "load_experiment": "experiment.overrides",
    "Task": "task",
    "FunctionCheck": "checks", "CheckError": "checks", "load_check": "checks",
    "Verdict": "records", "VerdictError": "records", "Instance": "records", "Trajectory": "records",
    "CallRecord": "records", "RoundRecord": "records", "Message": "records",
    "Completion": "models", "GenParams": "models", "Model": "models", "FunctionModel": "models",
    "CallCache": "models", "CachedModel": "models", "VeriloopWarning": "models",
    "Strategy": "strategies", "STRATEGIES": "strategies",
    "VERIFIERS": "verifiers", "Verifier": "verifiers",
    "Domain": "domains", "BaseDomain": "domains", "DOMAINS": "domains",
    "Tool": "tools", "Toolbox": "tools", "Observation": "tools",
    "VeriloopError": "errors",
}
_RENAMED = {"strategy": ("strategies", "parse_strategy"), "verifier": ("verifiers", "get_verifier"),
            "domain": ("domains", "get_domain")}

# Names of the public API renamed or removed in a release keep working for one more release,
# with a DeprecationWarning naming what replaces them (old name -> module, attribute, what to
# use instead); CHANGELOG.md lists each under "Deprecated", and the release after drops it.
_DEPRECATED: dict[str, tuple[str, str, str]] = {}

__all__ = sorted([*_EXPORTS, *_RENAMED, "__version__"])

if TYPE_CHECKING:
    from .api import (
        Result,
        Summary,
        aaudit,
        acorrect,
        aeval_experiment,
        aevaluate,
        audit,
        correct,
        eval_experiment,
        evaluate,
        model,
        toolbox,
    )
    from .checks import CheckError, FunctionCheck, load_check
    from .domains import DOMAINS, BaseDomain, Domain
    from .domains import get_domain as domain
    from .errors import VeriloopError
    from .experiment.overrides import load_experiment
    from .experiment.schema import Experiment
    from .models import CachedModel, CallCache, Completion, FunctionModel, GenParams, Model, VeriloopWarning
    from .records import CallRecord, Instance, Message, RoundRecord, Trajectory, Verdict, VerdictError
    from .strategies import STRATEGIES, Strategy
    from .strategies import parse_strategy as strategy
    from .task import Task
    from .tools import Observation, Tool, Toolbox
    from .verifiers import VERIFIERS, Verifier
    from .verifiers import get_verifier as verifier


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    if name in _RENAMED:
        module, attr = _RENAMED[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    if name in _DEPRECATED:
        module, attr, instead = _DEPRECATED[name]
        warnings.warn(f"veriloop.{name} is deprecated and goes in the next release; use {instead}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'veriloop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
