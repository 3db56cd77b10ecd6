"""Deprecated: `veriloop.experiment.pools` moved to `veriloop.stats.pools`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.stats.pools import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.stats.pools"
warnings.warn(
    "veriloop.experiment.pools is deprecated: it moved to veriloop.stats.pools; "
    "import veriloop.stats.pools (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.stats.pools"]
