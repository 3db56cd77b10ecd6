"""What makes a run directory one run: the settings that change its results.

Trajectories are resumed by (strategy, instance, seed). Anything else that changes what a
trajectory would be (the model, the data behind an instance id, the domain's options, the
prompt of a task...) is not in that key, so a run directory records those settings in
`config.json` and refuses to be continued with different ones: otherwise old and new
trajectories would be read back side by side and summarised as one run.

`n` is deliberately not among them: asking for more instances extends a run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import VeriloopError

# Each setting that must match, in the words a message uses for it.
SETTINGS: dict[str, str] = {
    "model_identity": "model",
    "model_id": "model id",
    "role_models": "models in roles",
    "domain": "domain",
    "seed": "seed",
    "data": "data file",
    "data_sha256": "data file contents (sha256)",
    "offset": "offset",
    "domain_options": "domain options",
    "strategy_defaults": "strategy defaults (--max-rounds, --k)",
    "task": "task file",
    "task_sha256": "task file contents (sha256)",
    "prompt": "prompt template",
    "check": "check function",
    "reference_field": "reference field",
    "id_field": "id field",
    "roles": "models given roles (judge, critic, checker)",
    "imported_from": "imported answers",
    "format": "format of the imported answers",
}


def content_sha256(path: str | Path | None) -> str | None:
    """sha256 of a data file, or of a folder's files (names and contents, in name order);
    None when there is no such file (generated instances, or a name rather than a path)."""
    if path is None:
        return None
    p = Path(path)
    if p.is_file():
        return _hash_files([(p.name, p)])
    if p.is_dir():
        files = sorted((str(f.relative_to(p)), f) for f in p.rglob("*") if f.is_file())
        return _hash_files(files)
    return None


def _hash_files(files: list[tuple[str, Path]]) -> str:
    digest = hashlib.sha256()
    for name, f in files:
        digest.update(name.encode() + b"\0")
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _describe(key: str, config: Mapping[str, object]) -> str:
    value = config.get(key)
    if key == "model_identity":
        # A weight file's sha256 means nothing to a reader; the model's name does.
        # A server model's identity (name@URL) is read whole.
        name = config.get("model") or config.get("model_name")
        # A weight file's hash is cut to its first 12 digits, a reply cap after it kept.
        shown = re.sub(r"^([0-9a-f]{12})[0-9a-f]{52}(?=$|\|)", r"\1", str(value))
        return f"{name} ({shown})" if name else str(value)
    if key.endswith("sha256") and isinstance(value, str):
        return value[:12]
    if value is None:
        return "none"
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def check_same_run(out_dir: Path, old: Mapping[str, object], new: Mapping[str, object]) -> None:
    """Raise when `new` settings would continue a run made with other ones. Only settings
    both configs record are compared: one written by an older veriloop, or by a caller that
    has no such setting, is not held against the other."""
    differ = [key for key in SETTINGS if key in old and key in new and _normal(old[key]) != _normal(new[key])
              and not (key == "model_identity" and _same_server_model(old, new))]
    if not differ:
        return
    parts = [f"{SETTINGS[k]} {_describe(k, old)}, not {_describe(k, new)}" for k in differ]
    raise VeriloopError(
        f"{out_dir} holds a run made with {'; '.join(parts)}: its records would be mixed with this run's. "
        "Choose another output directory (--out, or out= in Python), or repeat the earlier settings to resume it"
    )


def _same_server_model(old: Mapping[str, object], new: Mapping[str, object]) -> bool:
    """A run recorded when a server model's identity was its name alone is the same model
    as name@server now if it was made against the same base URL."""
    before, now = old.get("model_identity"), new.get("model_identity")
    return (
        isinstance(before, str) and isinstance(now, str) and "@" not in before and now.startswith(before + "@")
        and "base_url" in old and old.get("base_url") == new.get("base_url")
    )


def _normal(value: object) -> object:
    # config.json round-trips through JSON: compare what would be written, not Python types.
    return json.loads(json.dumps(value, sort_keys=True, default=str))
