"""What the driver hands to workers: how to load a model, and what a job's shards run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..domains.base import Domain, Instance
    from ..experiment.schema import Experiment
    from ..models.base import Model
    from ..models.settings import ModelSettings
    from ..strategies.base import Strategy
    from ..tools.base import Toolbox


@dataclass(frozen=True)
class ModelRecipe:
    """How a worker loads one model of the run, without the cache (the driver keeps it).
    `name` is the model's name in the experiment; `api_key` travels to the workers that
    call the server and is never written anywhere (it is not a setting)."""

    name: str
    settings: ModelSettings
    api_key: str | None = None
    cached: bool = True  # its calls go through the driver's call cache

    @property
    def in_process(self) -> bool:
        """Weights loaded by the worker (not a client of a server)."""
        return not self.settings.is_server

    def load(self) -> Model:
        from ..models import load_backend

        return load_backend(self.settings, api_key=self.api_key)


@dataclass
class JobSpec:
    """A job as the workers see it (shipped once, shared by its shards): one run
    directory's domain, strategies and seed, its generator and the models of its roles
    (by call role). `experiment` gives the tool settings of a CRITIC domain."""

    index: int
    domain_key: str
    domain: Domain
    data: str | None
    strategies: dict[str, Strategy]
    seed: int
    generator: str
    role_models: dict[str, str]
    experiment: Experiment

    def toolbox(self) -> Toolbox | None:
        from ..experiment.executor import DomainPlan, tools_for

        return tools_for(self.experiment, DomainPlan(self.domain_key, self.domain, [], self.data, {}))


@dataclass
class Shard:
    """Instances of one job, run together on one worker; `pending` holds the
    (strategy, instance) pairs whose trajectory the driver has not received yet."""

    job: int
    pending: dict[tuple[str, str], tuple[str, Instance]] = field(default_factory=dict)

    @classmethod
    def of(cls, job: int, items: list[tuple[str, Instance]]) -> Shard:
        return cls(job, {(canonical, instance.id): (canonical, instance) for canonical, instance in items})

    def items(self) -> list[tuple[str, Instance]]:
        return list(self.pending.values())


@dataclass(frozen=True)
class ShardStopped:
    """What a shard sends instead of more trajectories when a budget refused a call."""

    scope: str
    message: str
