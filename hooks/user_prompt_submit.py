#!/usr/bin/env python3
"""Claude Code UserPromptSubmit hook: inject memories recalled for the prompt.

Logic: cems_cli.hookhandlers.user_prompt_submit (bootstrap: _entry.py beside this file)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _entry import run  # noqa: E402

run("user_prompt_submit")
