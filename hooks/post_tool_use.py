#!/usr/bin/env python3
"""Claude Code PostToolUse / PostToolUseFailure hook: capture what a tool did.

Logic: cems_cli.hookhandlers.post_tool_use (bootstrap: _entry.py beside this file)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _entry import run  # noqa: E402

run("post_tool_use")
