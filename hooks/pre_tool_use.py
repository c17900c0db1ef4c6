#!/usr/bin/env python3
"""Claude Code PreToolUse hook: enforce CEMS rules on a tool call.

Logic: cems_cli.hookhandlers.pre_tool_use (bootstrap: _entry.py beside this file)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _entry import run  # noqa: E402

run("pre_tool_use")
