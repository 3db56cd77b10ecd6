"""Deprecated: `veriloop.experiment.dirlock` moved to `veriloop.runs.dirlock`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.runs.dirlock import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.runs.dirlock"
warnings.warn(
    "veriloop.experiment.dirlock is deprecated: it moved to veriloop.runs.dirlock; "
    "import veriloop.runs.dirlock (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.runs.dirlock"]
