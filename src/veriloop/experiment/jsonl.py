"""Deprecated: `veriloop.experiment.jsonl` moved to `veriloop.runs.jsonl`;
this path works for one release.

Importing it warns once (DeprecationWarning) and gives the new module itself, so names,
patches and isinstance checks are the new module's.
"""

import sys
import warnings

from veriloop.runs.jsonl import *  # noqa: F403  (the names, for type checkers)

__moved_to__ = "veriloop.runs.jsonl"
warnings.warn(
    "veriloop.experiment.jsonl is deprecated: it moved to veriloop.runs.jsonl; "
    "import veriloop.runs.jsonl (the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = sys.modules["veriloop.runs.jsonl"]
