"""Bad input anywhere a user can put it: one line `error: …` on stderr, exit 2, nothing stored.

Invalid UTF-8 in arguments and variables, numbers beyond any sensible bound, NUL characters in imported
fields, connection strings whose password must never be echoed, and texts too large to embed quickly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

SECRET = "s3cretpw"


def run_bytes(
    args: list[bytes],
    env: dict[str, str],
    extra_env: dict[bytes, bytes] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """The real entry point with argv and environment as bytes, the way a shell hands them over (a shell
    in a UTF-8 locale passes a Latin-1 file name or a mistyped byte through untouched)."""
    environ = {k: v for k, v in os.environb.items() if not k.startswith(b"CEMS_")}
    environ.update({k.encode(): v.encode() for k, v in env.items()})
    environ.update(extra_env or {})
    return subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"cems_cli.cli.app", *args],
        input=stdin,
        env=environ,
        capture_output=True,
        timeout=120,
        cwd=REPO,
    )


def stored(cli) -> tuple[int, int]:
    """(memories, rules) of the test's user."""
    total = cli("status", "--json").json()["total"]
    rules = cli("rule", "list", "--json").json()["rules"]
    return total, len(rules)


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    assert stderr.startswith("error: "), stderr
    assert stderr.strip().count("\n") == 0, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    for fragment in fragments:
        assert fragment in stderr, stderr


# 1. Invalid UTF-8 ---------------------------------------------------------------------------------------

BAD = b"caf\xe9 \xff\xfe"  # Latin-1 é and two bytes no UTF-8 text contains


@pytest.mark.parametrize(
    ("args", "stdin", "named"),
    [
        ([b"remember", BAD], None, "TEXT"),
        ([b"remember", b"fine text", b"--tags", b"ok," + BAD], None, "--tags"),
        ([b"remember", b"fine text", b"--title", BAD], None, "--title"),
        ([b"remember", b"fine text", b"--project", b"acme/" + BAD], None, "--project"),
        ([b"remember", b"fine text", b"--context", BAD], None, "--context"),
        ([b"remember", b"fine text", b"--category", BAD], None, "--category"),
        ([b"share", b"shared text", b"--team", BAD], None, "--team"),
        ([b"import", b"-", b"--team", BAD], b'{"content": "imported text"}\n', "--team"),
        ([b"search", BAD], None, "QUERY"),
        ([b"search", b"anything", b"--project", BAD], None, "--project"),
        ([b"forget", b"--tag", BAD, b"--yes"], None, "--tag"),
        ([b"rule", b"add", b"Bash: rm " + BAD + b" \xe2\x80\x94 no"], None, "PATTERN"),
        ([b"rule", b"add", b"rm *", b"--tool", b"Bash", b"--reason", BAD], None, "--reason"),
        ([b"rule", b"test", b"--tool", b"Bash", b"--input", b'{"command": "' + BAD + b'"}'], None, "--input"),
    ],
)
def test_invalid_utf8_in_an_argument_names_it_and_stores_nothing(cli, env, args, stdin, named):
    before = stored(cli)
    result = run_bytes(args, env, stdin=stdin)
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode == 2, stderr
    assert_one_line_error(stderr, f"{named} is not valid UTF-8")
    assert result.stdout == b""
    assert stored(cli) == before


@pytest.mark.parametrize("variable", [b"CEMS_USER", b"CEMS_TEAM", b"CEMS_PROJECT", b"CEMS_LLM_MODEL"])
def test_invalid_utf8_in_a_variable_names_it(cli, env, variable):
    before = stored(cli)
    extra = {variable: b"al" + BAD}
    if variable == b"CEMS_USER":
        # Another user's count cannot be read back: refusing before any connection is what shows it.
        extra[b"CEMS_DATABASE_URL"] = b"host=127.0.0.1 port=1 dbname=nowhere"
    result = run_bytes([b"remember", b"fine text"], env, extra)
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode == 2, stderr
    assert_one_line_error(stderr, f"invalid setting {variable.decode()}: not valid UTF-8")
    assert stored(cli) == before


def test_valid_non_ascii_and_non_utf8_file_names_still_work(cli, env, tmp_path: Path):
    result = run_bytes(
        [b"remember", "Caf\u00e9 cr\u00e8me: the \u00fcber-cache".encode(), b"--tags", b"d\xc3\xa9j\xc3\xa0"],
        env,
    )
    assert result.returncode == 0, result.stderr
    # A file name is not text: any bytes are a valid name on Linux, and `cems import` only opens it.
    name = os.fsencode(tmp_path) + b"/memories-\xff.jsonl"
    with open(name, "wb") as handle:
        handle.write(b'{"content": "Imported from a file whose name is not UTF-8."}\n')
    imported = run_bytes([b"import", name, b"--json"], env)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 1


# 2. Numbers beyond any sensible bound ---------------------------------------------------------------------

HUGE = "99999999999999999999"  # beyond int64: PostgreSQL's bigint refused it as an internal error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x", "--limit", HUGE], "--limit must be at most 1,000"),
        (["search", "x", "--limit", "1001"], "--limit must be at most 1,000"),
        (["search", "x", "--limit", "-" + HUGE], "--limit must be at least 1"),
        (["list", "--limit", HUGE], "--limit must be at most 10,000"),
        (["list", "--limit", "0"], "--limit must be at least 1"),
        (["list", "-n", "-5"], "--limit must be at least 1"),
        (["serve", "--idle-timeout", "nan"], "--idle-timeout must be a number from 1 to 604,800"),
        (["serve", "--idle-timeout", "1e400"], "--idle-timeout must be at most 604,800"),
        (["serve", "--idle-timeout", "0"], "--idle-timeout must be at least 1"),
        (["audit", "--limit", HUGE], "--limit must be at most 100,000"),
        (["audit", "--limit", "0"], "--limit must be at least 1"),
        (["admin", "quota", "someone", "--memories", HUGE], "--memories must be at most 2,147,483,647"),
        (["admin", "quota", "x", "--searches-per-minute", "-1"], "--searches-per-minute must be at least 0"),
        (["admin", "watchdog", "--once", "--idle-in-transaction", "nan"],
         "--idle-in-transaction must be a number from 1 to 86,400"),
        (["admin", "watchdog", "--once", "--statement", "0"], "--statement must be at least 1"),
        (["admin", "watchdog", "--interval", "1e400"], "--interval must be at most 3,600"),
        (["admin", "watchdog", "--json"], "--json prints one document: give it with --once"),
        (["ui", "--port", "0"], "--port must be at least 1"),
        (["ui", "--port", HUGE], "--port must be at most 65,535"),
    ],
)
def test_numbers_out_of_range_are_one_line_errors(cli, args, message):
    result = cli(*args)
    assert result.code == 2, (result.stdout, result.stderr)
    assert_one_line_error(result.stderr, message)


def test_eval_limit_questions_is_bounded(cli, tmp_path: Path):
    result = cli("eval", "--bench", str(tmp_path), "--limit-questions", HUGE)
    assert result.code == 2
    assert_one_line_error(result.stderr, "--limit-questions must be at most 1,000,000")


def test_eval_swebench_per_repo_is_bounded(cli, tmp_path: Path):
    result = cli("eval", "--sessions", str(tmp_path), "--data", str(tmp_path), "--swebench-per-repo", "0")
    assert result.code == 2
    assert_one_line_error(result.stderr, "--swebench-per-repo must be at least 1")


def test_largest_accepted_limits_still_work(cli):
    cli("remember", "Bounded limits keep working at their maximum.")
    assert cli("search", "bounded limits", "--limit", "1000").code == 0
    assert cli("list", "--limit", "10000", "--json").code == 0


def test_every_numeric_option_is_one_the_bounds_above_cover():
    """A new int or float option must be bounded (common.check_range) and added to the tests above."""
    import typing

    import typer

    from cems_cli.cli.app import app

    found: set[tuple[str, str]] = set()

    def numeric(hint: object) -> bool:
        return hint in (int, float) or any(arg in (int, float) for arg in typing.get_args(hint))

    def walk(group: typer.Typer, prefix: str) -> None:
        callbacks = [(prefix, group.registered_callback.callback)] if group.registered_callback else []
        for command in group.registered_commands:
            name = command.name or command.callback.__name__.rstrip("_").replace("_", "-")
            callbacks.append((f"{prefix} {name}".strip(), command.callback))
        for path, callback in callbacks:
            for parameter, hint in typing.get_type_hints(callback).items():
                if parameter != "return" and numeric(hint):
                    found.add((path, parameter))
        for sub in group.registered_groups:
            walk(sub.typer_instance, f"{prefix} {sub.name}".strip())

    walk(app, "")
    assert found == {("search", "limit"), ("list", "limit"), ("serve", "idle"), ("eval", "limit_questions"),
                     ("eval", "swebench_per_repo"), ("audit", "limit"), ("admin quota", "memories"),
                     ("admin quota", "searches"), ("admin watchdog", "idle"), ("admin watchdog", "statement"),
                     ("admin watchdog", "interval"), ("ui", "port")}


# 3. NUL characters and lone surrogates in imported fields ------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("title", "Deploy\u0000notes", "contains a NUL character"),
        ("tags", ["ok", "ops\u0000"], "contains a NUL character"),
        ("source", "\u0000", "contains a NUL character"),
        ("source_ref", "project:acme/\u0000api", "contains a NUL character"),
        ("context", "asked \u0000 about deploys", "contains a NUL character"),
        ("pin_reason", "why\u0000", "contains a NUL character"),
        ("title", "Deploy \ud800 notes", "is not valid Unicode"),
        ("tags", ["\udfff"], "is not valid Unicode"),
    ],
)
def test_import_refuses_nul_and_surrogates_naming_the_line(cli, field, value, problem):
    before = stored(cli)
    good = json.dumps({"content": f"A good line before the bad one ({field})."})
    bad = json.dumps({"content": f"The bad line ({field}).", field: value, "pinned": field == "pin_reason"})
    result = cli("import", "-", stdin=f"{good}\n{bad}\n".encode())
    assert result.code == 2, (result.stdout, result.stderr)
    assert_one_line_error(result.stderr, f"line 2: '{field}' {problem}")
    assert stored(cli) == before


def test_import_cleans_nul_in_content_as_remember_does(cli):
    result = cli("import", "-", "--json", stdin=b'{"content": "Content with a \\u0000NUL is cleaned."}\n')
    assert result.code == 0, result.stderr
    contents = [m["content"] for m in cli("list", "--json").json()["memories"]]
    assert "Content with a NUL is cleaned." in contents


# 4. A database URL's password is never echoed ------------------------------------------------------------

URLS = [
    f"postgresql://cems:{SECRET}@host:notaport/cems",
    f"postgresql://cems:{SECRET}@[::1/cems",  # libpq's own message quotes the whole URI
    f"postgresql://cems:{SECRET}@127.0.0.1:1/cems?bogus=1",
    f"postgresql://cems@127.0.0.1:{SECRET}/cems",  # the password typed where the port goes
    f"garbage {SECRET}",
    f"host=127.0.0.1 port=notaport password={SECRET}",
    f"host=127.0.0.1 password='{SECRET}",  # unterminated quote
    f"postgresql://cems:{SECRET}@127.0.0.1:1/cems",  # well formed, nobody listening
    f"host=127.0.0.1 port=1 user=cems password={SECRET} dbname=cems",
]
COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["db", "status"],
    ["db", "status", "--json"],
    ["remember", "hello"],
    ["search", "hello"],
    ["list"],
    ["export"],
    ["rule", "list"],
]


@pytest.mark.parametrize("url", URLS)
def test_database_url_password_never_appears(cli, url):
    for command in COMMANDS:
        result = cli(*command, extra_env={"CEMS_DATABASE_URL": url})
        shown = result.stdout + result.stderr
        assert SECRET not in shown, (command, shown)
        if result.code != 0:
            assert_one_line_error(result.stderr)
            assert result.code in (1, 2), (command, result.code)


@pytest.mark.parametrize("url", URLS[:6])
def test_a_malformed_database_url_is_a_settings_error(cli, url):
    result = cli("remember", "hello", extra_env={"CEMS_DATABASE_URL": url})
    assert result.code == 2
    assert_one_line_error(result.stderr, "invalid setting CEMS_DATABASE_URL")
    assert SECRET not in result.stderr


def test_database_url_from_the_config_file_is_not_echoed_either(cli, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'database_url = "postgresql://cems:{SECRET}@host:notaport/db"\n')
    result = cli("status", extra_env={"CEMS_HOME": str(home)})
    assert result.code == 2
    assert_one_line_error(result.stderr, "invalid setting CEMS_DATABASE_URL")
    assert SECRET not in result.stderr


def test_error_lines_mask_passwords_whatever_raised_them(monkeypatch: pytest.MonkeyPatch):
    from cems_cli.cli.common import error_line
    from cems_cli.config import get_settings

    monkeypatch.setenv("CEMS_DATABASE_URL", f"postgresql://cems:{SECRET}@db.internal:5432/cems")
    monkeypatch.setenv("CEMS_LLM_API_KEY", "sk-test-0123456789")
    get_settings.cache_clear()
    try:
        quoted = f'invalid URI: "postgresql://cems:{SECRET}@db.internal:5432/cems"\n  detail'
        assert error_line(quoted) == 'invalid URI: "postgresql://cems:***@db.internal:5432/cems" detail'
        assert SECRET not in error_line(f"could not log in with {SECRET}")
        assert "sk-test-0123456789" not in error_line("401 for key sk-test-0123456789")
        assert error_line(f"password={SECRET} host=x") == "password=*** host=x"
    finally:
        get_settings.cache_clear()


# 5. Texts too large to embed in bounded time ------------------------------------------------------------

ONE_MB = b"All work and no play makes a very long memory. " * 22_000  # ~1 MiB


def test_a_huge_memory_on_stdin_is_refused_quickly(cli):
    before = stored(cli)
    started = time.monotonic()
    result = cli("remember", "-", stdin=ONE_MB)
    elapsed = time.monotonic() - started
    assert result.code == 2
    assert_one_line_error(result.stderr, "over the limit of 16,384 bytes", "CEMS_MAX_MEMORY_BYTES")
    assert elapsed < 10, elapsed  # it was minutes of embedding
    assert stored(cli) == before


def test_a_huge_memory_is_refused_by_the_real_command(env):
    started = time.monotonic()
    result = run_bytes([b"remember", b"-"], env, stdin=ONE_MB)
    assert result.returncode == 2
    assert_one_line_error(result.stderr.decode(), "CEMS_MAX_MEMORY_BYTES")
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["remember", "x" * 20_000], None, "memory text is 20,000 bytes, over the limit of 16,384"),
        (["remember", "\u00e9" * 9_000], None, "memory text is 18,000 bytes"),  # bytes, not characters
        (["share", "-", "--team", "platform"], ONE_MB, "over the limit of 16,384 bytes"),
        (["search", "q " * 10_000], None, "search query is 20,000 bytes, over the limit of 16,384"),
    ],
)
def test_large_texts_are_refused_everywhere(cli, args, stdin, message):
    before = stored(cli)
    result = cli(*args, stdin=stdin)
    assert result.code == 2
    assert_one_line_error(result.stderr, message, "CEMS_MAX_MEMORY_BYTES")
    assert stored(cli) == before


def test_a_huge_imported_memory_names_its_line(cli):
    before = stored(cli)
    lines = [json.dumps({"content": "A small memory."}), json.dumps({"content": ONE_MB.decode()})]
    result = cli("import", "-", stdin="\n".join(lines).encode())
    assert result.code == 2
    assert_one_line_error(
        result.stderr, "line 2: 'content' is", "over the limit of 16,384 (CEMS_MAX_MEMORY_BYTES)"
    )
    assert stored(cli) == before


def test_a_memory_at_the_limit_is_embedded_in_bounded_time(cli):
    words = "the deploy script retries flaky migrations twice before paging the on-call engineer".split()
    text = " ".join(words[i % len(words)] + str(i % 97) for i in range(4_000))[:16_384]
    started = time.monotonic()
    result = cli("remember", "-", "--json", stdin=text.encode())
    elapsed = time.monotonic() - started
    assert result.code == 0, result.stderr
    assert result.json()["created"] is True
    assert elapsed < 60, elapsed  # a few seconds on 2 cores (cems_cli/embedding/limits.py)


def test_the_limit_is_a_setting(cli):
    small = {"CEMS_MAX_MEMORY_BYTES": "2048"}
    refused = cli("remember", "y" * 3000, extra_env=small)
    assert refused.code == 2 and "over the limit of 2,048" in refused.stderr
    assert cli("remember", "A memory under a lowered limit.", extra_env=small).code == 0
    bad = cli("status", extra_env={"CEMS_MAX_MEMORY_BYTES": "10"})
    assert bad.code == 2
    assert_one_line_error(bad.stderr, "invalid setting CEMS_MAX_MEMORY_BYTES")
