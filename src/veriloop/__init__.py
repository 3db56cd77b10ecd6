"""veriloop: LLM self-verification and self-correction loops with swappable parts."""

__version__ = "0.1.0"
