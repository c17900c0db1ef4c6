#!/usr/bin/env python3
"""Claude Code SessionStart hook: inject the memory profile.

Logic: cems_cli.hookhandlers.session_start (bootstrap: _entry.py beside this file)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _entry import run  # noqa: E402

run("session_start")
