"""hooks/post_tool_use.py as Claude Code runs it (a real process per event), the spool it writes, and the
capture worker that turns spooled events into pattern memories in the real embedded PostgreSQL."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cems_cli.capture import safe_text
from cems_cli.capture.worker import process_pending
from tests.support.paths import PAYLOADS, SAMPLE_SESSION

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "hooks" / "post_tool_use.py"
SESSION = SAMPLE_SESSION

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
URL_PASSWORD = "Sup3rS3cretPw"
PRIVATE_TEXT = "my-home-address-42-elm-street"
DB_PASSWORD = "hunter2hunter2"
SEEDED = (AWS_KEY, GITHUB_TOKEN, URL_PASSWORD, PRIVATE_TEXT, DB_PASSWORD)


# --- running the hook -----------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "cems-home"


@pytest.fixture
def capture_env(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return capture_environment(env, tmp_path, monkeypatch)


def capture_environment(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The `env` fixture's user and database, with a CEMS_HOME of this test's own: each test gets a private
    spool (and capture lock) while memories go to the session's shared embedded server."""
    from cems_cli.config import get_settings
    from cems_cli.store.embedded import ensure_server

    server = ensure_server(Path(env["CEMS_HOME"]) / "pg")
    values = dict(env, CEMS_HOME=str(tmp_path / "capture-home"), CEMS_DATABASE_URL=server.conninfo())
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    return values


def hook_env(home: Path | str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    env.pop("PYTHONPATH", None)  # the script must find cems_cli on its own
    env.update(CEMS_HOME=str(home), **extra)
    return env


def run_hook(
    home: Path | str, stdin: bytes | dict, hook: Path = HOOK, cwd: Path | str | None = None, **extra: str
) -> subprocess.CompletedProcess:
    """Run a hook script as Claude Code does: JSON on stdin, in the agent's working directory."""
    data = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
    return subprocess.run(
        [sys.executable, str(hook)],
        input=data,
        capture_output=True,
        env=hook_env(home, **extra),
        cwd=cwd,
        timeout=60,
    )


def assert_silent(proc: subprocess.CompletedProcess) -> None:
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr
    assert b"Traceback" not in proc.stderr


def fixture(name: str, **changes) -> dict:
    return {**json.loads((PAYLOADS / name).read_text()), **changes}


def bash_event(
    tool_use_id: str,
    command: str,
    stdout: str = "",
    stderr: str = "",
    cwd: str = "/tmp/p",
    session: str = SESSION,
    **extra,
) -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/none.jsonl",
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": tool_use_id,
        "tool_input": {"command": command, "description": "run"},
        "tool_response": {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False},
        **extra,
    }


def edit_event(tool_use_id: str, path: str, cwd: str, session: str = SESSION) -> dict:
    return {
        "session_id": session,
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_use_id": tool_use_id,
        "tool_input": {"file_path": path, "old_string": "x = 1", "new_string": "x = 2"},
        "tool_response": {
            "filePath": path,
            "oldString": "x = 1",
            "newString": "x = 2",
            "originalFile": "x = 1\n" * 5000,
            "structuredPatch": [],
        },
    }


def rows(home: Path) -> list[dict]:
    with sqlite3.connect(home / "spool.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM tool_events ORDER BY received_at, rowid")]


def spool_bytes(home: Path) -> bytes:
    """Every byte of the spool as it sits on disk, WAL and shared-memory files included."""
    return b"".join(p.read_bytes() for p in sorted(home.glob("spool.db*")))


# --- capture --------------------------------------------------------------------------------------------


def test_the_bash_fixture_is_spooled_silently(home):
    proc = run_hook(home, (PAYLOADS / "PostToolUse.json").read_bytes())
    assert_silent(proc)
    [row] = rows(home)
    assert (row["tool_use_id"], row["event"], row["tool_name"], row["cwd"]) == (
        "toolu_01Vd7RmK2xPq9sWn4YbT6cHe",
        "PostToolUse",
        "Bash",
        "/home/priya/invoice-worker",
    )
    assert row["session_id"] == SESSION and row["processed_at"] is None
    data = json.loads(row["data"])
    assert data["input"]["command"] == 'rg -n "timeout=" src/'
    assert data["response"]["stdout"].startswith("src/invoice_worker/webhooks.py:12:")
    assert data["duration_ms"] == 63
    assert (home.stat().st_mode & 0o777, (home / "spool.db").stat().st_mode & 0o777) == (0o700, 0o600)


def test_an_edit_keeps_the_change_but_not_the_whole_file(home):
    payload = fixture("PostToolUse-Edit.json")
    payload["tool_response"]["originalFile"] = "import os\n" * 200_000  # 2 MB
    assert_silent(run_hook(home, payload))
    data = json.loads(rows(home)[0]["data"])
    assert "originalFile" not in data["response"] and "structuredPatch" not in data["response"]
    assert data["input"]["new_string"] == (
        "        response = self.session.post(url, json=body, timeout=self.settings.webhook_timeout)"
    )
    assert data["response"]["filePath"] == "/home/priya/invoice-worker/src/invoice_worker/webhooks.py"


def test_megabytes_of_output_keep_their_head_and_tail(home):
    stdout = (
        "collecting ...\n"
        + "tests/test_x.py::test_case PASSED\n" * 100_000
        + "1 failed, 99999 passed in 9s\n"
    )
    assert_silent(run_hook(home, bash_event("toolu_big", "pytest -v", stdout)))
    [row] = rows(home)
    kept = json.loads(row["data"])["response"]["stdout"]
    assert len(row["data"]) < 10_000 and len(kept) < 4_200
    assert kept.startswith("collecting ...") and kept.rstrip().endswith("1 failed, 99999 passed in 9s")
    assert f"[… {len(stdout)} characters, cut here …]" in kept


def test_a_failure_event_is_spooled_as_one(home):
    payload = {
        "session_id": SESSION,
        "cwd": "/tmp/p",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_use_id": "toolu_fail",
        "tool_input": {"command": "pytest -q"},
        "error": "Exit code 1\nE   KeyError: 'REDIS_URL'",
        "is_interrupt": False,
    }
    assert_silent(run_hook(home, payload))
    [row] = rows(home)
    assert row["event"] == "PostToolUseFailure"
    assert json.loads(row["data"])["error"] == "Exit code 1\nE   KeyError: 'REDIS_URL'"


def test_a_replayed_event_is_stored_once(home):
    for _ in range(3):
        assert_silent(run_hook(home, (PAYLOADS / "PostToolUse.json").read_bytes()))
    assert len(rows(home)) == 1


def test_events_without_tool_use_id_are_keyed_by_content(home):
    payload = fixture("PostToolUse.json")
    del payload["tool_use_id"]
    for _ in range(2):
        assert_silent(run_hook(home, payload))
    other = dict(payload, tool_input={"command": "ls", "description": "list"})
    assert_silent(run_hook(home, other))
    ids = [row["tool_use_id"] for row in rows(home)]
    assert len(ids) == 2 and all(i.startswith("sha256:") for i in ids)


def test_other_events_and_cems_disable_store_nothing(home):
    assert_silent(run_hook(home, fixture("PostToolUse.json", hook_event_name="PreToolUse")))
    assert_silent(run_hook(home, (PAYLOADS / "PostToolUse.json").read_bytes(), CEMS_DISABLE="1"))
    assert not (home / "spool.db").exists()


MALFORMED = {
    "empty": b"",
    "not json": b"this is not json {",
    "a json array": b'[{"tool_name": "Bash"}]',
    "a json string": b'"PostToolUse"',
    "missing fields": b"{}",
    "no tool name": json.dumps({"hook_event_name": "PostToolUse", "tool_use_id": "t"}).encode(),
    "tool name not a string": json.dumps({"hook_event_name": "PostToolUse", "tool_name": ["Bash"]}).encode(),
    "20 MB of garbage": b"{" + b"x" * (20 * 1024 * 1024),
    "deeply nested": b'{"tool_name": "Bash", "tool_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
}


@pytest.mark.parametrize("stdin", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_input_exits_0_silently_and_stores_nothing(home, stdin):
    assert_silent(run_hook(home, stdin))
    assert not (home / "spool.db").exists() or rows(home) == []


def test_odd_but_valid_input_is_stored_without_crashing(home):
    invalid_utf8 = (
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t-utf8", '
        b'"tool_input": {"command": "echo caf\xe9 \xff\xfe"}, "tool_response": {"stdout": "\xc3\x28"}}'
    )
    assert_silent(run_hook(home, invalid_utf8))
    surrogates = b'{"tool_name": "Bash", "tool_use_id": "t-sur", "tool_input": {"command": "echo \\ud800"}}'
    assert_silent(run_hook(home, surrogates))
    huge = bash_event("t-20mb", "cat big.log", stdout="y" * (20 * 1024 * 1024))
    assert_silent(run_hook(home, huge))
    not_a_number = (
        b'{"tool_name": "Bash", "tool_use_id": "t-nan", "tool_response": {"took": NaN, "x": -Infinity}}'
    )
    assert_silent(run_hook(home, not_a_number))
    stored = {row["tool_use_id"]: json.loads(row["data"]) for row in rows(home)}
    assert stored["t-nan"]["response"] == {"took": "nan", "x": "-inf"}
    assert stored["t-utf8"]["input"]["command"] == "echo caf\ufffd \ufffd\ufffd"
    assert stored["t-sur"]["input"]["command"] == "echo ?"
    assert len(json.dumps(stored["t-20mb"])) < 10_000


def test_concurrent_hooks_lose_nothing_and_duplicate_nothing(home):
    """8 processes at a time, each sending its own ids and ids the others send too."""
    errors: list[str] = []

    def sender(worker: int) -> None:
        ids = [f"toolu_w{worker}_{i}" for i in range(4)] + [f"toolu_shared_{i}" for i in range(3)]
        for tool_use_id in ids:
            proc = run_hook(home, bash_event(tool_use_id, f"echo {tool_use_id}", stdout=tool_use_id))
            if proc.returncode != 0 or proc.stdout or b"Traceback" in proc.stderr:
                errors.append(proc.stderr.decode())

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = [row["tool_use_id"] for row in rows(home)]
    expected = {f"toolu_w{w}_{i}" for w in range(8) for i in range(4)} | {
        f"toolu_shared_{i}" for i in range(3)
    }
    assert sorted(stored) == sorted(expected)  # every id once: none lost, none twice
    with sqlite3.connect(home / "spool.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# --- what the spool keeps -------------------------------------------------------------------------------


def test_clip_keeps_head_and_tail_and_never_half_a_secret():
    text = "start " + "word " * 2000 + AWS_KEY + " " + "word " * 2000 + "end"
    clipped = safe_text.clip(text, 100, 100)
    assert clipped.startswith("start word") and clipped.endswith("word end")
    assert "cut here" in clipped and AWS_KEY[:8] not in clipped
    # A secret straddling the cut is redacted as a whole or dropped, never kept in part.
    for offset in range(-30, 30, 3):
        text = "x " * (50 + offset) + GITHUB_TOKEN + " tail" * 400
        assert "a1B2c3D4" not in safe_text.clip(text, 100, 50)
    # A private block that opens in the head and closes in the tail is gone from both.
    text = "public <private>" + "hidden " * 3000 + "</private> visible"
    assert safe_text.clip(text, 50, 50) == "public  visible"


def test_secret_looking_keys_hide_their_values():
    tree = safe_text.clip_tree({"env": {"DB_PASSWORD": DB_PASSWORD, "token_count": "12", "path": "/x"}})
    assert tree == {"env": {"DB_PASSWORD": "[REDACTED:secret]", "token_count": "12", "path": "/x"}}


def test_seeded_secrets_never_reach_the_spool_or_the_database(capture_env):
    home = Path(capture_env["CEMS_HOME"])
    events = [
        bash_event(
            "toolu_s1",
            f"AWS_ACCESS_KEY_ID={AWS_KEY} aws s3 ls && pytest -q",
            stdout=f"token={GITHUB_TOKEN}\n42 passed in 0.1s",
        ),
        bash_event(
            "toolu_s2",
            f"psql postgres://app:{URL_PASSWORD}@db.internal/app -c 'select 1'",
            stdout=f"<private>{PRIVATE_TEXT}</private> 1 row",
        ),
        bash_event(
            "toolu_s3",
            f"echo <private>{PRIVATE_TEXT}</private> && npm install",
            stdout=f"added 1 package, key {GITHUB_TOKEN}",
        ),
        {
            "session_id": SESSION,
            "cwd": "/tmp/p",
            "hook_event_name": "PostToolUse",
            "tool_use_id": "toolu_s4",
            "tool_name": "mcp__db__connect",
            "tool_input": {"DB_PASSWORD": DB_PASSWORD, "host": "db"},
            "tool_response": {"ok": True},
        },
    ]
    for event in events:
        assert_silent(run_hook(home, event))
    assert len(rows(home)) == 4
    on_disk = spool_bytes(home)
    for secret in SEEDED:
        assert secret.encode() not in on_disk, secret

    from cems_cli.config import get_settings

    summary = process_pending(get_settings())
    assert summary.tool_events == 4 and summary.patterns_stored >= 2
    assert stored_rows_containing(capture_env["CEMS_USER"], "pytest -q")  # the query does find stored text
    for secret in SEEDED:
        assert secret.encode() not in spool_bytes(home), secret
        assert not stored_rows_containing(capture_env["CEMS_USER"], secret), secret


def stored_rows_containing(user: str, needle: str) -> list[str]:
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(get_settings()) as service:
        return [
            row[0]
            for row in service.conn.execute(
                "SELECT d.content FROM memory_documents d LEFT JOIN memory_chunks c ON c.document_id = d.id "
                "WHERE d.user_id = %s AND (strpos(concat_ws(' ', d.content, d.title, d.source_ref, "
                "array_to_string(d.tags, ' ')), %s) > 0 OR strpos(coalesce(c.content, ''), %s) > 0)",
                (user, needle, needle),
            ).fetchall()
        ]


# --- from events to pattern memories --------------------------------------------------------------------

PYTEST_FAILED = (
    "F" + "." * 41 + " [100%]\n=== FAILURES ===\nE       KeyError: 'REDIS_URL'\n"
    "FAILED tests/test_config.py::test_config - KeyError: 'REDIS_URL'\n1 failed, 41 passed in 0.52s\n"
)
PYTEST_PASSED = "." * 42 + " [100%]\n42 passed in 0.49s\n"


def git_project(path: Path, remote: str = "git@github.com:acme/api.git") -> str:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
    return str(path)


def patterns(user: str) -> list[tuple[str, str, str, list[str]]]:
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(get_settings()) as service:
        return [
            tuple(r)
            for r in service.conn.execute(
                "SELECT content, source, source_ref, tags FROM memory_documents "
                "WHERE user_id = %s AND category = 'patterns' AND NOT archived ORDER BY created_at, content",
                (user,),
            ).fetchall()
        ]


def test_the_worker_turns_a_realistic_sequence_into_pattern_memories(capture_env, tmp_path):
    home = Path(capture_env["CEMS_HOME"])
    cwd = git_project(tmp_path / "acme-api")
    cache = f"{cwd}/src/acme/cache.py"
    events = [
        bash_event("t1", "pytest -q", PYTEST_FAILED, cwd=cwd),
        edit_event("t2", f"{cwd}/src/acme/config.py", cwd),
        bash_event("t3", "pytest -q tests/test_config.py", PYTEST_PASSED, cwd=cwd),
        bash_event("t4", "npm install react-query", "added 3 packages in 2s", cwd=cwd),
        edit_event("t5", cache, cwd),
        edit_event("t6", cache, cwd),
        edit_event("t7", cache, cwd, session="second-session"),
        edit_event("t8", cache, cwd, session="second-session"),
    ]
    for event in events:
        assert_silent(run_hook(home, event))

    from cems_cli.config import get_settings

    summary = process_pending(get_settings())
    # The failure and its fix is a `learnings` memory of the capture engine, which reads it from the
    # transcript; this path keeps to how the project is built, tested and installed.
    assert (summary.tool_events, summary.patterns_stored, summary.busy) == (8, 3, False)
    stored = patterns(capture_env["CEMS_USER"])
    assert [content for content, *_ in stored] == [
        "In project acme/api the tests run with `pytest -q`.",
        "In project acme/api dependencies are installed with `npm install` (npm).",
        "In project acme/api the file `src/acme/cache.py` changes often: it was edited in several sessions.",
    ]
    assert {(source, ref) for _, source, ref, _ in stored} == {("tool", "project:acme/api")}
    # Each is its kind's roll (capture/pattern_rolls.py), from the session of its latest command.
    assert f"session:{SESSION}" in stored[0][3] and "session:second-session" in stored[-1][3]
    assert all(sum(tag.startswith("roll:") for tag in tags) == 1 for *_, tags in stored)
    assert all(row["processed_at"] is not None for row in rows(home))

    # Running again stores nothing new; nor does reprocessing everything from scratch (the texts are
    # derived deterministically, and the store keeps one copy of a text).
    again = process_pending(get_settings())
    assert (again.tool_events, again.patterns_stored) == (0, 0)
    with sqlite3.connect(home / "spool.db") as conn:
        conn.execute("DELETE FROM emitted")
        conn.execute("UPDATE tool_events SET processed_at = NULL")
    replay = process_pending(get_settings())
    assert (replay.tool_events, replay.patterns_stored) == (8, 0)
    assert patterns(capture_env["CEMS_USER"]) == stored



def test_a_projects_test_commands_make_one_memory_whatever_their_variants(capture_env, tmp_path):
    """58 memories of "the tests run with …" in one project crowded every question about its tests: a kind
    of command is one memory naming the project's commands, a variant with more words being the command."""
    home = Path(capture_env["CEMS_HOME"])
    cwd = git_project(tmp_path / "acme-api")
    other = git_project(tmp_path / "acme-web", remote="git@github.com:acme/web.git")
    events = [
        bash_event("t1", "npm run test:e2e -- --reporter=line", PYTEST_PASSED, cwd=cwd),
        bash_event("t2", "npm test", PYTEST_PASSED, cwd=cwd),
        bash_event("t3", "npm test", PYTEST_PASSED, cwd=other),
        bash_event("t4", "npm run test:e2e", PYTEST_PASSED, cwd=cwd, session="second-session"),
        bash_event("t5", "npm run test:e2e -- --headed", PYTEST_PASSED, cwd=cwd, session="second-session"),
        bash_event("t6", "npm run test:e2e:ui", PYTEST_PASSED, cwd=cwd, session="second-session"),
    ]
    for event in events:
        assert_silent(run_hook(home, event))
    from cems_cli.config import get_settings

    process_pending(get_settings())
    stored = patterns(capture_env["CEMS_USER"])
    assert sorted(content for content, *_ in stored) == [
        "In project acme/api the tests run with `npm run test:e2e`, `npm test` or `npm run test:e2e:ui`.",
        "In project acme/web the tests run with `npm test`.",
    ]
    # Nothing new when the same commands run again.
    assert_silent(run_hook(home, bash_event("t7", "npm test", PYTEST_PASSED, cwd=cwd, session="third")))
    process_pending(get_settings())
    assert sorted(content for content, *_ in patterns(capture_env["CEMS_USER"])) == sorted(
        content for content, *_ in stored)

def test_a_forgotten_pattern_is_not_stored_again(capture_env, tmp_path, cli):
    home = Path(capture_env["CEMS_HOME"])
    cwd = git_project(tmp_path / "acme-api")
    assert_silent(run_hook(home, bash_event("u1", "ruff check .", "All checks passed!", cwd=cwd)))
    from cems_cli.config import get_settings

    assert process_pending(get_settings()).patterns_stored == 1
    memory_id = cli("list", "--category", "patterns", "--json").json()["memories"][0]["id"]
    assert cli("forget", memory_id).code == 0
    assert_silent(run_hook(home, bash_event("u2", "ruff check .", "All checks passed!", cwd=cwd)))
    assert process_pending(get_settings()).patterns_stored == 0
    assert patterns(capture_env["CEMS_USER"]) == []


def test_a_second_worker_leaves_the_work_to_the_first(capture_env):
    import fcntl

    from cems_cli.config import get_settings

    home = Path(capture_env["CEMS_HOME"])
    assert_silent(run_hook(home, bash_event("v1", "ls", "a b")))
    with open(home / "capture.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        summary = process_pending(get_settings())
    assert summary.busy and summary.tool_events == 0
    assert rows(home)[0]["processed_at"] is None
    assert process_pending(get_settings()).tool_events == 1
