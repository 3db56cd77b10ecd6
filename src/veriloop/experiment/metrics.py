"""Deprecated: `veriloop.experiment.metrics` moved to `veriloop.stats.metrics`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.stats.metrics import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.stats.metrics"
warnings.warn(
    "veriloop.experiment.metrics is deprecated: it moved to veriloop.stats.metrics; "
    "import veriloop.stats.metrics (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.stats.metrics"]
