"""Text utilities: redaction of secrets and <private> blocks on write paths, token counts, and how a query
is split into terms (terms.py)."""
