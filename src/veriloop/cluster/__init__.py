"""Running experiments on a Ray cluster (`--executor ray`): the driver plans, writes and
keeps the call cache; workers hold the models and run shards of instances.

Ray is an optional extra; nothing here imports it until an executor is started.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import VeriloopError
from ..extras import install_command, require


def require_ray() -> ModuleType:
    """The ray module, or a one-line error saying how to install it."""
    require("ray", "--executor ray")
    try:
        import ray
    except ImportError as exc:  # found but broken: the extra is there, its install is not whole
        raise VeriloopError(f"--executor ray: Ray is installed but does not import ({exc}); "
                            f"reinstall it with: {install_command('ray')} --force-reinstall") from None
    return ray
