"""Running experiments on a Ray cluster (`--executor ray`): the driver plans, writes and
keeps the call cache; workers hold the models and run shards of instances.

Ray is an optional extra; nothing here imports it until an executor is started.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import VeriloopError

INSTALL_HINT = "pip install 'veriloop[ray]' (in a checkout: .venv/bin/pip install -e '.[ray]')"


def require_ray() -> ModuleType:
    """The ray module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise VeriloopError(f"--executor ray needs Ray, an optional extra: {INSTALL_HINT}") from None
    return ray
