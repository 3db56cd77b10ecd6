"""Exploit families of kind "reader" (see families.py for the contract)."""

from __future__ import annotations
