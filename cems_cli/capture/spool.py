"""The capture spool: a local SQLite file where hooks drop events and the capture worker picks them up.

Hooks write here instead of the database because they must return within tens of milliseconds, long
before PostgreSQL, the embedding model or an LLM could be reached. So this module is stdlib only and cheap
to import: no `typing`, no `dataclasses`, no `json`, no `sqlite3.dbapi2`, and the redaction module only when
a text may hold something to redact (see `may_need_redaction`).

Guarantees:
* Never lost: WAL, each insert its own transaction, committed before the hook exits. With
  `synchronous=NORMAL` a committed row survives the crash of any process (the hook, Claude Code, the
  worker) and the file is never corrupted; the last connection to close (normally the hook itself)
  checkpoints the WAL with fsyncs, so the row is on disk when the hook returns. Only while another process
  holds the spool open may the newest rows wait in the OS cache for the worker's checkpoint (a power cut
  then could lose them). FULL would close that gap for one more fsync per tool call (8 ms measured here).
* Never twice: a tool event's key is its `tool_use_id` (PRIMARY KEY, INSERT OR IGNORE), a turn's key is
  derived from its Stop payload, so a replayed hook stores nothing new.
* Nothing private: every text goes through `clip` before it is written: `<private>` blocks dropped,
  secrets redacted, huge values cut to head and tail. No caller can put raw payload text in the file.
* Readable only by its owner: the folder is created 0700 and the file 0600 (SQLite gives its -wal/-shm
  files the database file's permissions).
"""

from __future__ import annotations

import os
import time

from cems_cli.hookio import cems_home, json_dumps

try:  # sqlite3's C core: skips `sqlite3.dbapi2` and the datetime import it brings (~5 ms per hook)
    from _sqlite3 import connect as _sqlite_connect
except ImportError:  # pragma: no cover - not CPython
    from sqlite3 import connect as _sqlite_connect

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable
    from typing import Any

SPOOL_FILE = "spool.db"
LOCK_FILE = "capture.lock"  # held by the one running capture worker (see capture.worker)
SCHEMA_VERSION = 2
BUSY_TIMEOUT_SECONDS = 10.0
MAX_ATTEMPTS = 3  # a turn that fails this often for a reason of its own is set aside as "failed"

# Characters redacted beyond a cut point, so a secret that straddles the cut is still seen whole.
_MARGIN = 512
_WHITESPACE = " \t\n\r"
_KEY_LIMIT = 100
_MAX_DEPTH = 6
_MAX_ITEMS = 50
# Dict keys whose string value is judged with the key in view (`"DB_PASSWORD": "hunter2"` is a secret,
# although "hunter2" alone is not). A cheap lowercase substring test before the real check.
_SECRETISH = ("secret", "token", "pass", "pwd", "key", "cred", "auth")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tool_events (
        tool_use_id  TEXT PRIMARY KEY,
        session_id   TEXT NOT NULL,
        event        TEXT NOT NULL,
        tool_name    TEXT NOT NULL,
        cwd          TEXT,
        agent_id     TEXT,
        received_at  REAL NOT NULL,
        data         TEXT NOT NULL,
        project      TEXT,
        processed_at REAL
    )""",
    "CREATE INDEX IF NOT EXISTS tool_events_pending ON tool_events (received_at) WHERE processed_at IS NULL",
    "CREATE INDEX IF NOT EXISTS tool_events_project ON tool_events (project, received_at)",
    """CREATE TABLE IF NOT EXISTS turns (
        turn_key        TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL,
        transcript_path TEXT,
        cwd             TEXT,
        last_message    TEXT NOT NULL,
        end_offset      INTEGER,
        received_at     REAL NOT NULL,
        processed_at    REAL,
        outcome         TEXT,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS turns_pending ON turns (received_at) WHERE processed_at IS NULL",
    """CREATE TABLE IF NOT EXISTS emitted (
        key        TEXT PRIMARY KEY,
        memory_id  TEXT,
        emitted_at REAL NOT NULL
    )""",
)
# What a spool of an older version needs beyond `_SCHEMA`, by the version that brings it.
_MIGRATIONS = {
    # The capture engine keeps its own transcript offsets (in PostgreSQL, with the memories it stores);
    # the spool's were never written.
    2: ("DROP TABLE IF EXISTS transcript_offsets",),
}


class _Row:
    """A light record (a namedtuple class costs ~4 ms to create, too much for a hook)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)


class ToolEventRow(_Row):
    """A spooled tool event; `data` is the clipped, redacted JSON object the hook stored."""

    __slots__ = tuple("tool_use_id session_id event tool_name cwd agent_id received_at data project".split())
    tool_use_id: str
    session_id: str
    event: str
    tool_name: str
    cwd: str | None
    agent_id: str | None
    received_at: float
    data: dict[str, Any]
    project: str | None


class TurnRow(_Row):
    """A turn recorded by the Stop hook."""

    __slots__ = tuple(
        "turn_key session_id transcript_path cwd last_message end_offset received_at attempts".split()
    )
    turn_key: str
    session_id: str
    transcript_path: str | None
    cwd: str | None
    last_message: str
    end_offset: int | None
    received_at: float
    attempts: int


_TOOL_COLUMNS = "tool_use_id, session_id, event, tool_name, cwd, agent_id, received_at, data, project"
_TURN_COLUMNS = "turn_key, session_id, transcript_path, cwd, last_message, end_offset, received_at, attempts"


# --- opening --------------------------------------------------------------------------------------------


def spool_path(home: str | None = None) -> str:
    return os.path.join(home or cems_home(), SPOOL_FILE)


def connect(path: str | None = None, *, timeout: float = BUSY_TIMEOUT_SECONDS) -> sqlite3.Connection:
    """Open (and on first use create) the spool. Autocommit: each statement is its own transaction unless
    the caller opens one with `transaction(conn)`."""
    path = path or spool_path()
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        fresh = os.path.getsize(path) == 0  # an empty file: left by a crash, or made by `touch`
    except FileNotFoundError:
        fresh = True
    if fresh:
        _create_file(path)
    conn = _sqlite_connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            _upgrade_schema(conn, path)
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _create_file(path: str) -> None:
    """Build the spool, schema and WAL mode included, in a file of this process's own, then put it in place
    whole; when several hooks start together on a new CEMS_HOME, the first to link wins and the others use
    its file.

    Why not let SQLite create it in place: a connection that opens a zero-byte database deletes the -wal
    file beside it, although another process may have just committed the schema and its first rows there
    (8 hooks starting together lost a third of their events so), and `PRAGMA journal_mode=WAL` answers
    "database is locked" at once, without waiting the busy timeout, while another connection holds the file.
    """
    temporary = f"{path}.{os.getpid()}.new"
    try:
        # Created owner-only before SQLite opens it with the umask's permissions (its -wal/-shm copy them).
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        conn = _sqlite_connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # stored in the file: every later connection uses it
            _create_tables(conn)
        finally:
            conn.close()  # the last connection: checkpoints the WAL into the file and removes it
        try:
            os.link(temporary, path)
        except FileExistsError:
            if os.path.getsize(path) == 0:  # an empty file from a crash: replaced (linking would fail)
                os.replace(temporary, path)
    finally:
        for leftover in (temporary, temporary + "-wal", temporary + "-shm"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def _upgrade_schema(conn: sqlite3.Connection, path: str) -> None:
    """Bring an existing spool up to SCHEMA_VERSION, one process at a time: they queue on an exclusive flock
    of the file, which SQLite's own fcntl locks ignore. Only an upgrade pays for the lock."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:  # else another process did
            _create_tables(conn)
    finally:
        os.close(fd)  # releases the flock


def _create_tables(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:  # else another process won
            for statement in _SCHEMA:
                conn.execute(statement)
            if version:  # a new spool has nothing to migrate
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in _MIGRATIONS.get(step, ()):
                        conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class transaction:  # noqa: N801 - used like a function: `with transaction(conn):`
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")


# --- making text safe to keep ---------------------------------------------------------------------------


def _storable(text: str) -> str:
    """Lone surrogates (JSON "\\ud800" escapes decode to them) cannot be encoded as UTF-8: replace them."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def _head(text: str, limit: int) -> str:
    """At most `limit` characters from the start, ending at whitespace: the text went on past the end,
    so the last word may be a fragment (of a secret, even) and is dropped."""
    cut = text[: limit + 1]
    end = max(cut.rfind(ch) for ch in _WHITESPACE)
    return cut[:end].rstrip() if end > 0 else ""


def _tail(text: str, limit: int) -> str:
    """At most `limit` characters from the end, starting after whitespace (see `_head`)."""
    cut = text[-(limit + 1) :]
    starts = [i for i in (cut.find(ch) for ch in _WHITESPACE) if i >= 0]
    return cut[min(starts) + 1 :].lstrip() if starts else ""


# When may redaction change a text? Every secret `redact_secrets` recognises contains one of these lowercase
# substrings (and `<private>` contains "private"): a shape of its own, a client with its password option
# (`mysql … -p…`, `curl … -u …`), or a secret-ish name followed by a separator (`KEY=…`, `"token": …`,
# `--password …`, `Authorization: …`, `X-Api-Key: …`). ASCII text without any comes out of redaction
# unchanged, so the hook need not import the redaction module, whose ~45 regular expressions take 10–30 ms
# to compile: a third of the hook's budget, spent on every `ls`. Written for the shapes in REDACTION_KINDS;
# tests/unit/test_tool_patterns.py fails when redact.py gains a shape not listed there, and
# tests/unit/test_redact_shortcut.py when a shape's gate is missing here.
_SHAPE_TRIGGERS = tuple(
    "private :// akia asia github_pat_ sk- k_live_ k_test_ xox aiza eyj hooks.slack.com discord cookie hf_ "
    "api_org_ npm_ sg. hvs. hvb. dapi pypi-age _v1_ ya29. gocspx- xapp- whsec_ lin_api_ ntn_ tt3 atbb pmak- "
    "age-secret-key-1 sig= signature= security-token=".split()
)
# Triggers sharing a prefix are looked for only when the prefix is there: one search instead of a dozen for
# the text that has none (each search over a 10 KB output costs ~5 µs).
_GROUPED_TRIGGERS = (
    ("gh", tuple("ghp_ gho_ ghu_ ghs_ ghr_".split())),
    ("gl", tuple(
        "glpat- gldt- glptt- glrt- gloas- glcbt- glsoat- glffct- glagent- glimt- glft- glsa_ glc_".split()
    )),
    ("shp", tuple("shpat_ shpca_ shppa_ shpss_".split())),
)
# Short prefixes that are everywhere in prose ("task", "key-value") count only with the hex digits after them
# that the shapes need: Twilio's SK and Mailgun's key- take 32. Their patterns are case-sensitive, so these
# are looked for in the text as it is (an uppercase SK is rare), not lowercased.
_HEX_TAILED = (("SK", 32), ("key-", 32))
_HEX_DIGITS = "0123456789abcdefABCDEF"
# Clients (and other words) whose password redaction knows, each with the option spellings (lowercased) one
# of which its redaction needs: `test_login PASSED` names no `docker login -p`, `sudo -v` reads no stdin.
_COMMAND_TRIGGERS = (
    ("mysql", ("-p",)), ("mariadb", ("-p",)), ("sshpass", ("-p",)), ("login", ("-p",)),
    ("curl", ("-u", "-b", "--cookie")), ("redis-cli", ("-a", "-p")), ("ldap", ("-w",)),
    ("openssl", ("pass:", "-k")), ("htpasswd", ("b",)), ("zip", ("-p",)), ("7z", ("-p",)), ("smb", ("%",)),
    ("rpcclient", ("%",)), ("sudo", ("-s", "--stdin")),
    ("machine", ("password",)), ("default", ("password",)),  # .netrc
)
_NAME_TRIGGERS = tuple("secret token pass pwd key cred auth".split())
# What may follow a secret-ish word before the separator in the patterns of redact.py: at most 40 more key
# characters (`pass` + `word`), a quote closing a quoted key, at most 64 blanks. Checked in a window of 128.
_KEY_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"
_KEY_TAIL = 40
_QUOTES = "\"'`"
_FLAG_CHARS = "abcdefghijklmnopqrstuvwxyz-"
_WORD_OR_DASH = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# "my password for the db is …": redact.py allows `for` and three words of at most 64 characters between.
_SAID_WINDOW = 300
REDACTION_KINDS = frozenset(
    "private_key password bearer aws_access_key aws_secret_key github_token anthropic_key openai_key "
    "stripe_key slack_token google_api_key jwt slack_webhook discord_webhook api_key cookie gitlab_token "
    "huggingface_token npm_token sendgrid_key vault_token databricks_token shopify_token pypi_token "
    "digitalocean_token google_oauth_token google_client_secret grafana_token linear_key notion_token "
    "atlassian_token postman_key twilio_key mailgun_key age_secret_key telegram_bot_token signature "
    "secret".split()
)


def may_need_redaction(text: str) -> bool:
    """False only when `sanitize_for_storage(text)` is certain to return `text` unchanged. Non-ASCII text
    always says True: Unicode case folding could match the patterns in ways `str.lower` does not show."""
    if not text.isascii():
        return True
    lowered = text.lower()
    if any(trigger in lowered for trigger in _SHAPE_TRIGGERS):
        return True
    for prefix, group in _GROUPED_TRIGGERS:
        if prefix in lowered and any(trigger in lowered for trigger in group):
            return True
    if any(name in lowered and any(option in lowered for option in options)
           for name, options in _COMMAND_TRIGGERS):
        return True
    if any(_hex_follows(text, prefix, length) for prefix, length in _HEX_TAILED):
        return True
    return (_names_a_value(lowered) or _flags_a_value(lowered) or _says_a_password(lowered)
            or _bot_token_colon(text))


def _hex_follows(text: str, prefix: str, length: int) -> bool:
    found = text.find(prefix)
    while found >= 0:
        start = found + len(prefix)
        tail = text[start : start + length]
        if len(tail) == length and not tail.strip(_HEX_DIGITS):
            return True
        found = text.find(prefix, found + 1)
    return False


# The words redact.py's "password is …" pattern starts with (pytest's PASSED is none of them).
_SAID_WORDS = ("password", "passphrase", "passcode", "passwd")


def _says_a_password(lowered: str) -> bool:
    """"password is …": one of the words, then ` is` or ` was` later on its line (within redact.py's
    bound)."""
    for word in _SAID_WORDS:
        found = lowered.find(word)
        while found >= 0:
            end = lowered.find("\n", found, found + _SAID_WINDOW)
            window = lowered[found : end if end >= 0 else found + _SAID_WINDOW]
            if any(verb in window for verb in (" is", "\tis", " was", "\twas")):
                return True
            found = lowered.find(word, found + len(word))
    return False


_TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


def _bot_token_colon(text: str) -> bool:
    """A Telegram bot token (case-sensitive, like its pattern): at least 5 digits (the bot's id), `:A` and 34
    token characters (`file.py:12:assert` in grep output is not one)."""
    found = text.find(":A")
    while found >= 0:
        tail = text[found + 2 : found + 36]
        bot_id = text[found - 5 : found] if found >= 5 else ""
        if bot_id.isdigit() and len(tail) == 34 and not tail.strip(_TOKEN_CHARS):
            return True
        found = text.find(":A", found + 2)
    return False


def _names_a_value(lowered: str) -> bool:
    """A secret-ish word, then key characters, a quote, blanks and `:`, `=` or `>`: every assignment, header
    and markup element redaction recognises looks so (`DB_PASSWORD=`, `"api_key": `, `Authorization:`,
    `<password>`). Pytest's `PASSED` and prose do not, which spares most outputs the import. Slices and
    `lstrip` keep each occurrence's check short and in C."""
    for name in _NAME_TRIGGERS:
        found = lowered.find(name)
        while found >= 0:
            after = found + len(name)
            window = lowered[after : after + 128]
            rest = window.lstrip(_KEY_CHARS)
            if len(window) - len(rest) <= _KEY_TAIL:
                if rest[:1] and rest[0] in _QUOTES:
                    rest = rest[1:]
                if rest.lstrip(" \t")[:1] in ("=", ":", ">"):  # `>`: `<password>…</password>`
                    return True
            found = lowered.find(name, after)
    return False


def _flags_a_value(lowered: str) -> bool:
    """`--password x`, `--db-token x`: an option starting a word whose dashed words include a secret-ish one
    (redact.py's flag pattern spans at most 6 words of 30 letters after the `--`)."""
    found = lowered.find("--")
    while found >= 0:
        if found and lowered[found - 1] in _WORD_OR_DASH:
            found = lowered.find("--", found + 1)  # inside a word or a run of dashes: not an option start
            continue
        window = lowered[found + 2 : found + 202]
        run = window[: len(window) - len(window.lstrip(_FLAG_CHARS))]
        if any(name in run for name in _NAME_TRIGGERS):
            return True
        found = lowered.find("--", found + 2 + len(run))
    return False


def _redact(text: str) -> str:
    if not may_need_redaction(text):
        return text
    from cems_cli.text.redact import redact_secrets

    return redact_secrets(text)


def _strip_private(text: str) -> str:
    # Only a `<private` tag changes anything here; ASCII text without "private" skips the scan of every
    # trigger (the whole of a megabyte output passes through here, not just the clipped windows).
    if "<" not in text or (text.isascii() and "private" not in text.lower()):
        return text
    from cems_cli.text.redact import strip_private

    return strip_private(text)


def clip(text: str, limit: int, tail: int = 0) -> str:
    """`text` as the spool may keep it: no `<private>` blocks, secrets redacted, and when longer than
    `limit + tail` characters, its first `limit` and last `tail` characters around a cut marker.

    `<private>` is stripped from the whole text first (one scan for tags), because a block may open in the
    head and close in the tail. Secrets are redacted only in the windows kept, plus a margin, so megabytes of
    output cost no more than a few kilobytes; the windows end at whitespace, so a secret cut in half by the
    window is dropped rather than kept in part.
    """
    if not text:
        return ""
    text = _strip_private(text)
    if len(text) <= limit + tail:
        return _storable(_redact(text))
    head = _head(_redact(text[: limit + _MARGIN]), limit)
    end = _tail(_redact(text[-(tail + _MARGIN) :]), tail) if tail else ""
    marker = f"[… {len(text)} characters, cut here …]"
    return _storable("\n".join(part for part in (head, marker, end) if part))


def _key_context_secret(key: str, value: str) -> bool:
    """True when `key: value` reads as a secret assignment though the value alone does not."""
    lowered = key.lower()
    if not any(word in lowered for word in _SECRETISH):
        return False
    probe = f"{key}={json_dumps(value)}"
    return _redact(probe) != probe


def clip_tree(
    value: Any,
    limits: dict[str, tuple[int, int]] | None = None,
    default: int = 2000,
    drop: frozenset[str] = frozenset(),
    _depth: int = 0,
) -> Any:
    """A JSON value with every string clipped (`limits[key]` = (head, tail) for the value under a key),
    keys in `drop` removed, lists and objects capped at 50 items, nesting capped at 6 levels."""
    limits = limits or {}
    if isinstance(value, str):
        return clip(value, default)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)  # NaN and infinity parse from a payload but are not JSON to write back
    if value is None or isinstance(value, bool | int | float):
        return value
    if _depth >= _MAX_DEPTH:
        return "[… nested too deep]"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= _MAX_ITEMS:
                out["…"] = f"{len(value) - _MAX_ITEMS} more keys"
                break
            key = clip(str(key), _KEY_LIMIT)
            if key in drop:
                continue
            if isinstance(item, str):
                head, tail = limits.get(key, (default, 0))
                cleaned = clip(item, head, tail)
                out[key] = "[REDACTED:secret]" if cleaned and _key_context_secret(key, cleaned) else cleaned
            else:
                out[key] = clip_tree(item, limits, default, drop, _depth + 1)
        return out
    if isinstance(value, list | tuple):
        items = [clip_tree(item, limits, default, drop, _depth + 1) for item in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            items.append(f"[… {len(value) - _MAX_ITEMS} more items]")
        return items
    return clip(str(value), default)


# --- what the hooks write -------------------------------------------------------------------------------


def add_tool_event(
    conn: sqlite3.Connection,
    *,
    tool_use_id: str,
    session_id: str,
    event: str,
    tool_name: str,
    cwd: str | None,
    agent_id: str | None,
    data: dict[str, Any],
    limits: dict[str, tuple[int, int]] | None = None,
    drop: frozenset[str] = frozenset(),
) -> bool:
    """Store one tool event (its `data` clipped by `clip_tree`); False when that id was already stored."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO tool_events "
        "(tool_use_id, session_id, event, tool_name, cwd, agent_id, received_at, data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            _storable(tool_use_id[:200]),
            _storable(session_id[:200]),
            _storable(event[:100]),
            _storable(tool_name[:200]),
            _storable(cwd) if cwd else None,
            _storable(agent_id[:200]) if agent_id else None,
            time.time(),
            json_dumps(clip_tree(data, limits, drop=drop)),  # ASCII-only JSON
        ),
    )
    return cursor.rowcount == 1


def add_turn(
    conn: sqlite3.Connection,
    *,
    turn_key: str,
    session_id: str,
    transcript_path: str | None,
    cwd: str | None,
    last_message: str,
    end_offset: int | None,
    message_limit: int = 6000,
) -> bool:
    """Record a finished turn for the worker; False when this turn was already recorded."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO turns "
        "(turn_key, session_id, transcript_path, cwd, last_message, end_offset, received_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            turn_key,
            _storable(session_id[:200]),
            _storable(transcript_path) if transcript_path else None,
            _storable(cwd) if cwd else None,
            clip(last_message, message_limit),
            end_offset,
            time.time(),
        ),
    )
    return cursor.rowcount == 1


# --- what the worker reads and marks --------------------------------------------------------------------


def has_pending(conn: sqlite3.Connection, skip_turns: Iterable[str] = ()) -> bool:
    """Is there work: a tool event not processed, or a pending turn not in `skip_turns` (the turns a
    worker already failed on in this run, so it does not loop on them)?"""
    if conn.execute("SELECT EXISTS (SELECT 1 FROM tool_events WHERE processed_at IS NULL)").fetchone()[0]:
        return True
    skip = set(skip_turns)
    rows = conn.execute(
        "SELECT turn_key FROM turns WHERE processed_at IS NULL LIMIT ?", (len(skip) + 1,)
    ).fetchall()
    return any(row[0] not in skip for row in rows)


def _tool_row(row: tuple) -> ToolEventRow:
    import json

    try:
        data = json.loads(row[7])
    except ValueError:
        data = {}
    return ToolEventRow(*row[:7], data if isinstance(data, dict) else {}, row[8])


def pending_tool_events(conn: sqlite3.Connection, limit: int = 500) -> list[ToolEventRow]:
    rows = conn.execute(
        f"SELECT {_TOOL_COLUMNS} FROM tool_events WHERE processed_at IS NULL "
        "ORDER BY received_at, rowid LIMIT ?",
        (limit,),
    ).fetchall()
    return [_tool_row(row) for row in rows]


def set_projects(conn: sqlite3.Connection, assignments: Iterable[tuple[str, str]]) -> None:
    """Record (tool_use_id, project) pairs: the worker resolves projects, the hook has no time to."""
    with transaction(conn):
        conn.executemany(
            "UPDATE tool_events SET project = ? WHERE tool_use_id = ?",
            [(project, tool_use_id) for tool_use_id, project in assignments],
        )


def project_tool_events(conn: sqlite3.Connection, project: str, limit: int = 2000) -> list[ToolEventRow]:
    """The project's most recent `limit` events, processed or not, oldest first."""
    rows = conn.execute(
        f"SELECT {_TOOL_COLUMNS} FROM (SELECT rowid AS r, * FROM tool_events WHERE project = ? "
        "ORDER BY received_at DESC, rowid DESC LIMIT ?) ORDER BY received_at, r",
        (project, limit),
    ).fetchall()
    return [_tool_row(row) for row in rows]


def mark_tool_events_done(conn: sqlite3.Connection, tool_use_ids: Iterable[str]) -> None:
    now = time.time()
    with transaction(conn):
        conn.executemany(
            "UPDATE tool_events SET processed_at = ? WHERE tool_use_id = ?",
            [(now, tool_use_id) for tool_use_id in tool_use_ids],
        )


def emitted_keys(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    wanted = list(keys)
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        marks = ",".join("?" * len(batch))
        found.update(row[0] for row in conn.execute(f"SELECT key FROM emitted WHERE key IN ({marks})", batch))
    return found


def mark_emitted(conn: sqlite3.Connection, key: str, memory_id: str | None) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO emitted (key, memory_id, emitted_at) VALUES (?, ?, ?)",
        (key, memory_id, time.time()),
    )


def pending_turns(conn: sqlite3.Connection, limit: int = 50) -> list[TurnRow]:
    rows = conn.execute(
        f"SELECT {_TURN_COLUMNS} FROM turns WHERE processed_at IS NULL ORDER BY received_at, rowid LIMIT ?",
        (limit,),
    ).fetchall()
    return [TurnRow(*row) for row in rows]


def finish_turn(conn: sqlite3.Connection, turn_key: str, outcome: str) -> None:
    """Mark a turn done (the capture engine committed where it read the transcript up to)."""
    conn.execute(
        "UPDATE turns SET processed_at = ?, outcome = ? WHERE turn_key = ?", (time.time(), outcome, turn_key)
    )


def turn_failed(conn: sqlite3.Connection, turn_key: str, error: str) -> bool:
    """Count a failed attempt; after MAX_ATTEMPTS the turn is set aside (outcome "failed"). True if so."""
    now = time.time()
    with transaction(conn):
        conn.execute(
            "UPDATE turns SET attempts = attempts + 1, last_error = ? WHERE turn_key = ?",
            (error[:2000], turn_key),
        )
        cursor = conn.execute(
            "UPDATE turns SET processed_at = ?, outcome = 'failed' WHERE turn_key = ? AND attempts >= ?",
            (now, turn_key, MAX_ATTEMPTS),
        )
    return cursor.rowcount == 1


def checkpoint(conn: sqlite3.Connection) -> None:
    """Move the WAL into the database file and truncate it (hooks exit without doing so, see
    hookhandlers.post_tool_use.main). Skipped silently while hooks hold it busy; the next run retries."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


def prune(conn: sqlite3.Connection, older_than_days: float = 60.0) -> int:
    """Forget processed events and turns older than the cut-off (their memories are stored); returns how
    many rows went. Emitted-statement keys are kept: they stop a pattern being stored again later."""
    cutoff = time.time() - older_than_days * 86400
    with transaction(conn):
        removed = conn.execute(
            "DELETE FROM tool_events WHERE processed_at IS NOT NULL AND received_at < ?", (cutoff,)
        ).rowcount
        removed += conn.execute(
            "DELETE FROM turns WHERE processed_at IS NOT NULL AND received_at < ?", (cutoff,)
        ).rowcount
    return removed
