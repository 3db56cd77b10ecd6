"""Deprecated: `veriloop.experiment.spec` is split into
veriloop.experiment.schema, veriloop.experiment.matrix, veriloop.experiment.overrides (the file's models; cells, roles and the matrix; reading files, --set and the
shipped files); this path works for one release.

Importing it warns once (DeprecationWarning); every name it had is the new modules' own.
"""

import warnings

from veriloop.errors import (  # noqa: F401
    SpecError,
    VeriloopError,
)
from veriloop.experiment.matrix import (  # noqa: F401
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
from veriloop.experiment.overrides import (  # noqa: F401
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
from veriloop.experiment.schema import (  # noqa: F401
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

__moved_to__ = "veriloop.experiment.schema, veriloop.experiment.matrix, veriloop.experiment.overrides"
warnings.warn(
    "veriloop.experiment.spec is deprecated: it is split into veriloop.experiment.schema, veriloop.experiment.matrix, veriloop.experiment.overrides; "
    "import a name from the module that defines it (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
