"""Deprecated: `veriloop.experiment.paired` moved to `veriloop.stats.paired`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.stats.paired import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.stats.paired"
warnings.warn(
    "veriloop.experiment.paired is deprecated: it moved to veriloop.stats.paired; "
    "import veriloop.stats.paired (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.stats.paired"]
