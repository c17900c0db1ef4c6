"""The viewer as `cems ui` runs it (uvicorn in a thread, live updates on), for a fresh user of a test store:
what the browser and live-update tests serve pages from."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_viewer(cems_home: Path, token: str, *, project: str | None = None) -> Iterator[dict[str, Any]]:
    """Every CEMS_* variable cleared but the store's home and a new user (and `project`); yields the
    library handle, the port and the viewer's state, and stops the server and closes the store after."""
    import uvicorn

    import cems
    from cems_cli.config import get_settings
    from cems_cli.ui.app import create_app
    from cems_cli.ui.server import bind

    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("CEMS_")]:
            patch.delenv(key)
        patch.setenv("CEMS_HOME", str(cems_home))
        patch.setenv("CEMS_USER", f"user-{uuid.uuid4().hex[:10]}")
        if project:
            patch.setenv("CEMS_PROJECT", project)
        get_settings.cache_clear()
        memory = cems.open()
        port = free_port()
        app = create_app(memory, token=token, port=port)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                               timeout_graceful_shutdown=1))
        sock = bind(port)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            yield {"memory": memory, "port": port, "viewer": app.state.viewer}
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()
            memory.close()
            get_settings.cache_clear()
