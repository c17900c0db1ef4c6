"""Bootstrap shared by the hook scripts beside it: find cems_cli, run one handler, never crash the agent.

Works with any interpreter that has cems installed, or straight from a source checkout / the wheel's
cems_cli/_data/hooks/ copy, where the package sits next to this folder.
"""

import os
import sys


def _load(handler):
    return __import__(f"cems_cli.hookhandlers.{handler}", fromlist=["main"])


def run(handler):
    try:
        module = _load(handler)
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
            module = _load(handler)
        except Exception:
            # No usable cems: drain stdin (Claude Code expects it read) and fail open.
            try:
                sys.stdin.buffer.read()
            except Exception:
                pass
            sys.exit(0)
    sys.exit(module.main())
