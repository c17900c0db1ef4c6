"""Retrieval evaluation: benchmark loaders, unit → memory indexing, the runner, metrics and report tables."""
