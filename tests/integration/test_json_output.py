"""`--json` end to end: stdout is exactly one JSON document, whatever the command printed on the way."""

from __future__ import annotations

import json
import uuid

from tests.conftest import cems_subprocess


def _one_document(result) -> object:
    assert result.code == 0, result.stderr
    # json.loads refuses anything after the document (a second document, a progress line, a table).
    return json.loads(result.stdout)


def test_memory_commands_print_one_document(cli, env, tmp_path):
    team = {"CEMS_TEAM": f"team-{uuid.uuid4().hex[:6]}"}
    memory = _one_document(cli("remember", "JSON output is one document.", "--json", extra_env=team))
    memory_id = memory["id"]
    for args in (
        ("search", "json output"),
        ("search", "json output", "--explain"),
        ("list",),
        ("show", memory_id[:8]),
        ("pin", memory_id, "--reason", "contract"),
        ("share", memory_id),
        ("status",),
        ("db", "status"),
        ("rule", "add", "Bash: rm -rf /* — never"),
        ("rule", "list"),
    ):
        assert isinstance(_one_document(cli(*args, "--json")), dict), args
    dump = tmp_path / "out.jsonl"
    assert _one_document(cli("export", "--out", str(dump), "--json"))["exported"] == 2
    other = {"CEMS_USER": f"user-{uuid.uuid4().hex[:10]}"}
    assert _one_document(cli("import", str(dump), "--trusted", "--json", extra_env=other))["imported"] == 2
    forgotten = _one_document(cli("forget", "--source", "manual", "--yes", "--json", extra_env=other))
    assert len(forgotten["forgotten"]) == 2


def test_errors_print_nothing_on_stdout(cli):
    for args in (("show", "deadbeef", "--json"), ("export", "--json"), ("forget", "--json")):
        result = cli(*args)
        assert result.code == 2 and result.stdout == "", args
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


def test_version_from_the_real_entry_point(env):
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        done = cems_subprocess([flag], env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode() == f"cems {version('cems')}\n"
