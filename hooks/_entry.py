"""Bootstrap shared by the hook scripts beside it: find cems_cli, run one handler, never crash the agent.

Works with any interpreter that has cems installed, or straight from a source checkout / the wheel's
cems_cli/_data/hooks/ copy, where the package sits next to this folder. Loading and running the handler
is `cems_cli.plumbing.hookentry.dispatch`, the same code behind the portable `cems-hook <handler>` command.
"""

import os
import sys


def _dispatcher():
    from cems_cli.plumbing.hookentry import dispatch

    return dispatch


def run(handler):
    try:
        dispatch = _dispatcher()
    except ImportError:
        here = os.path.dirname(os.path.realpath(__file__))
        # Source checkout: <repo>/hooks/ → <repo>. Wheel: site-packages/cems_cli/_data/hooks/ → site-packages.
        for root in (os.path.dirname(here), os.path.dirname(os.path.dirname(os.path.dirname(here)))):
            if os.path.isfile(os.path.join(root, "cems_cli", "__init__.py")):
                sys.path.insert(0, root)
                break
        # Forget a half-imported cems_cli (say, an older installed version) so the one found here loads.
        for name in [name for name in sys.modules if name == "cems_cli" or name.startswith("cems_cli.")]:
            del sys.modules[name]
        try:
            dispatch = _dispatcher()
        except Exception:
            # No usable cems: drain stdin (Claude Code expects it read) and fail open.
            try:
                sys.stdin.buffer.read()
            except Exception:
                pass
            sys.exit(0)
    dispatch(handler)
