#!/usr/bin/env python3
"""Claude Code Stop hook: record the turn and start the capture worker.

Logic: cems_cli.hookhandlers.stop (bootstrap: _entry.py beside this file)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _entry import run  # noqa: E402

run("stop")
