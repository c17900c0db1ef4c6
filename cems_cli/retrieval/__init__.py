"""The retrieval pipeline, one small stage per module.

understand → strong_signal → (LLM stages: synthesis, HyDE) → store queries → fusion → rerank_blend →
filtering → adjust → assemble. Every stage here except the orchestrator and the LLM stages is pure: no
database, no network, no model. Importing this package imports nothing heavy (numpy is imported inside
the functions that need it), so hooks can use the cheap stages.
"""
