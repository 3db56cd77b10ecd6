"""Exploit families of kind "judge" (see families.py for the contract)."""

from __future__ import annotations
