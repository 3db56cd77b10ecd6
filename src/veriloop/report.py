"""Deprecated: `veriloop.report` moved to `veriloop.tables`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.tables import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.tables"
warnings.warn(
    "veriloop.report is deprecated: it moved to veriloop.tables; "
    "import veriloop.tables (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.tables"]
