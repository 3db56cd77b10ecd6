"""Errors meant for the person at the keyboard.

A `VeriloopError` carries one line that says what is wrong and how to fix it; the CLI
prints that line and exits non-zero instead of showing a traceback.
"""


class VeriloopError(Exception):
    """A problem the user can fix (bad input, missing model, unreadable file)."""


class ModelNotInstalled(VeriloopError):
    pass


class CorruptModelFile(VeriloopError):
    pass


class ModelTransportError(VeriloopError):
    """The backend could not be reached after retries; never shown to the model."""


class DataFileError(VeriloopError):
    pass


class ContextOverflow(VeriloopError):
    """The conversation no longer fits the model's context window."""
