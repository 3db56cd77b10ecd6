"""One command per paper: run its conditions on any model and write its tables."""
