"""Batch mode: a server model's calls sent through its provider's batch API (see .model),
with a journal in the run directory (.journal) and the run's scope (.scope)."""

from __future__ import annotations

from .model import BatchModel, batch_model_of

__all__ = ["BatchModel", "batch_model_of"]
