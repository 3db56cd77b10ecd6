"""Audits: how often a verifier accepts answers known to be wrong, plain and dressed by
exploit families (see families.py for the contract, engine.py for the run, report.py
for the arithmetic). `veriloop.audit(...)` and `veriloop audit` are the doors.

Importing this package registers the built-in families (code.py, judge.py, reader.py);
they only write text, so the import is light.
"""

from __future__ import annotations

from . import code, judge, reader  # noqa: F401  (each registers its families)
from .families import FAMILIES, KINDS, Family, Subject, families_for, get_family, register_family

__all__ = ["FAMILIES", "KINDS", "Family", "Subject", "families_for", "get_family", "register_family"]
