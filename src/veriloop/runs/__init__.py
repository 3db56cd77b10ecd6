"""Run directories: one strategy on one domain's instances, recorded on disk.

run_experiment / run_episode (runner.py), the crash-safe record files (jsonl.py), one
process per directory (dirlock.py) and what makes a directory one run (identity.py).
Invariant: nothing here imports experiment/ (the matrix) or the cluster."""
