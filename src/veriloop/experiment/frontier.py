"""Deprecated: `veriloop.experiment.frontier` moved to `veriloop.stats.frontier`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.stats.frontier import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.stats.frontier"
warnings.warn(
    "veriloop.experiment.frontier is deprecated: it moved to veriloop.stats.frontier; "
    "import veriloop.stats.frontier (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.stats.frontier"]
