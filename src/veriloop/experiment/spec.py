"""The experiment spec, now three modules: experiment.schema (the pydantic models of
the file), experiment.matrix (cells, roles, the matrix) and experiment.overrides (reading a
file, `--set`, the shipped files). Every name keeps its old import path here."""

from ..errors import SpecError  # noqa: F401
from .matrix import (  # noqa: F401
    MATRIX_KEYS,
    ROLE_CALLS,
    Cell,
    _cell,
    _matches,
    _product,
    add_domain,
    matrix_cells,
    only_domains,
    path_component,
)
from .overrides import (  # noqa: F401
    SHIPPED,
    Override,
    _child,
    _explain,
    _fields_at,
    _index,
    _key_path,
    _line_of,
    _message,
    _plain,
    _validated,
    apply_set,
    describe,
    experiment_from_data,
    find_experiment,
    key_lines,
    load_experiment,
    overrides,
    parse_experiment,
    parse_set,
    shipped_experiments,
)
from .schema import (  # noqa: F401
    Budget,
    DomainEntry,
    Experiment,
    ModelEntry,
    Prices,
    Roles,
    Rule,
    StrategyEntry,
    TaskEntry,
    ToolsEntry,
    _known_model,
    _Strict,
    _unique,
)
