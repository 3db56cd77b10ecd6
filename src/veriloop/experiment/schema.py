"""An experiment as data: the typed spec that a TOML file fills (pydantic models).

An experiment is models x domains (or tasks) x strategies x seeds, with roles (which
model judges, critiques or runs SelfCheck's checks, when not the generator), budgets,
and `include` / `exclude` rules over the matrix. `Experiment` is the one source of those
settings: `veriloop eval FILE.toml` reads it from a file (experiment.overrides),
`veriloop run`'s flags fill the same classes, and each cell's run directory records the
resolved cell in config.json. The matrix the models span (cells, roles, directories) is
experiment.matrix's; reading a file, `--set` and the shipped files are
experiment.overrides'.

Relative paths (`data`, `file`, `check` files, `data_root`) are read from the directory
veriloop runs in, like the paths of the command line's flags; with `data_root`, the
`data` and `file` paths of domains and tasks are read below it. `data_root = "@datasets"`
(the shipped files') reads each path's first component as a data set's folder, found by
`veriloop.datasets.locate`: installed in the veriloop home, else ../shared/data.

Invariants: a model validates only what one file says, with every error naming its key;
every name that becomes part of a path goes through `matrix.path_component`, so a name
that cannot ("..", empty) is refused with the key it is at.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..datasets import INSTALLED, locate_below
from ..errors import SpecError, VeriloopError
from ..models.settings import ModelSettings
from .matrix import ROLE_CALLS, Cell, matrix_cells, path_component

if TYPE_CHECKING:
    from ..models.prices import Price, Rates


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Prices(_Strict):
    """US dollars per million tokens: a model's price as the user gives it, which comes
    before any table's (an explicit `prompt = 0, completion = 0` is a price: free).

    Attributes:
        prompt: The price of a million prompt tokens, in US dollars (at least 0; default
            0: free).
        completion: The price of a million completion tokens, reasoning tokens included,
            in US dollars (at least 0; default 0: free).
        cached_prompt: The price of a million prompt tokens the provider read from its
            prompt cache, in US dollars (at least 0; default None: at the `prompt` price).
    """

    prompt: float = Field(0.0, ge=0)
    completion: float = Field(0.0, ge=0)
    cached_prompt: float | None = Field(None, ge=0)

    def rates(self) -> Rates:
        from ..models.prices import Rates

        return Rates(self.prompt, self.completion, self.cached_prompt)


class Roles(_Strict):
    """Which model (a name under [models]) plays each role; unset: the generator itself.

    Attributes:
        verifier_model: The model that answers verification calls: an LLM verifier's
            judgements (`verifier=llm`), CRITIC's critiques with their tool calls, and the
            tests the `generated` code verifier writes (default None: the generator).
        critic_model: The model that writes the free-text critique of `feedback=llm`
            (default None: the generator).
        checker_model: The model that runs SelfCheck's step-by-step checks (default None:
            the generator).
        escalation_model: The model a `cascade` escalates to when the verifier rejects the
            generator's answers (default None: the generator itself, so the second stage
            is more samples of the same model).
    """

    verifier_model: str | None = None
    critic_model: str | None = None
    checker_model: str | None = None
    escalation_model: str | None = None

    def given(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in ROLE_CALLS if getattr(self, k) is not None}


class ModelEntry(ModelSettings, Roles):
    """One model: its settings (models.settings.ModelSettings: its id as on the command
    line, how to reach and run it), the variable holding its API key, whether its calls
    are cached, its price, and roles overriding [roles] in the cells where it generates.

    Attributes:
        verifier_model: The model (a name under `models`) that answers verification calls
            in the cells where this model generates, in place of `roles.verifier_model`
            (default None: the one `[roles]` gives, else the generator).
        critic_model: The model that writes the `feedback=llm` critique in the cells where
            this model generates, in place of `roles.critic_model` (default None: the one
            `[roles]` gives, else the generator).
        checker_model: The model that runs SelfCheck's checks in the cells where this
            model generates, in place of `roles.checker_model` (default None: the one
            `[roles]` gives, else the generator).
        escalation_model: The model a `cascade` escalates to in the cells where this model
            generates, in place of `roles.escalation_model` (default None: the one
            `[roles]` gives, else the generator).
        id: The model, as `--model` takes it: a pack name, a path to a GGUF file (either
            one may follow `llamacpp/`), or `openai/MODEL` for an OpenAI-compatible
            server; anything else is refused. None only for a model passed from Python
            (`eval_experiment(..., models={NAME: ...})`): loading an entry without an id
            is an error.
        base_url: The URL of the OpenAI-compatible server an `openai/` model is reached at
            (default None: `$VERILOOP_BASE_URL`, else `$OPENAI_BASE_URL`). Records keep it
            without its credentials.
        deployment: A name for the server that the call cache uses in the model's
            identity instead of its URL, so servers given the same name share cached
            answers (not empty; default None: the URL). Server models only, like the next
            four: a local model given one fails to load.
        retry_budget: Seconds, counted from a request's first fault, during which a server
            request is retried (at least 0; default None: 120).
        stall_timeout: Seconds without a byte from the server after which an attempt is
            abandoned as a fault (more than 0; default None: 60).
        attempt_timeout: Seconds one attempt at a server may take in all, reply read (more
            than 0; default None: 600).
        max_reply_bytes: The largest reply, in bytes, a server may send; a larger one is a
            fault (at least 1; default None: 8 MiB).
        concurrency: How many trajectories may use the model at once, and for a server
            how many requests it keeps in flight (at least 1; default None: the
            experiment's `concurrency`, else the model's own preference, 8 for a server).
            Where the experiment sets `concurrency`, that bounds each cell's trajectories.
        context: A local (llama.cpp) model's context size, in tokens (at least 128;
            default None: 4096).
        threads: The threads a local (llama.cpp) model computes with (at least 1; default
            None: `$VERILOOP_THREADS`, else the CPU count).
        max_reply_tokens: The most tokens any one reply may have: a call asking for more
            gets this many (at least 1; default None: `$VERILOOP_MAX_REPLY_TOKENS` for a
            model loaded by its id, else no cap). A capped model is another model to the call cache and run directories.
        api_key_env: The name of the environment variable that holds the server's API key,
            never the key itself (default None: `$VERILOOP_API_KEY`, else
            `$OPENAI_API_KEY`). A command's `--api-key` comes first; naming a variable that
            is not set is an error when the model loads.
        cache: Whether the model's calls go through the call cache, so a call asked again
            is replayed instead of sent (default true); false: every call goes to the
            backend and none is stored.
        price: What the model's calls cost, in US dollars per million `prompt`,
            `completion` and `cached_prompt` tokens, charged to the `max_usd` budgets and
            the results' `usd` (default None: the price in the genai-prices table for an
            `openai/`, `anthropic/` or `google/` model; free for a local model and for
            `vllm/` and `ollama/`; else $0, with a warning naming the model). A price
            given here comes first, `{prompt = 0, completion = 0}` making a model free.
    """

    model_config = ConfigDict(extra="forbid")

    api_key_env: str | None = None  # the environment variable holding the key (never the key itself)
    cache: bool = True
    price: Prices | None = None

    @field_validator("id")
    @classmethod
    def _model_id(cls, value: str | None) -> str | None:
        from ..models.packs import PACKS
        from ..models.providers import PROVIDERS, provider_prefix

        if value is None:
            return None
        local = value.removeprefix("llamacpp/")
        if provider_prefix(value) or local in PACKS or local.endswith(".gguf") or Path(local).is_file():
            return value
        raise ValueError(
            f"unknown model {value!r}; use a pack ({', '.join(PACKS)}), a path to a .gguf file, or a model behind "
            f"an API: {', '.join(f'{name}/<model>' for name in PROVIDERS)} (with base_url where it needs one)"
        )

    def pricing(self, name: str | None = None) -> Price:
        """How the model's calls are priced (models.prices): its `price`, else by its id;
        `name`, its name under `models`, is what the note of an unpriced model names."""
        from ..models.prices import price_for

        return price_for(self.id, self.price.rates() if self.price is not None else None, name=name)


class DomainEntry(_Strict):
    """A built-in domain: its name, instances (data file, offset, n) and options.

    Attributes:
        name: The domain: a name in `veriloop.DOMAINS` (built in, or from an installed
            plugin) or of a template in the planning domain's templates folder; any other
            name is refused.
        label: The domain's name in the results, its cells' directories and
            `include`/`exclude` rules (default None: `name`). No two domains or tasks may
            share one, so a label lets one domain appear twice.
        data: The data file or folder the instances are read from, a relative path read
            below `data_root` (default None: the domain's own generated or built-in
            instances; a domain that has none refuses to run).
        offset: How many instances of the data to skip first (at least 0; default 0).
        n: How many instances to take after `offset` (at least 1; default None: the
            experiment's `n`).
        options: Keyword options the domain is built with, as `--domain-option` gives them
            (default: none); an option the domain does not take is an error when the
            experiment is planned.
        generate_if_missing: When true and the `data` path does not exist, run the
            domain's own generated instances instead, from the first (`offset` ignored),
            so a reproduction runs without its data set (default false).
    """

    name: str
    label: str | None = None
    data: str | None = None
    offset: int = Field(0, ge=0)
    n: int | None = Field(None, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)
    # A reproduction's data may be absent (then the domain generates its instances).
    generate_if_missing: bool = False

    @property
    def key(self) -> str:
        return self.label or self.name

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from ..domains import DOMAINS
        from ..domains.planning import TEMPLATES

        # A planning template dropped into planning/templates/ is a domain of its name too.
        if name not in DOMAINS and not (name.isidentifier() and (TEMPLATES / f"{name}.toml").is_file()):
            raise ValueError(f"unknown domain {name!r}; choose one of: {', '.join(DOMAINS.listed())}")
        return name


class TaskEntry(_Strict):
    """Your own task: a JSONL file, a prompt template over its fields and a check.

    Attributes:
        file: The JSON-lines file of records, one JSON object per line (required); a
            relative path is read below `data_root`.
        prompt: The prompt template: text naming a record's fields in braces, plain names
            only (`"Q: {question}"`); required.
        check: The function that checks an answer, as `--check` takes it:
            `module:function` or `python:path/to/file.py:function` (default None: no
            check; the `sound` verifier then cannot judge the task, and the reference
            field alone decides what is correct).
        reference_field: The record field that holds the right answer, which accuracy
            compares answers with: equal numbers, or equal text up to case and spacing
            (default None: the check decides what is correct).
        id_field: The record field that holds each record's id, unique in the file
            (default None: the record's position, counted from 1).
        label: The task's name in the results, its cells' directories and
            `include`/`exclude` rules (default None: `task-` and the file's stem); no two
            domains or tasks may share one.
        offset: How many records to skip first (at least 0; default 0).
        n: How many records to take after `offset` (at least 1; default None: the
            experiment's `n`).
        check_timeout: The seconds the check may take on one answer; one that takes longer
            stops the run (a finite number above 0; default None: 60). Refused without a
            `check`.
    """

    file: str
    prompt: str
    check: str | None = None
    reference_field: str | None = None
    id_field: str | None = None
    label: str | None = None
    offset: int = Field(0, ge=0)
    n: int | None = Field(None, ge=1)
    # Seconds the check may take on one answer (default 60); one that overstays stops the run.
    check_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)

    @property
    def key(self) -> str:
        return self.label or f"task-{Path(self.file).stem}"

    @model_validator(mode="after")
    def _timeout_needs_a_check(self) -> TaskEntry:
        if self.check_timeout is not None and self.check is None:
            raise ValueError(f"task {self.key}: check_timeout is the time limit of its check; give the check too "
                             "(check = ..., --check on the command line)")
        return self


class StrategyEntry(_Strict):
    """A strategy spec as on the command line, with the label results show (default: the spec).

    Attributes:
        spec: The strategy as `-s` takes it, `NAME` or `NAME:key=value,...` (e.g.
            `backprompt:max_rounds=3`); a spec that does not parse is refused. Options it
            leaves unset take the experiment's `max_rounds` and `k`.
        label: The strategy's name in the results, its cells' directories and
            `include`/`exclude` rules (default None: the spec as written); no two
            strategies may share one.
    """

    spec: str
    label: str | None = None

    @property
    def key(self) -> str:
        return self.label or self.spec

    @field_validator("spec")
    @classmethod
    def _parses(cls, spec: str) -> str:
        from ..strategies import parse_strategy

        try:
            parse_strategy(spec)
        except VeriloopError as exc:
            raise ValueError(str(exc)) from None
        return spec


class Budget(_Strict):
    """Caps on what is spent: model calls, tokens (prompt + completion) and dollars. Every
    call a cell's trajectories record counts, answered by the cache or not, so a budget
    stops at the same place on every machine.

    Attributes:
        max_calls: The most model calls, every sample drawn counting as one and every
            role's calls counting (at least 0; default None: no cap).
        max_tokens: The most tokens, prompt and completion together, those calls may use
            (at least 0; default None: no cap).
        max_usd: The most US dollars those calls may cost, each at the price of the
            model that answered it: its `price`, else the genai-prices table's, cached
            prompt tokens at the cached-input rate (at least 0; default None: no cap). A
            local model, and one neither gives a price for, costs nothing.
    """

    max_calls: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_usd: float | None = Field(None, ge=0)

    def is_set(self) -> bool:
        return any(v is not None for v in self.model_dump().values())


class Rule(_Strict):
    """Cells to add (include) or drop (exclude): every key given must match; a key left
    out matches everything (in an include: adds the cell for each of its values).

    Attributes:
        model: A model's name under `models`, or a list of them (default None: any; in an
            include, every generator). An include may name a model that only plays a role,
            to make it generate.
        domain: A domain or task as the results name it (its `label`, else the domain's
            `name` or `task-` and the file's stem), or a list of them (default None: any).
        strategy: A strategy's label or its spec as written, or a list of them (default
            None: any).
        seed: A seed, or a list of seeds (default None: any; in an include, every seed in
            `seeds`). Not checked against `seeds`: an include may add another seed.
    """

    model: str | list[str] | None = None
    domain: str | list[str] | None = None
    strategy: str | list[str] | None = None
    seed: int | list[int] | None = None

    def values(self, key: str) -> list[Any] | None:
        value = getattr(self, key)
        return None if value is None else value if isinstance(value, list) else [value]


class ToolsEntry(_Strict):
    """Settings of the tools CRITIC's verifier calls (only the CRITIC domains use them).

    Attributes:
        search_corpus: The local collection the search tool searches with BM25: a JSONL
            file of `{"title", "text"}` records or a folder of `.txt` files (default None:
            the corpus the domain takes from its data, if any). Comes before `search_url`.
        search_url: The URL of an HTTP search engine (such as SearxNG) that the search
            tool asks when there is no corpus (default None: `$VERILOOP_SEARCH_URL`; with
            neither, there is no search tool).
        toxicity: The toxicity tool's scorer: `offline` (a local classifier, the default)
            or `perspective` (Google's Perspective API, its key in
            `$PERSPECTIVE_API_KEY`); any other value is refused.
        allow_unisolated: Whether the python tool may run programs without isolation
            where its sandbox cannot be set up, with network access and the user's write
            access (default false: it refuses to run them).
    """

    search_corpus: str | None = None
    search_url: str | None = None
    toxicity: str = "offline"
    allow_unisolated: bool = False

    @field_validator("toxicity")
    @classmethod
    def _backend(cls, value: str) -> str:
        if value not in ("offline", "perspective"):
            raise ValueError(f"unknown toxicity backend {value!r}; choose offline or perspective")
        return value


class Experiment(_Strict):
    """The whole experiment: models x domains (or tasks) x strategies x seeds.

    A pydantic model with the keys of an experiment file, which `veriloop eval FILE.toml`
    reads. `load_experiment` reads one from a file, with errors that name the file's
    line; `Experiment.model_validate(data)` builds one from a dict shaped like the file
    (strategies may be given as bare specs); `cells()` lists the runs of the matrix. An
    unknown key, a name no entry has, or a name that cannot name a directory is refused.

    Attributes:
        name: The experiment's name (required, not empty); `veriloop eval` writes to
            `runs/eval-NAME` unless given `--out`.
        description: What it is for (default: empty); `veriloop eval --list` shows its
            first line.
        models: The models by name (at least one): each one's settings (its `id`, as on
            the command line, and how to reach and run it), the environment variable
            holding its API key, whether its calls are cached, its price, and roles
            overriding `roles` in the cells where it generates.
        generators: The models that generate, by their names under `models` (default None:
            every model not named by a role, in `[roles]` or in a model's own entry).
        roles: Which model (a name under `models`) judges (`verifier_model`), critiques
            (`critic_model`) or runs SelfCheck's checks (`checker_model`); an unset role
            is the generator itself.
        domains: Registered domains (built in or from plugins): each one's name, label,
            data file, `offset`, `n` and options (default: none).
        tasks: Your own tasks: each one's JSONL file, prompt template over its fields,
            check, reference and id fields, label, `offset`, `n` and `check_timeout`
            (default: none). An experiment needs at least one domain or task.
        strategies: The strategies (at least one): specs as on the command line, or
            entries with a `spec` and the `label` results show; no two may share a label.
        seeds: The seeds of the matrix, one cell each, passed to the models' sampling
            (at least one; default [0]).
        n: The instances of a domain or task that leaves its own `n` unset (default 10).
        max_rounds: The `max_rounds` of strategies that have the option and leave it unset
            in their spec (at least 1; default 5).
        k: The `k` of strategies that have the option and leave it unset in their spec
            (at least 1; default 5).
        concurrency: The most trajectories a cell runs at once, and the concurrency of
            models without their own (at least 1; default None: as many as the cell's
            generator prefers).
        data_root: The directory relative `data` and `file` paths of domains and tasks
            are read below (default None: where veriloop runs); absolute paths stay.
            `"@datasets"`: each path starts with a data set's folder (`graph_coloring`,
            `game24/24.csv`), read from where that set is installed (`veriloop data
            install`), else from ../shared/data; a set found in neither is a one-line
            error naming the install command (or generated instances, for a domain
            with `generate_if_missing`).
        budget: Caps on the whole experiment's model calls, tokens and dollars (default:
            none). Every call counts, answered by the cache or not, so a budget stops at
            the same place on every machine; once a cap is reached no call starts, the
            experiment stops and its report is not written.
        cell_budget: The same caps on each cell on its own (default: none): a cell that
            reaches one stops, and the next cell runs.
        include: Rules adding cells after the `exclude` rules dropped theirs: every key a
            rule gives must match, and a key it leaves out adds the cell for each of its
            values (default: none).
        exclude: Rules dropping cells from the matrix: every key a rule gives must match
            (default: none).
        tools: Settings of the tools CRITIC's verifier calls: the search corpus or URL,
            the toxicity backend, and whether the python tool may run without
            isolation. Only the CRITIC domains use them.
        report: The name of a report run on the cells after they ran: a paper's own
            tables (`self-verification`, `critic` or `selfcheck`), or `audit` (each
            domain's verifiers audited with exploit families; docs/guides/audit.md)
            (default None: none). An unknown name is refused.
        report_options: Options passed to the `report`, checked against the ones it takes
            (default: none); refused without a `report`.

    Examples:
        ```python
        import veriloop

        experiment = veriloop.Experiment.model_validate({
            "name": "demo",
            "models": {"small": {"id": "smollm2-135m"}, "judge": {"id": "openai/judge"}},
            "roles": {"verifier_model": "judge"},
            "domains": [{"name": "game24", "n": 3}],
            "strategies": ["standard", "backprompt:verifier=llm"],
            "seeds": [0, 1],
        })
        assert experiment.generator_names() == ["small"] and len(experiment.cells()) == 4
        print(experiment.cells()[-1].title, experiment.cells()[-1].roles)
        ```
    """

    name: str = Field(min_length=1)
    description: str = ""
    models: dict[str, ModelEntry] = Field(min_length=1)
    generators: list[str] | None = None
    roles: Roles = Field(default_factory=Roles)
    domains: list[DomainEntry] = Field(default_factory=list)
    tasks: list[TaskEntry] = Field(default_factory=list)
    strategies: list[StrategyEntry] = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    n: int = Field(10, ge=1)
    max_rounds: int = Field(5, ge=1)
    k: int = Field(5, ge=1)
    concurrency: int | None = Field(None, ge=1)
    data_root: str | None = None
    budget: Budget = Field(default_factory=lambda: Budget.model_validate({}))
    cell_budget: Budget = Field(default_factory=lambda: Budget.model_validate({}))
    include: list[Rule] = Field(default_factory=list)
    exclude: list[Rule] = Field(default_factory=list)
    tools: ToolsEntry = Field(default_factory=ToolsEntry)
    # A paper's own tables, computed from the cells after they ran (see experiment.reports).
    report: str | None = None
    report_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("strategies", mode="before")
    @classmethod
    def _specs(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"spec": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _names(self) -> Experiment:
        names = list(self.models)
        for role, model in self.roles.given().items():
            _known_model(model, names, ("roles", role))
        for key, entry in self.models.items():
            for role, model in entry.given().items():
                _known_model(model, names, ("models", key, role))
        for model in self.generators or []:
            _known_model(model, names, ("generators",))
        if not self.generator_names():
            raise SpecError(("roles",), "no model generates: every model is named by a role; list the generating "
                            "ones in generators = [...]")
        if not self.domains and not self.tasks:
            raise SpecError((), "an experiment needs at least one [[domains]] or [[tasks]] entry")
        _unique([d.key for d in self.domains] + [t.key for t in self.tasks], "domain/task label", ("domains",))
        _unique([s.key for s in self.strategies], "strategy label", ("strategies",))
        self._check_directory_names()
        for kind, rules in (("include", self.include), ("exclude", self.exclude)):
            for i, rule in enumerate(rules):
                self._check_rule(rule, (kind, i))
        if self.report is not None:
            from .reports import check_report

            check_report(self)
        elif self.report_options:
            raise SpecError(("report_options",), "report_options without a report = \"...\" to pass them to")
        return self

    def _check_directory_names(self) -> None:
        """Every name that becomes a cell's directory is one (path_component), and no two
        names of one axis become the same directory."""
        Where = tuple[str | int, ...]
        domains: list[tuple[str, Where]] = [
            (d.key, ("domains", i, "label" if d.label is not None else "name")) for i, d in enumerate(self.domains)]
        domains += [(t.key, ("tasks", i, "label" if t.label is not None else "file")) for i, t in enumerate(self.tasks)]
        axes: list[list[tuple[str, Where]]] = [
            [(name, ("models", name)) for name in self.generator_names()],
            domains,
            [(s.key, ("strategies", i, "label") if s.label is not None else ("strategies", i))
             for i, s in enumerate(self.strategies)],
        ]
        for axis in axes:
            seen: dict[str, str] = {}
            for name, where in axis:
                try:
                    component = path_component(name)
                except ValueError as exc:
                    raise SpecError(where, str(exc)) from None
                if component in seen:
                    raise SpecError(where, f"{seen[component]!r} and {name!r} would share the directory "
                                    f"{component!r}; rename one of them")
                seen[component] = name

    def _check_rule(self, rule: Rule, where: tuple[str | int, ...]) -> None:
        known = {
            "model": list(self.models),
            "domain": self.domain_keys(),
            "strategy": [s.key for s in self.strategies],
        }
        for key, valid in known.items():
            for value in rule.values(key) or []:
                if value not in valid and not (key == "strategy" and self.strategy_by_name(value)):
                    raise SpecError((*where, key), f"unknown {key} {value!r}; choose one of: {', '.join(valid)}")

    def generator_names(self) -> list[str]:
        if self.generators is not None:
            return list(self.generators)
        judges = set(self.roles.given().values()) | {m for e in self.models.values() for m in e.given().values()}
        return [name for name in self.models if name not in judges]

    def domain_keys(self) -> list[str]:
        return [d.key for d in self.domains] + [t.key for t in self.tasks]

    def domain_entry(self, key: str) -> DomainEntry | TaskEntry:
        entries: list[DomainEntry | TaskEntry] = [*self.domains, *self.tasks]
        return next(e for e in entries if e.key == key)

    def strategy_by_name(self, name: str) -> StrategyEntry | None:
        """A strategy by its label, or its spec as written."""
        return next((s for s in self.strategies if name in (s.key, s.spec)), None)

    def roles_for(self, generator: str) -> dict[str, str]:
        """Role -> model name in the cells where `generator` generates (only roles given to
        another model than the generator itself)."""
        roles = {**self.roles.given(), **self.models[generator].given()}
        return {role: model for role, model in roles.items() if model != generator}

    def cells(self) -> list[Cell]:
        """Every cell of the matrix, the exclude rules applied, then the include rules'
        cells added (each once), in the file's order: model, domain, strategy, seed."""
        return matrix_cells(self)

    def models_used(self, cells: Iterable[Cell]) -> list[str]:
        """The models the cells need (generators and role models), in [models] order."""
        used = {c.model for c in cells} | {m for c in cells for _, m in c.roles}
        return [name for name in self.models if name in used]

    def instances_for(self, key: str) -> int:
        entry = self.domain_entry(key)
        return entry.n or self.n

    def resolve(self, path: str | None, *, missing_ok: bool = False) -> str | None:
        """A domain's or task's data path, below data_root when one is given. Below
        `@datasets`, a set neither installed nor beside a checkout is an error, or with
        `missing_ok` the path it would have beside a checkout."""
        if path is None or self.data_root is None or Path(path).is_absolute():
            return path
        if self.data_root == INSTALLED:
            return locate_below(path, missing_ok=missing_ok)
        return str(Path(self.data_root) / path)


def _known_model(name: str, names: list[str], where: tuple[str | int, ...]) -> None:
    if name not in names:
        raise SpecError(where, f"no model {name!r} under [models]; the models are: {', '.join(names)}")


def _unique(keys: list[str], what: str, where: tuple[str | int, ...]) -> None:
    seen = [k for i, k in enumerate(keys) if k in keys[:i]]
    if seen:
        raise SpecError(where, f"two entries have the {what} {seen[0]!r}; give one of them a label = \"...\"")
