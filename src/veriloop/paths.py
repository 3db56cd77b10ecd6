"""Where veriloop keeps its own files (model weights, data sets, the call cache)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """VERILOOP_HOME, else ~/.cache/veriloop. Created on first use."""
    root = Path(os.environ.get("VERILOOP_HOME") or Path.home() / ".cache" / "veriloop")
    root.mkdir(parents=True, exist_ok=True)
    return root


def models_dir() -> Path:
    d = home() / "models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def data_dir() -> Path:
    """The installed data sets, one folder each, laid out as ../shared/data is."""
    d = home() / "data"
    d.mkdir(parents=True, exist_ok=True)
    return d


def default_cache_path() -> Path:
    return home() / "calls.sqlite"
