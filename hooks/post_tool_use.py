#!/usr/bin/env python3
"""Claude Code PostToolUse / PostToolUseFailure hook: capture tool events into the CEMS spool.
Thin entry point: see cems_cli.hookhandlers.post_tool_use.

Runs with any interpreter that has cems installed, or straight from a source checkout / the wheel's
cems_cli/_data/hooks/ copy, where it finds the package next to itself.
"""

import os
import sys

try:
    from cems_cli.hookhandlers.post_tool_use import main
except ImportError:
    _here = os.path.dirname(os.path.realpath(__file__))
    # Source checkout: <repo>/hooks/ → <repo>. Wheel: site-packages/cems_cli/_data/hooks/ → site-packages.
    for _root in (os.path.dirname(_here), os.path.dirname(os.path.dirname(os.path.dirname(_here)))):
        if os.path.isfile(os.path.join(_root, "cems_cli", "__init__.py")):
            sys.path.insert(0, _root)
            break
    try:
        from cems_cli.hookhandlers.post_tool_use import main
    except Exception:
        # No usable cems: drain stdin (Claude Code expects it read) and fail open.
        try:
            sys.stdin.buffer.read()
        except Exception:
            pass
        sys.exit(0)

sys.exit(main())
