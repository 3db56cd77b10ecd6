"""Exploit families of kind "code" (see families.py for the contract)."""

from __future__ import annotations
