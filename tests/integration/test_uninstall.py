"""`cems uninstall`: nothing of CEMS is left in Claude Code's files or running; with --purge-data (confirmed)
its data are gone too; bad input changes nothing."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import cems_subprocess

# Stands in for `claude plugin …`: the plugin installed at user scope and its marketplace declared, until
# the calls that remove them. Every call is logged.
_FAKE_CLAUDE = """#!{python}
import json, pathlib, sys
state = pathlib.Path(__file__).with_name("state.json")
data = json.loads(state.read_text()) if state.exists() else {{"plugin": True, "market": True}}
args = sys.argv[1:]
with open(pathlib.Path(__file__).with_name("calls.log"), "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] == ["plugin", "list"]:
    print(json.dumps([{{"id": "cems@cems", "scope": "user"}}] if data["plugin"] else []))
elif args[:3] == ["plugin", "marketplace", "list"]:
    print(json.dumps([{{"name": "cems"}}] if data["market"] else []))
elif args[:2] == ["plugin", "uninstall"]:
    data["plugin"] = False
    print(json.dumps({{"outcome": "ok", "message": "uninstalled"}}))
elif args[:3] == ["plugin", "marketplace", "remove"]:
    data["market"] = False
    print(json.dumps({{"outcome": "ok", "message": "removed"}}))
state.write_text(json.dumps(data))
"""


def _env(tmp_path: Path, home: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "user"),
        "CEMS_HOME": str(home),
        "CEMS_USER": "uninstall-test",
        "CEMS_OBSERVER_PATHS": str(tmp_path / "transcripts"),
    }


def _run(args: list[str], env: dict[str, str]) -> tuple[int, dict, str]:
    proc = cems_subprocess(args, env)
    out = proc.stdout.decode()
    return proc.returncode, (json.loads(out) if out.strip().startswith("{") else {}), proc.stderr.decode()


def test_uninstall_leaves_nothing_running_or_registered_then_purges_the_data(tmp_path):
    from cems_cli.capture.observer_daemon import holder
    from cems_cli.server.daemon import server_processes
    from cems_cli.store.embedded import ROOT_BASE, data_dir, read_postmaster

    home = tmp_path / "cems"
    env = _env(tmp_path, home)
    claude_dir = tmp_path / "user" / ".claude"
    claude_dir.mkdir(parents=True)
    (tmp_path / "transcripts").mkdir()
    settings = claude_dir / "settings.json"
    original = b'{\n  "model": "opus"\n}\n'
    settings.write_bytes(original)
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(_FAKE_CLAUDE.format(python=sys.executable))
    claude.chmod(0o700)
    try:
        code, _, err = _run(["hooks", "install", "--mcp", "--json"], env)
        assert code == 0, err
        assert Path(str(settings) + ".cems-backup").exists()
        assert "cems" in json.loads((tmp_path / "user" / ".claude.json").read_text())["mcpServers"]
        code, _, err = _run(["remember", "Uninstall stops everything.", "--json"], env)
        assert code == 0, err
        code, served, err = _run(["serve", "--daemon", "--json"], env)
        assert code == 0, err
        code, observing, err = _run(["observe", "--daemon", "--json"], env)
        assert code == 0, err
        cluster = data_dir(home / "pg")

        code, doc, err = _run(["uninstall", "--claude", str(claude), "--json"], env)
        assert code == 0, err
        assert doc["ok"] and doc["errors"] == []
        assert settings.read_bytes() == original  # the user's own bytes, and no backup left beside them
        assert not Path(str(settings) + ".cems-backup").exists()
        assert not (tmp_path / "user" / ".claude.json").exists()  # install created it: gone again
        calls = (claude.parent / "calls.log").read_text().splitlines()
        assert "plugin uninstall cems@cems --scope user --json" in calls
        assert "plugin marketplace remove cems --json" in calls
        assert doc["plugin"]["uninstalled"] and doc["plugin"]["scopes"] == ["user"]
        assert served["pid"] in doc["stopped"]["search_server"]["pids"] and server_processes(home) == []
        assert doc["stopped"]["observer"]["pid"] == observing["pid"] and holder(home) is None
        assert doc["stopped"]["database"]["stopped"] is True and read_postmaster(home / "pg") is None
        assert doc["data"] == {"purged": False, "removed": []} and home.is_dir()

        # Deleting the data takes a confirmation: a script without a terminal must say --yes.
        code, _, err = _run(["uninstall", "--purge-data"], env)
        assert code == 2 and err.count("\n") == 1 and "pass --yes" in err and home.is_dir()
        code, doc, err = _run(["uninstall", "--purge-data", "--yes", "--json"], env)
        assert code == 0, err
        assert doc["data"]["purged"] and str(home) in doc["data"]["removed"]
        assert not home.exists()
        if os.geteuid() == 0:  # the cluster root keeps outside the home, and its record
            assert cluster.parent.parent == ROOT_BASE and not cluster.parent.exists()
            assert not (ROOT_BASE / f"{cluster.parent.name}.home").exists()
    finally:
        from cems_cli.server.daemon import stop_servers
        from cems_cli.store.embedded import stop_server

        if home.exists():
            _run(["observe", "stop"], env)
            stop_servers(home)
            stop_server(home / "pg")


def test_bad_input_is_one_line_and_changes_nothing(tmp_path):
    folder = tmp_path / "my-project"  # CEMS_HOME pointed at a folder of the user's own
    folder.mkdir()
    (folder / "main.py").write_text("print('mine')\n")
    env = _env(tmp_path, folder)
    code, _, err = _run(["uninstall", "--purge-data", "--yes"], env)
    assert code == 2 and err.count("\n") == 1 and "does not look like a CEMS data folder" in err
    assert (folder / "main.py").exists()
    env = _env(tmp_path, tmp_path / "user")  # the user's home folder itself
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "pg.pass").write_text("x")
    code, _, err = _run(["uninstall", "--purge-data", "--yes"], env)
    assert code == 2 and err.count("\n") == 1 and "far more than CEMS's data" in err
    assert (tmp_path / "user" / "pg.pass").exists()
    code, _, err = _run(["uninstall", "--claude", str(tmp_path / "missing")], env)
    assert code == 2 and err.count("\n") == 1 and "no such file" in err
