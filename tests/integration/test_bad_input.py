"""Bad input: a one-line error naming what was wrong, a non-zero exit, nothing stored."""

from __future__ import annotations

import pytest

from tests.conftest import cems_subprocess


def _count(cli) -> int:
    return cli("status", "--json").json()["total"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["remember", ""], None, "memory text is empty"),
        (["remember", "   \n\t "], None, "memory text is empty"),
        (["remember", "-"], b"\x00\x00  \n", "memory text is empty"),
        (["remember", "x", "--category", "gossip"], None, "unknown category 'gossip'"),
        (["remember", "x", "--scope", "public"], None, "unknown scope 'public'"),
        (["remember", "x", "--scope", "shared"], None, "shared memories need a team"),
        (["search", "x", "--limit", "0"], None, "--limit must be at least 1"),
        (["search", "   "], None, "search query is empty"),
        (["search", "x", "--mode", "magic"], None, "unknown mode 'magic'"),
        (["search", "x", "--scope", "everyone"], None, "unknown scope 'everyone'"),
        (["list", "--category", "nope"], None, "unknown category 'nope'"),
        (["show", "00000000-0000-0000-0000-000000000000"], None, "no memory with id"),
        (["forget", "deadbeef"], None, "no memory with id"),
        (["pin", "nonsense!"], None, "no memory with id"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(cli, args, stdin, message):
    before = _count(cli)
    result = cli(*args, stdin=stdin)
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert _count(cli) == before


def test_pin_with_unknown_pin_category(cli):
    memory_id = cli("remember", "Something worth pinning.", "--json").json()["id"]
    result = cli("pin", memory_id, "--pin-category", "gospel")
    assert result.code == 2 and "unknown pin category 'gospel'" in result.stderr
    assert cli("show", memory_id, "--json").json()["pinned"] is False


def test_nul_bytes_and_invalid_utf8_are_sanitised_not_crashing(cli):
    result = cli("remember", "-", "--json", stdin=b"caf\xe9 with a \x00NUL and \xff\xfe bytes")
    assert result.code == 0, result.stderr
    shown = cli("show", result.json()["id"], "--json").json()
    assert "\x00" not in shown["content"]
    assert shown["content"].startswith("caf\ufffd with a NUL")


def test_unreachable_database_url_names_the_host(env):
    result = cems_subprocess(
        ["remember", "hello"], {**env, "CEMS_DATABASE_URL": "postgresql://cems:secret@127.0.0.1:1/cems"}
    )
    stderr = result.stderr.decode()
    assert result.returncode == 1
    assert "cannot reach PostgreSQL at 127.0.0.1:1/cems" in stderr
    assert "secret" not in stderr and "Traceback" not in stderr
    assert stderr.strip().count("\n") == 0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CEMS_SEARCH_LIMIT", "many"),
        ("CEMS_EMBEDDING_BACKEND", "magic"),
        ("CEMS_EMBEDDING_DIM", "-3"),
        ("CEMS_LLM_TIMEOUT", "soon"),
    ],
)
def test_bad_setting_names_the_variable(env, variable, value):
    result = cems_subprocess(["status"], {**env, variable: value})
    stderr = result.stderr.decode()
    assert result.returncode == 2
    assert f"invalid setting {variable}" in stderr and "Traceback" not in stderr
