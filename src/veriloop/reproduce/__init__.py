"""One command per paper: run its conditions on any model and write its tables.

Each is a shipped experiment file (experiment_files/NAME.toml) whose cells the experiment
engine runs, and a report here (experiment.reports names them) that writes the paper's
tables from the cells, with the studies that are not cells (a verifier study, Table 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..experiment.engine import DomainPlan
    from ..experiment.schema import Experiment
    from ..models.base import Model


def staged(
    on_progress: Callable[[str, int, int], None] | None, stage: str
) -> Callable[[int, int], None] | None:
    """A (done, total) progress callback that reports under `stage`, or None."""
    if on_progress is None:
        return None
    report = on_progress
    return lambda done, total: report(stage, done, total)


def claim_study_dir(
    study_dir: Path, experiment: Experiment, generator: str, model: Model, dom: DomainPlan, seed: int
) -> None:
    """A study's records name no model or seed of their own: its directory records them
    (and the data) in config.json and, like a run directory, refuses other ones."""
    from ..runs.jsonl import write_file
    from ..runs.runner import CONFIG, check_run_dir

    config = {
        "experiment": experiment.name, "model": experiment.models[generator].id,
        "model_id": experiment.models[generator].id, "model_identity": model.identity, "domain": dom.domain.name,
        "seed": seed, **dom.config,
    }
    check_run_dir(study_dir, config)
    study_dir.mkdir(parents=True, exist_ok=True)
    write_file(study_dir / CONFIG, json.dumps(config, indent=2, default=str) + "\n")


def with_option(spec: str, key: str, value: object) -> str:
    """A strategy spec with one option set (replaced if the spec gives it)."""
    name, _, rest = spec.partition(":")
    options = [o for o in (p.strip() for p in rest.split(",")) if o and o.partition("=")[0].strip() != key]
    return f"{name}:{','.join([*options, f'{key}={value}'])}"
