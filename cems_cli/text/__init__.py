"""Text utilities for write paths: redaction of secrets and <private> blocks."""
