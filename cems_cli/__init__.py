"""CEMS: long-term memory and guard rails for AI coding agents."""

__version__ = "0.1.0"
