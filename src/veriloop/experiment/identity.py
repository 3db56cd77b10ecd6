"""Deprecated: `veriloop.experiment.identity` moved to `veriloop.runs.identity`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.runs.identity import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.runs.identity"
warnings.warn(
    "veriloop.experiment.identity is deprecated: it moved to veriloop.runs.identity; "
    "import veriloop.runs.identity (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.runs.identity"]
