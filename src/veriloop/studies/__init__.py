"""Studies that measure one role of the LLM on its own: judging answers of known
correctness (verification) and writing critiques of wrong ones (critique quality)."""
