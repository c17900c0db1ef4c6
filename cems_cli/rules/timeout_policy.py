"""CEMS_RULES_ON_TIMEOUT as the PreToolUse hook reads it: stdlib only, and only once a rule ran out of time.

Same precedence as `cems_cli.config.Settings.rules_on_timeout`: the environment, then
`$CEMS_HOME/config.toml`, then the default. Both places are the user's: the agent cannot set the hook's
environment, and the built-in guard (`cems_cli.rules.guard`) keeps its tools out of CEMS's home.
"""

from __future__ import annotations

import os

from cems_cli.defaults import RULES_ON_TIMEOUT
from cems_cli.plumbing.hookio import cems_home

_VALUES = ("deny", "allow")


def rules_on_timeout() -> str:
    """"deny" or "allow"; anything unreadable or unknown is the default ("deny"): failing closed."""
    value = os.environ.get("CEMS_RULES_ON_TIMEOUT", "").strip().lower()
    if value:
        return value if value in _VALUES else RULES_ON_TIMEOUT
    try:
        import tomllib  # ~2 ms: paid only when a rule actually ran out of time

        with open(os.path.join(cems_home(), "config.toml"), "rb") as handle:
            value = tomllib.load(handle).get("rules_on_timeout", "")
    except (OSError, ValueError):
        return RULES_ON_TIMEOUT
    value = value.strip().lower() if isinstance(value, str) else ""
    return value if value in _VALUES else RULES_ON_TIMEOUT
