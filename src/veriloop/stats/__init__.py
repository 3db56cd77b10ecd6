"""Statistics over recorded trajectories: accuracy and Wilson intervals (metrics.py),
paired tests (paired.py), pass@k / maj@k / best-of-k pools (pools.py), accuracy against
tokens (frontier.py). Invariant: pure functions of records; nothing here imports
runs/, experiment/ or the cluster, and nothing here writes."""
