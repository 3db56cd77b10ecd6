"""Deprecated: `veriloop.experiment.runner` moved to `veriloop.runs.runner`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.runs.runner import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.runs.runner"
warnings.warn(
    "veriloop.experiment.runner is deprecated: it moved to veriloop.runs.runner; "
    "import veriloop.runs.runner (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.runs.runner"]
