"""The scenarios behind the session benchmark: projects, their sessions turn by turn, and the questions a
later session asks. `generate.py` renders them as Claude Code transcripts and questions.jsonl.

Writing a scenario: each session is what a developer and the agent did, in order; facts are established the
way they are in real work (the user states a preference, a decision is taken with its reason, a command
fails and a variant works, the agent runs the build and tests). Questions name the sessions that establish
their answer (`evidence`) and the keywords the recalled text must contain (`facts`: every keyword of a fact,
case-insensitively, as whole words); `distractors` are keywords of a superseded answer or of another project,
which a good recall leaves out. A question with no facts is one nothing earlier answers: whatever is
recalled for it is noise.
"""

# ruff: noqa: E501 - tool outputs and messages are kept whole, as they read in a terminal

from __future__ import annotations

from dataclasses import dataclass, field

# --------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Say:
    """Assistant text (the last one of a turn is its answer)."""

    text: str


@dataclass(frozen=True)
class Think:
    text: str


@dataclass(frozen=True)
class Bash:
    command: str
    output: str
    error: bool = False
    exit_code: int = 1
    description: str = ""
    seconds: float = 0.0  # how long it ran (default: a second or two)


@dataclass(frozen=True)
class Blocked:
    """A Bash call that a PreToolUse rule denied (it did not run)."""

    command: str
    reason: str
    description: str = ""


@dataclass(frozen=True)
class Refused:
    """A Bash call the user refused at the permission prompt; the turn ends there (interrupted)."""

    command: str
    description: str = ""


@dataclass(frozen=True)
class Edit:
    path: str  # relative to the project's cwd
    old: str
    new: str
    before: str = ""  # the whole file before the edit (default: just `old`)


@dataclass(frozen=True)
class Write:
    path: str
    content: str


@dataclass(frozen=True)
class Read:
    path: str
    content: str


@dataclass(frozen=True)
class Grep:
    pattern: str
    output: str
    path: str = ""


Step = Say | Think | Bash | Blocked | Refused | Edit | Write | Read | Grep


@dataclass(frozen=True)
class Turn:
    prompt: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Session:
    key: str  # unique across projects, cited by questions
    start: str  # ISO time (UTC) of the first line
    branch: str
    turns: tuple[Turn, ...]
    permission_mode: str = "default"
    clear_first: bool = False  # the session starts with /clear


@dataclass(frozen=True)
class Question:
    text: str
    category: str  # preference, decision, superseded, learning, pattern, rule, context, none
    facts: tuple[tuple[str, ...], ...]
    evidence: tuple[str, ...] = ()
    distractors: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Project:
    name: str
    cwd: str
    version: str  # the Claude Code version that wrote the transcripts
    model: str
    asked_at: str  # when the later session asks the questions
    sessions: tuple[Session, ...] = field(default_factory=tuple)
    questions: tuple[Question, ...] = field(default_factory=tuple)


def T(prompt: str, *steps: Step) -> Turn:  # noqa: N802 - reads like the data it builds
    return Turn(prompt, steps)


def Q(text: str, category: str, facts: list[list[str]], evidence: list[str],  # noqa: N802
      distractors: list[list[str]] | None = None) -> Question:
    return Question(text, category, tuple(tuple(f) for f in facts), tuple(evidence),
                    tuple(tuple(d) for d in distractors or []))


# --------------------------------------------------------------------------- tool output helpers


def pytest_ok(passed: int, seconds: float, *, skipped: int = 0, deselected: int = 0) -> str:
    dots = "." * min(passed, 60)
    extra = (f", {skipped} skipped" if skipped else "") + (f", {deselected} deselected" if deselected else "")
    return f"{dots}{' ' * (61 - len(dots))}[100%]\n{passed} passed{extra} in {seconds:.2f}s"


def vitest_ok(files: int, tests: int, seconds: float) -> str:
    return (f"\n RUN  v2.1.8 /home/dev/code/storefront-web\n\n"
            f" ✓ src/store/cart.test.ts (12 tests) 31ms\n ✓ src/lib/price.test.ts (18 tests) 9ms\n"
            f" ✓ src/components/ProductCard.test.tsx (7 tests) 112ms\n\n"
            f" Test Files  {files} passed ({files})\n      Tests  {tests} passed ({tests})\n"
            f"   Start at  10:14:03\n   Duration  {seconds:.2f}s (transform 1.21s, setup 0.88s, collect 4.02s, "
            f"tests 2.31s, environment 3.90s, prepare 1.12s)")


def go_ok(*packages: str, module: str = "github.com/acme/ingest-gateway") -> str:
    timings = [0.412, 0.118, 1.306, 0.057, 0.733, 0.091]
    return "\n".join(f"ok  \t{module}/{p}\t{timings[i % len(timings)]:.3f}s" for i, p in enumerate(packages))


# =========================================================================== ledger-api (Python API)

LEDGER = "/home/dev/code/ledger-api"

LEDGER_PYPROJECT = """[project]
name = "ledger-api"
version = "0.9.0"
requires-python = ">=3.12"
dependencies = [
    "fastapi>=0.115",
    "sqlalchemy>=2.0",
    "psycopg[binary]>=3.2",
    "alembic>=1.13",
    "pydantic-settings>=2.4",
]

[dependency-groups]
dev = ["pytest>=8.3", "ruff>=0.7", "mypy>=1.13"]

[tool.pytest.ini_options]
markers = ["integration: needs the Postgres container (docker compose up -d postgres)"]
addopts = "-m 'not integration'\""""

LEDGER_SESSIONS = (
    Session("ledger-1", "2026-09-02T08:41:12", "main", (
        T("Set up the dev environment for ledger-api and make sure the tests pass. Always use uv for "
          "dependencies in this repo, never pip install into the venv directly.",
          Say("I'll look at the project configuration first."),
          Read("pyproject.toml", LEDGER_PYPROJECT),
          Bash("uv sync", "Using CPython 3.12.7\nCreating virtual environment at: .venv\nResolved 48 packages "
               "in 312ms\nPrepared 46 packages in 2.41s\nInstalled 46 packages in 1.02s\n + alembic==1.14.0\n"
               " + fastapi==0.115.6\n + sqlalchemy==2.0.36\n + psycopg==3.2.3", seconds=4.2,
               description="Install dependencies with uv"),
          Bash("uv run pytest -q", "ImportError while loading conftest '/home/dev/code/ledger-api/tests/"
               "conftest.py'.\ntests/conftest.py:6: in <module>\n    from ledger.app import create_app\n"
               "E   ModuleNotFoundError: No module named 'ledger'", error=True, exit_code=4,
               description="Run the test suite"),
          Say("pytest does not put `src/` on the import path. I'll add it in the pytest settings."),
          Edit("pyproject.toml", "addopts = \"-m 'not integration'\"",
               "addopts = \"-m 'not integration'\"\npythonpath = [\"src\"]", before=LEDGER_PYPROJECT),
          Bash("uv run pytest -q", pytest_ok(118, 3.92, deselected=24), seconds=5.1,
               description="Run the test suite again"),
          Say("The environment is ready: `uv sync` created `.venv` with all 46 packages. The first test run "
              "failed with `ModuleNotFoundError: No module named 'ledger'` because pytest did not see the "
              "`src/` layout; I added `pythonpath = [\"src\"]` to `[tool.pytest.ini_options]` and all 118 "
              "unit tests pass (24 integration tests are deselected by default)."),
          ),
        T("Add httpx as a dev dependency, the API client tests need it.",
          Bash("uv add --dev httpx", "Resolved 51 packages in 288ms\nPrepared 3 packages in 141ms\n"
               "Installed 3 packages in 9ms\n + anyio==4.7.0\n + httpcore==1.0.7\n + httpx==0.28.1",
               description="Add httpx to the dev group"),
          Say("Added `httpx` to the `dev` dependency group with `uv add --dev httpx`; uv.lock is updated."),
          ),
        T("What's the lint and type-check setup here?",
          Bash("uv run ruff check .", "All checks passed!", description="Lint"),
          Bash("uv run mypy src", "Success: no issues found in 41 source files", seconds=6.3,
               description="Type-check"),
          Say("Linting is ruff (`uv run ruff check .`) and type checking is mypy (`uv run mypy src`, strict "
              "mode from pyproject). Both are clean right now."),
          ),
    )),
    Session("ledger-2", "2026-09-08T13:05:40", "feat/session-store", (
        T("The admin login needs a server-side session store. We'll use Memcached for the session cache "
          "since the staging cluster already runs it.",
          Read("src/ledger/settings.py", "from pydantic_settings import BaseSettings\n\n\nclass Settings("
               "BaseSettings):\n    database_url: str\n    redis_url: str | None = None\n"),
          Bash("uv add pymemcache", "Resolved 52 packages in 301ms\nInstalled 1 package in 4ms\n"
               " + pymemcache==4.0.0", description="Add the memcached client"),
          Write("src/ledger/sessions.py", "from pymemcache.client.base import Client\n\nfrom ledger.settings "
                "import settings\n\n_client = Client(settings.memcached_url)\nSESSION_TTL = 8 * 3600\n\n\n"
                "def save(session_id: str, data: bytes) -> None:\n    _client.set(f\"sess:{session_id}\", data, "
                "expire=SESSION_TTL)\n"),
          Edit("src/ledger/settings.py", "    redis_url: str | None = None",
               "    redis_url: str | None = None\n    memcached_url: str = \"127.0.0.1:11211\""),
          Bash("uv run pytest -q", pytest_ok(121, 4.02, deselected=24), description="Run the tests"),
          Say("The session store is in `src/ledger/sessions.py`, backed by Memcached (`MEMCACHED_URL`, "
              "default 127.0.0.1:11211) with an 8 hour TTL. 121 tests pass."),
          ),
        T("Add tests for it. I prefer plain pytest fixtures over unittest-style setUp methods, please don't "
          "use unittest.TestCase in new tests.",
          Write("tests/test_sessions.py", "import pytest\n\nfrom ledger import sessions\n\n\n@pytest.fixture\n"
                "def fake_client(monkeypatch):\n    store = {}\n    ...\n"),
          Bash("uv run pytest -q tests/test_sessions.py", pytest_ok(6, 0.31), description="Run the new tests"),
          Say("Added `tests/test_sessions.py` with a `fake_client` fixture and six tests, no TestCase "
              "classes."),
          ),
    )),
    Session("ledger-3", "2026-09-15T09:22:03", "fix/migration-0008", (
        T("The deploy to staging failed on the database migration, can you look?",
          Bash("uv run alembic upgrade head", "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
               "INFO  [alembic.runtime.migration] Running upgrade 0006_accounts_index -> 0007_ledger_entries, "
               "ledger entries\nTraceback (most recent call last):\n  File \"/home/dev/code/ledger-api/.venv/"
               "lib/python3.12/site-packages/sqlalchemy/engine/base.py\", line 1967, in _exec_single_context\n"
               "    self.dialect.do_execute(\npsycopg.errors.DuplicateTable: relation \"ledger_entries\" already "
               "exists\n\nThe above exception was the direct cause of the following exception:\n\n"
               "sqlalchemy.exc.ProgrammingError: (psycopg.errors.DuplicateTable) relation \"ledger_entries\" "
               "already exists\n[SQL: CREATE TABLE ledger_entries (id BIGSERIAL NOT NULL, ...)]",
               error=True, description="Apply migrations against the staging tunnel"),
          Think("The table exists already, so someone created it by hand before 0007 ran. The schema matches "
                "0007, so stamping is safe."),
          Bash("uv run alembic current", "0006_accounts_index", description="Show the current revision"),
          Bash("psql \"$STAGING_DATABASE_URL\" -c '\\d ledger_entries'",
               "                Table \"public.ledger_entries\"\n   Column    |  Type   | Nullable\n"
               "-------------+---------+----------\n id          | bigint  | not null\n account_id  | bigint  "
               "| not null\n amount      | numeric | not null", description="Inspect the existing table"),
          Bash("uv run alembic stamp 0007_ledger_entries", "INFO  [alembic.runtime.migration] Context impl "
               "PostgresqlImpl.\nINFO  [alembic.runtime.migration] Running stamp_revision 0006_accounts_index "
               "-> 0007_ledger_entries", description="Mark 0007 as applied"),
          Bash("uv run alembic upgrade head", "INFO  [alembic.runtime.migration] Running upgrade "
               "0007_ledger_entries -> 0008_entry_currency, entry currency", description="Apply the rest"),
          Say("Fixed. Migration 0007 failed with `DuplicateTable: relation \"ledger_entries\" already exists`: "
              "the table had been created by hand on staging with the same schema. I ran `uv run alembic "
              "stamp 0007_ledger_entries` to mark it applied, then `uv run alembic upgrade head` applied 0008 "
              "cleanly."),
          ),
        T("While you're here, make the integration tests run against a real Postgres.",
          Bash("uv run pytest -m integration -q", "E   psycopg.OperationalError: connection failed: connection "
               "to server at \"127.0.0.1\", port 5433 failed: Connection refused\n\tIs the server running on "
               "that host and accepting TCP/IP connections?\n=========================== short test summary "
               "info ============================\nERROR tests/integration/test_entries.py - psycopg."
               "OperationalError: connection failed\n24 errors in 1.84s", error=True,
               description="Run the integration tests"),
          Bash("docker compose up -d postgres", " Network ledger-api_default  Created\n Container "
               "ledger-api-postgres-1  Started", seconds=3.4, description="Start the Postgres container"),
          Bash("uv run pytest -m integration -q", pytest_ok(24, 6.20, deselected=121), seconds=8.0,
               description="Run the integration tests again"),
          Say("The integration tests are marked `integration` and expect the compose Postgres on port 5433. "
              "Start it with `docker compose up -d postgres`, then run `uv run pytest -m integration`: all 24 "
              "pass."),
          ),
    )),
    Session("ledger-4", "2026-09-22T10:48:51", "feat/rate-limit", (
        T("Add per-API-key rate limiting to the public endpoints, 100 requests per minute.",
          Read("src/ledger/app.py", "from fastapi import FastAPI\n\nfrom ledger.api import v1\n\n\ndef "
               "create_app() -> FastAPI:\n    app = FastAPI(title=\"ledger\")\n    app.include_router(v1.router,"
               " prefix=\"/v1\")\n    return app\n"),
          Write("src/ledger/middleware/rate_limit.py", "import time\n\nfrom redis.asyncio import Redis\n"
                "from starlette.middleware.base import BaseHTTPMiddleware\n\nLIMIT = 100\nWINDOW = 60\n\n\n"
                "class RateLimitMiddleware(BaseHTTPMiddleware):\n    ...\n"),
          Edit("src/ledger/app.py", "    app = FastAPI(title=\"ledger\")",
               "    app = FastAPI(title=\"ledger\")\n    app.add_middleware(RateLimitMiddleware)"),
          Write("tests/test_rate_limit.py", "async def test_101st_request_is_rejected(client, api_key):\n"
                "    ...\n"),
          Bash("uv run pytest -q", pytest_ok(127, 4.18, deselected=24), description="Run the tests"),
          Say("Added `RateLimitMiddleware` in `src/ledger/middleware/rate_limit.py`: a fixed one-minute window "
              "per API key in Redis (INCR + EXPIRE), 100 requests, then 429 with Retry-After. It is "
              "registered in `create_app`; 127 tests pass."),
          ),
        T("Push the branch.",
          Bash("git push -u origin feat/rate-limit", "To github.com:acme/ledger-api.git\n * [new branch]      "
               "feat/rate-limit -> feat/rate-limit\nbranch 'feat/rate-limit' set up to track "
               "'origin/feat/rate-limit'.", description="Push the branch"),
          Say("Pushed `feat/rate-limit` to origin."),
          ),
        T("Actually squash it all and force push to main, the history is messy anyway.",
          Bash("git reset --soft origin/main && git commit -qm 'Rate limiting per API key'", "",
               description="Squash the branch into one commit"),
          Blocked("git push --force origin HEAD:main",
                  "force pushes to main rewrite shared history; open a pull request instead",
                  description="Force push to main"),
          Say("A rule blocks force pushes to main (they rewrite shared history), so I did not push. I "
              "squashed the work into one commit; I'll open a pull request instead."),
          Bash("gh pr create --fill --base main", "https://github.com/acme/ledger-api/pull/87",
               description="Open a pull request"),
          Say("Opened https://github.com/acme/ledger-api/pull/87 with the squashed commit."),
          ),
    )),
    Session("ledger-5", "2026-09-30T15:12:26", "feat/money-cents", (
        T("Amounts drift by a cent after currency conversion. Let's store amounts as integer cents instead "
          "of NUMERIC columns, because the float rounding in the converter keeps biting us.",
          Grep("float\\(", "src/ledger/fx/converter.py:31:    return round(float(amount) * rate, 2)\n"
               "src/ledger/api/v1/entries.py:58:        amount=float(body.amount),", path="src"),
          Edit("src/ledger/models.py", "    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))",
               "    amount_cents: Mapped[int] = mapped_column(BigInteger)"),
          Write("alembic/versions/0009_amount_cents.py", "\"\"\"amounts as integer cents\"\"\"\n\nrevision = "
                "\"0009_amount_cents\"\ndown_revision = \"0008_entry_currency\"\n"),
          Bash("uv run pytest -q", "FAILED tests/test_fx.py::test_convert_roundtrip - assert 1999 == 2000\n"
               "1 failed, 131 passed, 24 deselected in 4.40s", error=True, description="Run the tests"),
          Edit("src/ledger/fx/converter.py", "    return round(float(amount) * rate, 2)",
               "    return (amount_cents * rate_ppm + 500_000) // 1_000_000"),
          Bash("uv run pytest -q", pytest_ok(132, 4.37, deselected=24), description="Run the tests again"),
          Say("Amounts are now `amount_cents BIGINT` (migration 0009). The converter works in integer "
              "parts-per-million rates with half-up rounding, which fixed `test_convert_roundtrip` "
              "(1999 vs 2000). 132 tests pass."),
          ),
        T("Never use float for money anywhere in this codebase, use int cents or Decimal at the edges. Check "
          "the API layer too.",
          Edit("src/ledger/api/v1/entries.py", "        amount=float(body.amount),",
               "        amount_cents=to_cents(body.amount),"),
          Bash("uv run pytest -q", pytest_ok(132, 4.29, deselected=24), description="Run the tests"),
          Say("The v1 entries endpoint converts the incoming Decimal with `to_cents`; there is no float left "
              "on the money path."),
          ),
    )),
    Session("ledger-6", "2026-10-07T11:30:09", "feat/redis-sessions", (
        T("Memcached keeps evicting admin sessions under load. Let's switch the session cache from Memcached "
          "to Redis, we already run Redis for the rate limiter and it gives us per-key TTLs.",
          Read("src/ledger/sessions.py", "from pymemcache.client.base import Client\n\nfrom ledger.settings "
               "import settings\n\n_client = Client(settings.memcached_url)\nSESSION_TTL = 8 * 3600\n"),
          Write("src/ledger/sessions.py", "from redis import Redis\n\nfrom ledger.settings import settings\n\n"
                "_client = Redis.from_url(settings.session_redis_url)\nSESSION_TTL = 8 * 3600\n"),
          Bash("uv remove pymemcache", "Resolved 51 packages in 276ms\nUninstalled 1 package in 3ms\n"
               " - pymemcache==4.0.0", description="Drop the memcached client"),
          Bash("uv run pytest -q", pytest_ok(134, 4.51, deselected=24), description="Run the tests"),
          Say("Sessions now live in Redis (`SESSION_REDIS_URL`, 8 hour TTL per key); pymemcache is removed. "
              "134 tests pass."),
          ),
        T("Format the changed files.",
          Bash("uv run black src tests", "error: Failed to spawn: `black`\n  Caused by: No such file or "
               "directory (os error 2)", error=True, exit_code=2, description="Format with black"),
          Bash("uv run ruff format src tests", "3 files reformatted, 38 files left unchanged",
               description="Format with ruff"),
          Say("black is not installed here; `uv run ruff format src tests` reformatted 3 files."),
          ),
        T("Right, we use ruff format now, never black.",
          Say("Understood: formatting is `ruff format`, not black."),
          ),
    )),
    Session("ledger-7", "2026-10-15T16:02:44", "fix/webhook-retries", (
        T("Stripe webhooks are sometimes processed twice and we double-credit the account. Fix it.",
          Read("src/ledger/webhooks.py", "@router.post(\"/stripe\")\nasync def stripe_webhook(request: "
               "Request) -> Response:\n    event = verify(request)\n    await apply_event(event)\n"),
          Write("alembic/versions/0010_processed_events.py", "\"\"\"processed stripe events\"\"\"\n\nrevision = "
                "\"0010_processed_events\"\n"),
          Edit("src/ledger/webhooks.py", "    await apply_event(event)",
               "    async with session.begin():\n        if not await mark_processed(session, event.id):\n"
               "            return Response(status_code=200)\n        await apply_event(session, event)"),
          Bash("uv run pytest -q", pytest_ok(137, 4.66, deselected=24), description="Run the tests"),
          Say("Webhooks are now idempotent. We dedupe on Stripe's event id with a unique constraint on "
              "processed_events.event_id rather than a Redis lock, because the insert and the ledger write "
              "then commit in one transaction. 137 tests pass."),
          ),
        T("Something is off with the installed packages, clean up the venv.",
          Refused("rm -rf .venv && uv sync", description="Recreate the virtual environment"),
          ),
        T("Please don't delete the .venv, just run uv sync --reinstall.",
          Bash("uv sync --reinstall", "Resolved 51 packages in 270ms\nPrepared 49 packages in 3.10s\n"
               "Uninstalled 49 packages in 412ms\nInstalled 49 packages in 1.18s", seconds=5.0,
               description="Reinstall all packages"),
          Bash("uv run pytest -q", pytest_ok(137, 4.61, deselected=24), description="Run the tests"),
          Say("Reinstalled all 49 packages in place with `uv sync --reinstall`; tests pass."),
          ),
    )),
    Session("ledger-8", "2026-10-28T10:15:37", "feat/v2-api", (
        T("We'll keep /v1 frozen and go with a /v2 URL prefix instead of header-based versioning. Start the "
          "v2 router with the entries endpoints.",
          Write("src/ledger/api/v2/__init__.py", "from ledger.api.v2.router import router\n"),
          Write("src/ledger/api/v2/router.py", "from fastapi import APIRouter\n\nrouter = APIRouter()\n"),
          Edit("src/ledger/app.py", "    app.include_router(v1.router, prefix=\"/v1\")",
               "    app.include_router(v1.router, prefix=\"/v1\")\n    app.include_router(v2.router, "
               "prefix=\"/v2\")"),
          Bash("uv run pytest -q", pytest_ok(141, 4.70, deselected=24), description="Run the tests"),
          Say("The v2 router is mounted at `/v2` next to the frozen `/v1`; entries endpoints are copied over "
              "with `amount_cents` in the schema. 141 tests pass."),
          ),
        T("Run all the checks before I open the PR.",
          Bash("make check", "make: *** No rule to make target 'check'.  Stop.", error=True, exit_code=2,
               description="Run the checks"),
          Bash("uv run ruff check . && uv run mypy src && uv run pytest -q",
               "All checks passed!\nSuccess: no issues found in 44 source files\n"
               + pytest_ok(141, 4.66, deselected=24), seconds=12.0, description="Lint, type-check and test"),
          Say("There is no Makefile here; ruff, mypy and the 141 tests all pass."),
          ),
    )),
    Session("ledger-9", "2026-11-12T09:03:18", "chore/deps", (
        T("Bump fastapi and pydantic to the latest versions and run everything.",
          Bash("uv lock --upgrade-package fastapi --upgrade-package pydantic",
               "Resolved 51 packages in 402ms\nUpdated fastapi v0.115.6 -> v0.115.12\nUpdated pydantic "
               "v2.9.2 -> v2.11.3\nUpdated pydantic-core v2.23.4 -> v2.33.1", description="Upgrade two packages"),
          Bash("uv sync", "Resolved 51 packages in 12ms\nInstalled 3 packages in 21ms", description="Sync"),
          Bash("uv run pytest -q", "FAILED tests/api/test_v2_entries.py::test_create_entry - pydantic_core."
               "_pydantic_core.ValidationError: 1 validation error for EntryOut\namount_cents\n  Input should "
               "be a valid integer, got a number with a fractional part [type=int_from_float, "
               "input_value=1999.5, input_type=float]\n1 failed, 140 passed, 24 deselected in 4.92s",
               error=True, description="Run the tests"),
          Edit("src/ledger/api/schemas.py", "    amount_cents: int",
               "    amount_cents: int = Field(strict=True)"),
          Edit("src/ledger/api/v2/router.py", "        amount_cents=body.amount * 100,",
               "        amount_cents=to_cents(body.amount),"),
          Bash("uv run pytest -q", pytest_ok(141, 4.80, deselected=24), description="Run the tests again"),
          Say("fastapi 0.115.12 and pydantic 2.11.3 are in. pydantic now refuses floats with a fractional part "
              "for int fields, which exposed the v2 router computing `amount * 100`; it uses `to_cents` now. "
              "141 tests pass."),
          ),
    )),
)

LEDGER_QUESTIONS = (
    Q("Which tool should I use to add a new dependency here?", "preference", [["uv"]], ["ledger-1"],
      [["poetry"]]),
    Q("Can I just pip install requests into the venv?", "preference", [["uv"]], ["ledger-1"]),
    Q("How do I install the project dependencies after cloning?", "pattern", [["uv sync"]], ["ledger-1"],
      [["poetry install"]]),
    Q("How do I run the unit tests?", "pattern", [["uv run pytest"]], ["ledger-1"], [["poetry run pytest"]]),
    Q("How do I run the integration tests?", "pattern",
      [["pytest", "-m integration"], ["docker compose up -d postgres"]], ["ledger-3"],
      [["make test-integration"]]),
    Q("The integration tests fail with connection refused on port 5433, what's missing?", "learning",
      [["docker compose up -d postgres"]], ["ledger-3"]),
    Q("Why did the staging migration fail last time?", "learning", [["ledger_entries", "already exists"]],
      ["ledger-3"], [["multiple head revisions"]]),
    Q("How did we get past the alembic DuplicateTable error on staging?", "learning", [["alembic stamp"]],
      ["ledger-3"], [["alembic merge"]]),
    Q("What do we use for the session cache?", "superseded", [["redis"]], ["ledger-6"], [["memcached"]]),
    Q("Is the admin session store still on Memcached?", "superseded", [["redis"]], ["ledger-6"]),
    Q("How are money amounts stored in the database?", "decision", [["cents"]], ["ledger-5"]),
    Q("Can I use a float for the fee amount in the new endpoint?", "preference", [["float", "cents"]],
      ["ledger-5"]),
    Q("Can I force push to main to clean up the history?", "rule", [["rewrite shared history"]],
      ["ledger-4"]),
    Q("Which linter does this repo use?", "pattern", [["ruff check"]], ["ledger-1"], [["flake8"]]),
    Q("How do I type-check the code?", "pattern", [["mypy"]], ["ledger-1"]),
    Q("Which formatter should I run on the code?", "superseded", [["ruff format"]], ["ledger-6"],
      [["black"]]),
    Q("Tests fail with No module named 'ledger' after a fresh clone, how did we fix that?", "learning",
      [["pyproject.toml"]], ["ledger-1"]),
    Q("Where is the rate limiting middleware implemented?", "context", [["rate_limit.py"]], ["ledger-4"]),
    Q("What store backs the rate limiter?", "decision", [["redis"]], ["ledger-4", "ledger-6"]),
    Q("How do we make sure a Stripe webhook is not applied twice?", "decision", [["processed_events"]],
      ["ledger-7"]),
    Q("The venv looks broken, should I delete it and start over?", "preference", [["uv sync --reinstall"]],
      ["ledger-7"]),
    Q("How is the API versioned?", "decision", [["/v2"]], ["ledger-8"]),
    Q("Why did the tests fail after the pydantic upgrade?", "learning", [["EntryOut"]], ["ledger-9"]),
    Q("Should new tests be unittest.TestCase classes?", "preference", [["fixtures"]], ["ledger-2"]),
    Q("Is there a make target that runs all the checks?", "context", [["make check"]], ["ledger-8"]),
    Q("Write a regex that matches ISO 4217 currency codes.", "none", [], []),
    Q("Explain the difference between a list and a tuple in Python.", "none", [], []),
)

# =========================================================================== storefront-web (TypeScript)

STORE = "/home/dev/code/storefront-web"

STORE_SESSIONS = (
    Session("store-1", "2026-09-03T09:10:27", "main", (
        T("Get the storefront running locally. Always use pnpm in this repo, never npm or yarn: the lockfile "
          "is pnpm-lock.yaml.",
          Read("package.json", "{\n  \"name\": \"storefront-web\",\n  \"packageManager\": \"pnpm@9.12.3\",\n"
               "  \"scripts\": {\n    \"dev\": \"next dev\",\n    \"build\": \"next build\",\n    \"test\": "
               "\"vitest run\",\n    \"test:e2e\": \"playwright test\",\n    \"lint\": \"next lint\",\n"
               "    \"typecheck\": \"tsc --noEmit\"\n  }\n}"),
          Bash("pnpm install", "Lockfile is up to date, resolution step is skipped\nPackages: +812\n"
               "Progress: resolved 812, reused 790, downloaded 22, added 812, done\n\ndependencies:\n"
               "+ next 15.1.3\n+ react 19.0.0\n\nDone in 8.4s", seconds=9.0, description="Install dependencies"),
          Bash("pnpm build", "   ▲ Next.js 15.1.3\n\n   Creating an optimized production build ...\n ✓ Compiled "
               "successfully\n ✓ Generating static pages (24/24)\n\nRoute (app)          Size     First Load JS"
               "\n┌ ○ /                  5.2 kB        112 kB", seconds=48.0, description="Production build"),
          Say("Dependencies are installed with `pnpm install` and `pnpm build` succeeds. Start the dev server "
              "with `pnpm dev` (http://localhost:3000)."),
          ),
        T("Run the unit tests.",
          Bash("pnpm test", vitest_ok(42, 388, 9.81), seconds=11.0, description="Run vitest"),
          Say("All 388 vitest tests in 42 files pass (`pnpm test`)."),
          ),
    )),
    Session("store-2", "2026-09-10T14:20:14", "feat/cart-state", (
        T("The cart state is a mess of prop drilling. Let's use Redux Toolkit for the cart and checkout "
          "state.",
          Bash("pnpm add @reduxjs/toolkit react-redux", "Packages: +6\nProgress: resolved 818, reused 812, "
               "downloaded 6, added 6, done\n\ndependencies:\n+ @reduxjs/toolkit 2.5.0\n+ react-redux 9.2.0\n\n"
               "Done in 3.1s", description="Add Redux Toolkit"),
          Write("src/store/cartSlice.ts", "import { createSlice, type PayloadAction } from '@reduxjs/toolkit'"
                "\n\nexport const cartSlice = createSlice({ name: 'cart', initialState, reducers: { ... } })\n"),
          Write("src/store/store.ts", "import { configureStore } from '@reduxjs/toolkit'\nimport { cartSlice }"
                " from './cartSlice'\n\nexport const store = configureStore({ reducer: { cart: cartSlice."
                "reducer } })\n"),
          Edit("src/components/CartButton.tsx", "export function CartButton({ count }: { count: number }) {",
               "export function CartButton() {\n  const count = useAppSelector(selectCartCount)"),
          Bash("pnpm test", vitest_ok(43, 401, 10.2), seconds=11.0, description="Run vitest"),
          Bash("pnpm lint", "✔ No ESLint warnings or errors", seconds=7.0, description="Lint"),
          Say("Cart and checkout state now live in a Redux Toolkit store (`src/store/store.ts`, "
              "`cartSlice.ts`); `CartButton` reads the count with a selector. Tests and lint pass."),
          ),
        T("Please always add data-testid attributes to interactive elements, the e2e tests rely on them.",
          Edit("src/components/CartButton.tsx", "    <button onClick={open}>",
               "    <button data-testid=\"cart-button\" onClick={open}>"),
          Edit("src/components/CheckoutForm.tsx", "      <button type=\"submit\">",
               "      <button type=\"submit\" data-testid=\"checkout-submit\">"),
          Say("Added `data-testid` to the cart button and the checkout submit button."),
          ),
    )),
    Session("store-3", "2026-09-17T10:05:52", "feat/e2e", (
        T("Set up the Playwright e2e tests and make them pass.",
          Bash("pnpm test:e2e", "\nRunning 14 tests using 4 workers\n\n  1) [chromium] › tests/e2e/home.spec.ts:"
               "4:5 › home › shows featured products\n\n    Error: browserType.launch: Executable doesn't exist "
               "at /home/dev/.cache/ms-playwright/chromium-1148/chrome-linux/chrome\n    ╔══════════════════"
               "═══════════════════════════════════════╗\n    ║ Looks like Playwright Test or Playwright was "
               "just installed or updated. ║\n    ║ Please run the following command to download new "
               "browsers:              ║\n    ║     npx playwright install                                "
               "              ║\n    ╚═════════════════════════════════════════════════════════╝\n\n  14 "
               "failed", error=True, seconds=6.0, description="Run the e2e tests"),
          Bash("pnpm exec playwright install chromium", "Downloading Chromium 131.0.6778.33 (playwright build "
               "v1148) from https://playwright.azureedge.net/builds/chromium/1148/chromium-linux.zip\n"
               "164.2 MiB [====================] 100% 0.0s\nChromium 131.0.6778.33 (playwright build v1148) "
               "downloaded to /home/dev/.cache/ms-playwright/chromium-1148", seconds=21.0,
               description="Install the Chromium build Playwright needs"),
          Bash("pnpm test:e2e", "\nRunning 14 tests using 4 workers\n\n  14 passed (32.1s)", seconds=34.0,
               description="Run the e2e tests again"),
          Say("The e2e run failed because Playwright's Chromium build was missing (`browserType.launch: "
              "Executable doesn't exist`). After `pnpm exec playwright install chromium` all 14 e2e tests pass "
              "with `pnpm test:e2e`."),
          ),
        T("Add @playwright/test to the devDependencies properly.",
          Blocked("npm install -D @playwright/test",
                  "this repo uses pnpm; npm would create a package-lock.json next to pnpm-lock.yaml",
                  description="Add the Playwright test runner"),
          Bash("pnpm add -D @playwright/test", "Packages: +1\nProgress: resolved 819, reused 819, downloaded 0, "
               "added 1, done\n\ndevDependencies:\n+ @playwright/test 1.49.1\n\nDone in 2.2s",
               description="Add the Playwright test runner with pnpm"),
          Say("npm was blocked by a rule (it would create a package-lock.json), so I added `@playwright/test` "
              "with `pnpm add -D`."),
          ),
    )),
    Session("store-4", "2026-09-25T11:41:09", "fix/hydration", (
        T("Fix the hydration mismatch warning on the product page.",
          Read("src/app/products/[slug]/page.tsx", "export default async function ProductPage({ params }) {\n"
               "  const product = await getProduct(params.slug)\n  return (\n    <article>\n      <h1>{product."
               "name}</h1>\n      <p>Available since {new Date(product.releasedAt).toLocaleDateString()}</p>\n"
               "    </article>\n  )\n}"),
          Edit("src/app/products/[slug]/page.tsx",
               "      <p>Available since {new Date(product.releasedAt).toLocaleDateString()}</p>",
               "      <p>Available since {format(new Date(product.releasedAt), 'd MMM yyyy')}</p>"),
          Bash("pnpm test", vitest_ok(43, 403, 10.0), seconds=11.0, description="Run vitest"),
          Say("The mismatch came from `toLocaleDateString()` rendering with the server's locale and then "
              "the browser's. I switched the product page to date-fns `format()` with a fixed pattern instead "
              "of toLocaleDateString, so server and client render the same text. Tests pass."),
          ),
    )),
    Session("store-5", "2026-10-02T09:33:45", "feat/zustand", (
        T("Redux Toolkit is way too much boilerplate for a cart. Let's drop Redux and use Zustand for client "
          "state going forward.",
          Write("src/store/cart.ts", "import { create } from 'zustand'\n\nexport const useCart = create<"
                "CartState>()((set) => ({ items: [], add: (item) => set((s) => ({ items: [...s.items, item] }))"
                " }))\n"),
          Bash("git rm -q src/store/cartSlice.ts src/store/store.ts", "", description="Remove the Redux store"),
          Bash("pnpm remove @reduxjs/toolkit react-redux && pnpm add zustand",
               "Packages: -6\nProgress: resolved 813, reused 813, downloaded 0, added 0, done\n\ndependencies:"
               "\n- @reduxjs/toolkit 2.5.0\n- react-redux 9.2.0\nPackages: +1\n\ndependencies:\n+ zustand 5.0.2"
               "\n\nDone in 2.9s", description="Swap Redux for Zustand"),
          Bash("pnpm typecheck", "src/components/CartButton.tsx(4,29): error TS2307: Cannot find module "
               "'@/store/cartSlice' or its corresponding type declarations.\nsrc/components/CartButton.tsx(7,17)"
               ": error TS2304: Cannot find name 'useAppSelector'.\n ELIFECYCLE  Command failed with exit code "
               "2.", error=True, exit_code=2, seconds=9.0, description="Type-check"),
          Edit("src/components/CartButton.tsx", "  const count = useAppSelector(selectCartCount)",
               "  const count = useCart((s) => s.items.length)"),
          Bash("pnpm typecheck", "", seconds=9.0, description="Type-check again"),
          Bash("pnpm test", vitest_ok(43, 398, 9.7), seconds=10.0, description="Run vitest"),
          Say("Client state is a Zustand store now (`src/store/cart.ts`); Redux Toolkit and react-redux are "
              "removed. The type check caught `CartButton.tsx` still importing the old slice (TS2307); it "
              "uses `useCart` now. Typecheck and tests pass."),
          ),
    )),
    Session("store-6", "2026-10-09T13:52:30", "feat/images", (
        T("Product images are slow. Use next/image with the Cloudinary loader; we decided against "
          "self-hosting images because of the bandwidth bill.",
          Write("src/lib/cloudinaryLoader.ts", "export default function cloudinaryLoader({ src, width, quality "
                "}: ImageLoaderProps) {\n  return `https://res.cloudinary.com/acme/image/upload/f_auto,q_${"
                "quality || 'auto'},w_${width}/${src}`\n}\n"),
          Edit("src/components/ProductCard.tsx", "      <img src={product.image} alt={product.name} />",
               "      <Image src={product.image} alt={product.name} width={480} height={480} />"),
          Bash("pnpm build", "   ▲ Next.js 15.1.3\n\n   Creating an optimized production build ...\nError: "
               "Invalid src prop (https://res.cloudinary.com/acme/image/upload/v1/products/mug.jpg) on "
               "`next/image`, hostname \"res.cloudinary.com\" is not configured under images in your "
               "`next.config.js`\nSee more info: https://nextjs.org/docs/messages/next-image-unconfigured-host"
               "\n ELIFECYCLE  Command failed with exit code 1.", error=True, seconds=30.0,
               description="Production build"),
          Edit("next.config.ts", "const nextConfig: NextConfig = {",
               "const nextConfig: NextConfig = {\n  images: { loader: 'custom', loaderFile: './src/lib/"
               "cloudinaryLoader.ts', remotePatterns: [{ protocol: 'https', hostname: 'res.cloudinary.com' }] "
               "},"),
          Bash("pnpm build", "   ▲ Next.js 15.1.3\n ✓ Compiled successfully\n ✓ Generating static pages "
               "(24/24)", seconds=46.0, description="Production build again"),
          Say("Product images go through `next/image` with the Cloudinary loader in "
              "`src/lib/cloudinaryLoader.ts`. The build first failed because res.cloudinary.com was not an "
              "allowed image host; `next.config.ts` now sets the custom loader and the remote pattern."),
          ),
    )),
    Session("store-7", "2026-10-20T10:12:55", "chore/env", (
        T("What env vars do I need for checkout to work locally?",
          Read(".env.example", "NEXT_PUBLIC_STRIPE_KEY=pk_test_...\nSTRIPE_SECRET_KEY=sk_test_...\n"
               "NEXT_PUBLIC_SITE_URL=http://localhost:3000\n"),
          Say("Checkout needs `NEXT_PUBLIC_STRIPE_KEY` and `STRIPE_SECRET_KEY` (test keys from the Stripe "
              "dashboard); `NEXT_PUBLIC_SITE_URL` defaults to http://localhost:3000. Copy `.env.example` to "
              "`.env.local`."),
          ),
        T("Add STOREFRONT_API_URL to .env.example and use it in the API client. The API base URL must come "
          "from the environment, never hardcode it.",
          Edit(".env.example", "NEXT_PUBLIC_SITE_URL=http://localhost:3000",
               "NEXT_PUBLIC_SITE_URL=http://localhost:3000\nSTOREFRONT_API_URL=http://localhost:8080"),
          Edit("src/lib/api.ts", "const BASE_URL = 'https://api.acme-shop.com'",
               "const BASE_URL = process.env.STOREFRONT_API_URL ?? ''"),
          Bash("pnpm test", vitest_ok(43, 398, 9.9), seconds=10.0, description="Run vitest"),
          Say("`src/lib/api.ts` reads `STOREFRONT_API_URL`; it is documented in `.env.example`."),
          ),
    )),
    Session("store-8", "2026-11-04T15:27:18", "fix/flaky-e2e", (
        T("The checkout e2e test is flaky in CI, can you find out why?",
          Read("tests/e2e/checkout.spec.ts", "test('applies coupon', async ({ page }) => {\n  await page.goto("
               "'/checkout')\n  await page.getByTestId('coupon-input').fill('WELCOME10')\n  await page."
               "waitForTimeout(500)\n  expect(await page.textContent('.total')).toBe('$45.00')\n})"),
          Bash("pnpm test:e2e --repeat-each=5 tests/e2e/checkout.spec.ts", "\nRunning 25 tests using 4 workers"
               "\n\n  1) [chromium] › tests/e2e/checkout.spec.ts:41:7 › checkout › applies coupon (repeat1)\n\n"
               "    Error: expect(received).toBe(expected) // Object.is equality\n\n    Expected: \"$45.00\"\n"
               "    Received: \"$50.00\"\n\n  2 failed\n  23 passed (41.8s)", error=True, seconds=44.0,
               description="Repeat the checkout test"),
          Edit("tests/e2e/checkout.spec.ts",
               "  await page.waitForTimeout(500)\n  expect(await page.textContent('.total')).toBe('$45.00')",
               "  await expect(page.getByTestId('order-total')).toHaveText('$45.00')"),
          Bash("pnpm test:e2e --repeat-each=5 tests/e2e/checkout.spec.ts", "\nRunning 25 tests using 4 workers"
               "\n\n  25 passed (38.2s)", seconds=40.0, description="Repeat the checkout test again"),
          Say("The coupon test read the total before the price API answered. It now waits on the "
              "order-total test id with a web-first assertion instead of a fixed waitForTimeout; 25 repeats "
              "pass."),
          ),
    )),
    Session("store-9", "2026-11-18T09:48:02", "feat/i18n", (
        T("Add German translations. We'll use next-intl rather than react-i18next since it supports server "
          "components.",
          Bash("pnpm add next-intl", "Packages: +3\n\ndependencies:\n+ next-intl 3.26.3\n\nDone in 2.4s",
               description="Add next-intl"),
          Write("messages/de.json", "{\n  \"cart\": { \"title\": \"Warenkorb\", \"checkout\": \"Zur Kasse\" }\n}"),
          Write("src/app/[locale]/layout.tsx", "import { NextIntlClientProvider } from 'next-intl'\nimport { "
                "getMessages } from 'next-intl/server'\n\nexport default async function LocaleLayout({ "
                "children }) {\n  const messages = await getMessages()\n  return <html>{children}</html>\n}\n"),
          Bash("pnpm lint", "\n./src/app/[locale]/layout.tsx\n6:9  Error: 'messages' is assigned a value but "
               "never used.  @typescript-eslint/no-unused-vars\n\ninfo  - Need to disable some ESLint rules? "
               "Learn more here: https://nextjs.org/docs/app/api-reference/config/eslint#disabling-rules\n "
               "ELIFECYCLE  Command failed with exit code 1.", error=True, seconds=7.0, description="Lint"),
          Edit("src/app/[locale]/layout.tsx", "  return <html>{children}</html>",
               "  return (\n    <html>\n      <NextIntlClientProvider messages={messages}>{children}"
               "</NextIntlClientProvider>\n    </html>\n  )"),
          Bash("pnpm lint", "✔ No ESLint warnings or errors", seconds=7.0, description="Lint again"),
          Say("German messages are in `messages/de.json`, served through next-intl's provider in the locale "
              "layout. Lint passes."),
          ),
    )),
)

STORE_QUESTIONS = (
    Q("Which package manager should I use in this repo?", "preference", [["pnpm"]], ["store-1"],
      [["yarn install"]]),
    Q("Can I run npm install to add a package?", "preference", [["pnpm"]], ["store-1", "store-3"]),
    Q("How do I add a dev dependency here?", "pattern", [["pnpm add"]], ["store-3"], [["uv add"]]),
    Q("How do I run the unit tests?", "pattern", [["pnpm test"]], ["store-1"]),
    Q("How do I run the end-to-end tests?", "pattern", [["pnpm test:e2e"]], ["store-3"]),
    Q("The e2e tests say the browser executable doesn't exist, how do I fix that?", "learning",
      [["playwright install"]], ["store-3"]),
    Q("What do we use for client-side state?", "superseded", [["zustand"]], ["store-5"], [["redux"]]),
    Q("Should I add the new wishlist state to the Redux store?", "superseded", [["zustand"]], ["store-5"]),
    Q("Why did the product page have a hydration mismatch?", "learning", [["toLocaleDateString"]],
      ["store-4"]),
    Q("How should dates be formatted in server-rendered components?", "decision", [["date-fns"]],
      ["store-4"]),
    Q("What do interactive elements need for the e2e tests?", "preference", [["data-testid"]], ["store-2"]),
    Q("How do we serve product images?", "decision", [["cloudinary"]], ["store-6"]),
    Q("Why don't we self-host product images?", "decision", [["bandwidth"]], ["store-6"]),
    Q("The build fails saying the image hostname is not configured, where did we fix that?", "learning",
      [["next.config.ts"]], ["store-6"]),
    Q("Why did the type check fail after removing Redux?", "learning", [["CartButton.tsx"]], ["store-5"]),
    Q("How do I type-check the project?", "pattern", [["pnpm typecheck"]], ["store-5"], [["mypy"]]),
    Q("How do I run the linter?", "pattern", [["pnpm lint"]], ["store-2"], [["ruff check"]]),
    Q("How do I build the production bundle?", "pattern", [["pnpm build"]], ["store-1"]),
    Q("Which library do we use for translations?", "decision", [["next-intl"]], ["store-9"],
      [["react-i18next"]]),
    Q("Where should the API base URL come from?", "preference", [["STOREFRONT_API_URL"]], ["store-7"]),
    Q("Was the checkout e2e test flaky before, and what was the cause?", "learning", [["order-total"]],
      ["store-8"]),
    Q("ESLint complained about an unused variable in the locale layout, seen that before?", "learning",
      [["layout.tsx"]], ["store-9"]),
    Q("Which env vars does checkout need locally?", "context", [["STRIPE_SECRET_KEY"]], ["store-7"]),
    Q("Write a CSS grid layout for a three-column footer.", "none", [], []),
    Q("Explain what React.memo does.", "none", [], []),
)

# =========================================================================== ingest-gateway (Go service)

GATEWAY = "/home/dev/code/ingest-gateway"

GATEWAY_SESSIONS = (
    Session("gateway-1", "2026-09-04T08:15:33", "main", (
        T("Get the gateway building and the tests green.",
          Bash("go build ./...", "", seconds=14.0, description="Build everything"),
          Bash("go test ./...", "--- FAIL: TestRouter_Backpressure (0.02s)\n    router_test.go:88: expected "
               "429, got 200\nFAIL\nFAIL\tgithub.com/acme/ingest-gateway/internal/router\t0.118s\n"
               + go_ok("internal/auth", "internal/batcher", "internal/config") + "\nFAIL", error=True,
               seconds=18.0, description="Run the tests"),
          Read("internal/router/router.go", "func (r *Router) admit(tenant string) bool {\n\tq := r.queues["
               "tenant]\n\treturn len(q) <= cap(q)\n}"),
          Edit("internal/router/router.go", "\treturn len(q) <= cap(q)", "\treturn len(q) < cap(q)"),
          Bash("go test ./...", go_ok("internal/auth", "internal/batcher", "internal/config", "internal/router"),
               seconds=17.0, description="Run the tests again"),
          Say("It builds. `TestRouter_Backpressure` failed (expected 429, got 200) because `admit` accepted a "
              "request when the tenant queue was exactly full; the check in `internal/router/router.go` is "
              "`<` now and all packages pass."),
          ),
        T("Always run go test with -race in this repo, we've been bitten by data races in the batcher. Is "
          "there a make target for that?",
          Read("Makefile", "test:\n\tgo test -race -count=1 ./...\n\nlint:\n\tgolangci-lint run\n\n"
               "deploy-staging:\n\targocd app sync ingest-gateway-staging\n"),
          Bash("make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth", "internal/batcher",
               "internal/config", "internal/router"), seconds=41.0, description="Run the tests with -race"),
          Say("Yes: `make test` runs `go test -race -count=1 ./...`, and it passes."),
          ),
    )),
    Session("gateway-2", "2026-09-11T13:44:20", "feat/stream", (
        T("We'll use Kafka for the event stream between the gateway and the indexer, one topic per tenant. "
          "Write the producer.",
          Bash("go get github.com/segmentio/kafka-go@v0.4.47", "go: added github.com/segmentio/kafka-go "
               "v0.4.47\ngo: added github.com/klauspost/compress v1.17.11", seconds=4.0,
               description="Add the Kafka client"),
          Write("internal/stream/kafka.go", "package stream\n\nimport \"github.com/segmentio/kafka-go\"\n\n"
                "// Producer writes accepted events to the tenant's topic.\ntype Producer struct {\n\tw *kafka."
                "Writer\n}\n"),
          Bash("make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth", "internal/batcher",
               "internal/config", "internal/router", "internal/stream"), seconds=44.0,
               description="Run the tests"),
          Say("`internal/stream/kafka.go` has the producer: one topic per tenant (`ingest.<tenant>`), "
              "batched writes, acks from all replicas. Tests pass."),
          ),
    )),
    Session("gateway-3", "2026-09-18T10:02:11", "chore/lint", (
        T("Run the linter and fix what it finds.",
          Bash("golangci-lint run", "internal/stream/kafka.go:42:2: Error return value of `w.Close` is not "
               "checked (errcheck)\n\tw.Close()\n\t^\n1 issues:\n* errcheck: 1", error=True, seconds=22.0,
               description="Lint"),
          Edit("internal/stream/kafka.go", "\tw.Close()", "\tif err := w.Close(); err != nil {\n\t\treturn "
               "fmt.Errorf(\"close writer: %w\", err)\n\t}"),
          Bash("golangci-lint run", "0 issues.", seconds=20.0, description="Lint again"),
          Say("golangci-lint found one errcheck issue (unchecked `w.Close` in `internal/stream/kafka.go`); "
              "fixed, 0 issues now."),
          ),
        T("Add a query to fetch tenant quotas.",
          Write("internal/db/queries/quotas.sql", "-- name: TenantQuota :one\nSELECT tenant_id, rate_limit, "
                "burst_limit FROM tenant_quotas WHERE tenant_id = $1;\n"),
          Bash("sqlc generate", "# package db\nqueries/quotas.sql:2:1: column \"burst_limit\" does not exist",
               error=True, description="Generate the query code"),
          Write("internal/db/migrations/0004_quota_burst.sql", "ALTER TABLE tenant_quotas ADD COLUMN burst_limit "
                "integer NOT NULL DEFAULT 0;\n"),
          Bash("sqlc generate", "", description="Generate the query code again"),
          Bash("make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth", "internal/batcher",
               "internal/config", "internal/db", "internal/router", "internal/stream"), seconds=46.0,
               description="Run the tests"),
          Say("Added `TenantQuota` in `internal/db/queries/quotas.sql`. `sqlc generate` failed because "
              "`burst_limit` did not exist yet; migration 0004 adds it and the generated code is in "
              "`internal/db/gen`."),
          ),
        T("Never edit the files in internal/db/gen by hand, they are overwritten by sqlc generate.",
          Say("Noted: `internal/db/gen` is generated; change the SQL in `internal/db/queries` and run "
              "`sqlc generate`."),
          ),
    )),
    Session("gateway-4", "2026-09-29T16:20:45", "test/integration", (
        T("Run the integration tests.",
          Bash("go test ./...", go_ok("internal/auth", "internal/batcher", "internal/config", "internal/db",
               "internal/router", "internal/stream") + "\n?   \tgithub.com/acme/ingest-gateway/test/integration"
               "\t[no test files]", seconds=18.0, description="Run all tests"),
          Say("The integration package reports no test files without its build tag; running it with "
              "`-tags=integration`."),
          Bash("go test -tags=integration ./test/integration/...", "--- FAIL: TestIngestRoundTrip (5.01s)\n"
               "    roundtrip_test.go:31: produce: kafka: dial tcp 127.0.0.1:9092: connect: connection refused"
               "\nFAIL\nFAIL\tgithub.com/acme/ingest-gateway/test/integration\t5.027s\nFAIL", error=True,
               seconds=7.0, description="Run the integration tests"),
          Bash("docker compose up -d kafka", " Container ingest-gateway-zookeeper-1  Running\n Container "
               "ingest-gateway-kafka-1  Started", seconds=6.0, description="Start the broker"),
          Bash("go test -tags=integration ./test/integration/...", "ok  \tgithub.com/acme/ingest-gateway/test/"
               "integration\t14.212s", seconds=16.0, description="Run the integration tests again"),
          Say("The integration tests are behind the `integration` build tag and need the broker from the "
              "compose file: `docker compose up -d kafka`, then `go test -tags=integration "
              "./test/integration/...`. They pass."),
          ),
    )),
    Session("gateway-5", "2026-10-06T09:12:39", "feat/nats", (
        T("Kafka is too heavy to operate for our volume. Let's switch the event stream from Kafka to NATS "
          "JetStream, one stream per tenant with subjects ingest.<tenant>.>",
          Bash("go get github.com/nats-io/nats.go@v1.37.0", "go: added github.com/nats-io/nats.go v1.37.0\n"
               "go: added github.com/nats-io/nkeys v0.4.7", seconds=3.0, description="Add the NATS client"),
          Write("internal/stream/nats.go", "package stream\n\nimport (\n\t\"github.com/nats-io/nats.go\"\n\t"
                "\"github.com/nats-io/nats.go/jetstream\"\n)\n\n// Producer publishes accepted events to "
                "ingest.<tenant>.<kind>.\ntype Producer struct {\n\tjs jetstream.JetStream\n}\n"),
          Bash("git rm -q internal/stream/kafka.go && go mod tidy", "go: removing github.com/segmentio/"
               "kafka-go v0.4.47", seconds=3.0, description="Remove the Kafka producer"),
          Edit("docker-compose.yml", "  kafka:\n    image: bitnami/kafka:3.8", "  nats:\n    image: nats:2.10\n"
               "    command: [\"-js\"]"),
          Bash("make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth", "internal/batcher",
               "internal/config", "internal/db", "internal/router", "internal/stream"), seconds=45.0,
               description="Run the tests"),
          Say("The stream is NATS JetStream now: `internal/stream/nats.go` publishes to "
              "`ingest.<tenant>.<kind>` with one stream per tenant; kafka-go is gone and docker-compose runs "
              "`nats:2.10 -js` instead of Kafka."),
          ),
    )),
    Session("gateway-6", "2026-10-14T14:05:58", "perf/batcher", (
        T("The batcher's p99 is bad under load, profile it.",
          Bash("go test -run='^$' -bench=BenchmarkBatcher -benchmem ./internal/batcher",
               "goos: linux\ngoarch: amd64\npkg: github.com/acme/ingest-gateway/internal/batcher\n"
               "BenchmarkBatcher-8   \t   48213\t     24871 ns/op\t   70112 B/op\t     212 allocs/op\nPASS\nok  \t"
               "github.com/acme/ingest-gateway/internal/batcher\t2.318s", seconds=4.0,
               description="Benchmark the batcher"),
          Edit("internal/batcher/batcher.go", "\tbuf := make([]byte, 0, 64<<10)",
               "\tbuf := bufPool.Get().(*[]byte)\n\tdefer bufPool.Put(buf)"),
          Bash("go test -run='^$' -bench=BenchmarkBatcher -benchmem ./internal/batcher",
               "BenchmarkBatcher-8   \t  161870\t      7312 ns/op\t     412 B/op\t       3 allocs/op\nPASS\nok  \t"
               "github.com/acme/ingest-gateway/internal/batcher\t2.104s", seconds=4.0,
               description="Benchmark again"),
          Say("Decided to pool the 64 KiB batch buffers with sync.Pool instead of allocating one per batch: "
              "212 → 3 allocations per op and 24.9 µs → 7.3 µs per batch."),
          ),
    )),
    Session("gateway-7", "2026-10-23T11:18:07", "release/v1.8", (
        T("Deploy the new version to staging.",
          Blocked("kubectl --context prod-us apply -f deploy/",
                  "kubectl apply against a prod context is not allowed; deploy through Argo CD",
                  description="Apply the manifests"),
          Say("That context is production and a rule forbids applying there directly. Staging deploys go "
              "through Argo CD:"),
          Bash("make deploy-staging", "argocd app sync ingest-gateway-staging\nTIMESTAMP                  GROUP  "
               "KIND        NAMESPACE  NAME            STATUS  HEALTH\n2026-10-23T11:19:41+00:00  apps   "
               "Deployment  ingest     ingest-gateway  Synced  Healthy\n\nOperation:          Sync\nPhase:"
               "              Succeeded", seconds=25.0, description="Sync the staging app"),
          Say("Staging is synced and healthy via `make deploy-staging` (Argo CD app ingest-gateway-staging)."),
          ),
    )),
    Session("gateway-8", "2026-11-02T08:57:14", "main", (
        T("Integration tests fail on my machine again.",
          Bash("go test -tags=integration ./test/integration/...", "--- FAIL: TestIngestRoundTrip (2.00s)\n"
               "    roundtrip_test.go:27: connect: nats: no servers available for connection\nFAIL\nFAIL\t"
               "github.com/acme/ingest-gateway/test/integration\t2.011s\nFAIL", error=True, seconds=4.0,
               description="Run the integration tests"),
          Bash("docker compose up -d nats", " Container ingest-gateway-nats-1  Started", seconds=2.0,
               description="Start NATS"),
          Bash("go test -tags=integration ./test/integration/...", "ok  \tgithub.com/acme/ingest-gateway/test/"
               "integration\t6.904s", seconds=9.0, description="Run the integration tests again"),
          Say("Since the move to NATS the integration tests need `docker compose up -d nats` (Kafka is no "
              "longer in the compose file). With it running they pass."),
          ),
    )),
    Session("gateway-9", "2026-11-16T15:31:40", "feat/slog", (
        T("Add structured logging. We'll use log/slog from the standard library rather than zap, to keep "
          "the dependencies down.",
          Write("internal/logging/logging.go", "package logging\n\nimport (\n\t\"log/slog\"\n\t\"os\"\n)\n\n"
                "func New(level slog.Level) *slog.Logger {\n\treturn slog.New(slog.NewJSONHandler(os.Stdout, "
                "&slog.HandlerOptions{Level: level}))\n}\n"),
          Edit("cmd/gateway/main.go", "\tlog.Printf(\"listening on %s\", cfg.Addr)",
               "\tlogger.Info(\"listening\", \"addr\", cfg.Addr)"),
          Bash("make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth", "internal/batcher",
               "internal/config", "internal/db", "internal/logging", "internal/router", "internal/stream"),
               seconds=47.0, description="Run the tests"),
          Bash("make lint", "golangci-lint run\n0 issues.", seconds=21.0, description="Lint"),
          Say("Logging is JSON via `log/slog` (`internal/logging`), no new dependency. Tests and lint pass."),
          ),
        T("Update the Go version to 1.23 in go.mod and CI.",
          Edit("go.mod", "go 1.22", "go 1.23"),
          Edit(".github/workflows/ci.yml", "          go-version: '1.22'", "          go-version: '1.23'"),
          Bash("go mod tidy && make test", "go test -race -count=1 ./...\n" + go_ok("internal/auth",
               "internal/batcher", "internal/config", "internal/db", "internal/logging", "internal/router",
               "internal/stream"), seconds=48.0, description="Tidy and test"),
          Say("go.mod and the CI workflow are on Go 1.23; tests pass."),
          ),
    )),
)

GATEWAY_QUESTIONS = (
    Q("How should I run the tests here?", "preference", [["-race"]], ["gateway-1"]),
    Q("Is there a make target for the tests?", "pattern", [["make test"]], ["gateway-1"]),
    Q("How do I run the integration tests?", "pattern", [["-tags=integration"]], ["gateway-4"],
      [["-m integration"], ["make test-integration"]]),
    Q("The integration tests can't connect to the broker, what do I need to start?", "learning",
      [["docker compose up -d nats"]], ["gateway-8"], [["docker compose up -d kafka"]]),
    Q("What do we use for the event stream between the gateway and the indexer?", "superseded", [["nats"]],
      ["gateway-5"], [["kafka"]]),
    Q("Is the indexer still consuming from Kafka topics?", "superseded", [["nats"]], ["gateway-5"]),
    Q("Why did we move off Kafka?", "decision", [["too heavy"]], ["gateway-5"]),
    Q("How are the stream subjects named?", "decision", [["ingest.<tenant>"]], ["gateway-5"]),
    Q("Which linter do we use?", "pattern", [["golangci-lint"]], ["gateway-3"], [["ruff check"]]),
    Q("golangci-lint complained about an unchecked Close before, what was that?", "learning",
      [["errcheck"]], ["gateway-3"]),
    Q("sqlc generate fails with a column that does not exist, what was it last time?", "learning",
      [["burst_limit"]], ["gateway-3"]),
    Q("Can I tweak the generated query code in internal/db/gen directly?", "preference",
      [["sqlc generate"]], ["gateway-3"]),
    Q("How do I regenerate the database query code?", "pattern", [["sqlc generate"]], ["gateway-3"]),
    Q("Which logging library should I use?", "decision", [["slog"]], ["gateway-9"], [["zap"]]),
    Q("Can I add zap for logging in the new module?", "decision", [["slog"]], ["gateway-9"]),
    Q("How did we fix the batcher's allocations?", "decision", [["sync.Pool"]], ["gateway-6"]),
    Q("How do I benchmark the batcher?", "pattern", [["-bench"]], ["gateway-6"]),
    Q("How do I deploy to staging?", "pattern", [["make deploy-staging"]], ["gateway-7"]),
    Q("Can I kubectl apply straight to the prod cluster?", "rule", [["Argo CD"]], ["gateway-7"]),
    Q("TestRouter_Backpressure failed once, what fixed it?", "learning", [["router.go"]], ["gateway-1"]),
    Q("Which Go version are we on?", "context", [["1.23"]], ["gateway-9"]),
    Q("How do I build everything?", "pattern", [["go build"]], ["gateway-1"]),
    Q("Where is the NATS producer?", "context", [["nats.go"]], ["gateway-5"]),
    Q("How do generics with type sets work in Go?", "none", [], []),
    Q("Write a shell one-liner that counts the lines of all .go files.", "none", [], []),
)

# =========================================================================== platform-infra (Terraform/Helm)

INFRA = "/home/dev/code/platform-infra"

INFRA_SESSIONS = (
    Session("infra-1", "2026-09-05T10:31:06", "infra/staging-node-pool", (
        T("Plan the staging changes for the new node pool.",
          Bash("terraform plan -var-file=envs/staging.tfvars", "╷\n│ Error: Backend initialization required, "
               "please run \"terraform init\"\n│\n│ Reason: Backend configuration block has changed\n│\n│ The "
               "\"backend\" is the interface that Terraform uses to store state,\n│ perform operations, etc. If "
               "this message is showing up, it means that the\n│ Terraform configuration you're using is using "
               "a custom configuration for\n│ the Terraform backend.\n╵", error=True, seconds=3.0,
               description="Plan staging"),
          Bash("terraform init -reconfigure", "Initializing the backend...\n\nSuccessfully configured the backend "
               "\"s3\"! Terraform will automatically\nuse this backend unless the backend configuration "
               "changes.\n\nInitializing provider plugins...\n- Reusing previous version of hashicorp/aws from "
               "the dependency lock file\n\nTerraform has been successfully initialized!", seconds=9.0,
               description="Re-initialise the backend"),
          Bash("terraform plan -var-file=envs/staging.tfvars", "module.eks.aws_eks_node_group.general: Refreshing"
               " state... [id=staging:general]\n\nTerraform will perform the following actions:\n\n  # module."
               "eks.aws_eks_node_group.spot will be created\n  + resource \"aws_eks_node_group\" \"spot\" {\n"
               "      + instance_types = [\"m7i.large\", \"m6i.large\"]\n    }\n\nPlan: 3 to add, 1 to change, 0 "
               "to destroy.", seconds=28.0, description="Plan staging again"),
          Say("The plan needed `terraform init -reconfigure` first (the backend block changed). Plan for "
              "staging: 3 to add (spot node group, its launch template and IAM role), 1 to change."),
          ),
        T("Looks good, apply it.",
          Blocked("terraform apply -var-file=envs/staging.tfvars",
                  "terraform apply runs only in the deploy pipeline, never from a laptop",
                  description="Apply staging"),
          Say("A rule blocks `terraform apply` outside the deploy pipeline. I'll push the branch so the "
              "pipeline plans and applies it."),
          Bash("git push -u origin infra/staging-node-pool", "To github.com:acme/platform-infra.git\n * [new "
               "branch]      infra/staging-node-pool -> infra/staging-node-pool", description="Push"),
          Say("Pushed `infra/staging-node-pool`; the pipeline will apply after review."),
          ),
    )),
    Session("infra-2", "2026-09-12T14:02:48", "main", (
        T("Always use make plan ENV=<env> instead of calling terraform plan directly, it selects the right "
          "workspace and var files. Plan prod for the RDS storage bump.",
          Read("Makefile", "plan:\n\tterraform workspace select $(ENV)\n\tterraform plan -var-file=envs/$(ENV)"
               ".tfvars -out=$(ENV).tfplan\n"),
          Bash("make plan ENV=prod", "terraform workspace select prod\nterraform plan -var-file=envs/prod.tfvars "
               "-out=prod.tfplan\n\n  # module.rds.aws_db_instance.main will be updated in-place\n  ~ resource "
               "\"aws_db_instance\" \"main\" {\n      ~ allocated_storage = 200 -> 400\n    }\n\nPlan: 0 to "
               "add, 1 to change, 0 to destroy.", seconds=31.0, description="Plan prod"),
          Say("`make plan ENV=prod`: one in-place change, RDS allocated storage 200 → 400 GiB."),
          ),
    )),
    Session("infra-3", "2026-09-19T09:45:17", "feat/app-secrets", (
        T("Store the app secrets in Kubernetes. We'll use sealed-secrets for now, with the controller in "
          "kube-system.",
          Write("charts/platform/templates/sealed-secrets.yaml", "apiVersion: bitnami.com/v1alpha1\nkind: "
                "SealedSecret\nmetadata:\n  name: app-secrets\n  namespace: apps\n"),
          Bash("helm lint charts/platform", "==> Linting charts/platform\n[INFO] Chart.yaml: icon is "
               "recommended\n\n1 chart(s) linted, 0 chart(s) failed", description="Lint the chart"),
          Say("Added the SealedSecret template to the platform chart; the controller runs in kube-system. "
              "`helm lint charts/platform` passes."),
          ),
    )),
    Session("infra-4", "2026-09-26T15:12:40", "fix/ingress-upgrade", (
        T("The helm upgrade of the ingress controller fails on staging, fix it.",
          Bash("helm upgrade --install ingress charts/ingress -n ingress -f values/staging.yaml",
               "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress", error=True,
               seconds=4.0, description="Upgrade the ingress release"),
          Bash("helm history ingress -n ingress --max 3", "REVISION\tUPDATED                 \tSTATUS         "
               "\tCHART          \tDESCRIPTION\n14      \tThu Sep 25 17:02:11 2026\tdeployed       \tingress-"
               "4.11.2\tUpgrade complete\n15      \tThu Sep 25 18:40:57 2026\tpending-upgrade\tingress-4.11.3"
               "\tPreparing upgrade", description="Show the release history"),
          Bash("helm rollback ingress 14 -n ingress", "Rollback was a success! Happy Helming!", seconds=6.0,
               description="Roll back the stuck revision"),
          Bash("helm upgrade --install ingress charts/ingress -n ingress -f values/staging.yaml",
               "Release \"ingress\" has been upgraded. Happy Helming!\nNAME: ingress\nSTATUS: deployed\n"
               "REVISION: 17", seconds=22.0, description="Upgrade again"),
          Say("Revision 15 was stuck in `pending-upgrade` (an interrupted upgrade yesterday), which blocks "
              "any new operation. `helm rollback ingress 14 -n ingress` cleared it and the upgrade went "
              "through as revision 17."),
          ),
    )),
    Session("infra-5", "2026-10-05T08:50:22", "main", (
        T("Check why the platform pods restart. Never run kubectl without an explicit --context here; "
          "staging is staging-eu and prod is prod-eu.",
          Bash("kubectl --context staging-eu get pods -n platform", "NAME                        READY   STATUS"
               "    RESTARTS      AGE\nplatform-api-7d9c6b5f4-2xk8p   1/1     Running   7 (3h ago)    2d",
               description="List the platform pods"),
          Bash("kubectl --context staging-eu describe pod platform-api-7d9c6b5f4-2xk8p -n platform",
               "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    "
               "Limits:\n      memory:  256Mi", description="Describe the pod"),
          Edit("values/staging.yaml", "    memory: 256Mi", "    memory: 512Mi"),
          Say("The API pod was OOMKilled at its 256Mi limit; the staging values now allow 512Mi."),
          ),
    )),
    Session("infra-6", "2026-10-13T13:27:03", "feat/external-secrets", (
        T("Sealed secrets are painful to rotate. Let's replace sealed-secrets with external-secrets backed "
          "by AWS Secrets Manager.",
          Bash("helm repo add external-secrets https://charts.external-secrets.io && helm repo update",
               "\"external-secrets\" has been added to your repositories\nHang tight while we grab the latest "
               "from your chart repositories...\nUpdate Complete. ⎈Happy Helming!⎈", description="Add the repo"),
          Write("charts/platform/templates/external-secret.yaml", "apiVersion: external-secrets.io/v1beta1\n"
                "kind: ExternalSecret\nmetadata:\n  name: app-secrets\nspec:\n  secretStoreRef:\n    name: "
                "aws-secrets-manager\n    kind: ClusterSecretStore\n"),
          Bash("git rm -q charts/platform/templates/sealed-secrets.yaml", "", description="Remove the "
               "SealedSecret"),
          Bash("helm lint charts/platform", "==> Linting charts/platform\n\n1 chart(s) linted, 0 chart(s) "
               "failed", description="Lint the chart"),
          Say("App secrets come from AWS Secrets Manager through external-secrets (a ClusterSecretStore "
              "`aws-secrets-manager`); the SealedSecret template is removed."),
          ),
    )),
    Session("infra-7", "2026-10-21T10:40:35", "main", (
        T("Patch the bastion hosts.",
          Bash("ansible-playbook -i inventory/prod playbooks/patch.yml", "PLAY [bastion] ****\n\nTASK [Gathering "
               "Facts] ****\nfatal: [bastion-1]: UNREACHABLE! => {\"changed\": false, \"msg\": \"Failed to "
               "connect to the host via ssh: dev@bastion-1: Permission denied (publickey).\", \"unreachable\": "
               "true}\n\nPLAY RECAP ****\nbastion-1 : ok=0    changed=0    unreachable=1    failed=0",
               error=True, exit_code=4, seconds=8.0, description="Run the patch playbook"),
          Bash("ssh-add ~/.ssh/platform_ed25519", "Identity added: /home/dev/.ssh/platform_ed25519 "
               "(dev@platform)", description="Load the platform key"),
          Bash("ansible-playbook -i inventory/prod playbooks/patch.yml", "PLAY RECAP ****\nbastion-1 : ok=7    "
               "changed=2    unreachable=0    failed=0\nbastion-2 : ok=7    changed=2    unreachable=0    "
               "failed=0", seconds=95.0, description="Run the patch playbook again"),
          Say("The playbook could not reach the bastions (`Permission denied (publickey)`) because the "
              "platform key was not loaded; after `ssh-add ~/.ssh/platform_ed25519` both hosts are patched."),
          ),
    )),
    Session("infra-8", "2026-11-03T16:08:12", "chore/fmt", (
        T("Format and validate everything before the PR.",
          Bash("terraform fmt -check -recursive", "modules/eks/main.tf\nmodules/rds/variables.tf", error=True,
               exit_code=3, description="Check formatting"),
          Bash("terraform fmt -recursive", "modules/eks/main.tf\nmodules/rds/variables.tf",
               description="Format"),
          Bash("terraform validate", "Success! The configuration is valid.", seconds=4.0,
               description="Validate"),
          Say("Two files were not formatted; `terraform fmt -recursive` fixed them and `terraform validate` "
              "passes."),
          ),
    )),
    Session("infra-9", "2026-11-17T11:22:50", "feat/state-split", (
        T("We decided to move state to a separate S3 bucket per environment instead of one shared bucket with "
          "prefixes, because a bad apply on staging locked prod state last week. Do the staging move.",
          Edit("envs/staging.backend.hcl", "bucket = \"acme-terraform-state\"\nkey    = \"staging/terraform."
               "tfstate\"", "bucket = \"acme-terraform-state-staging\"\nkey    = \"terraform.tfstate\""),
          Bash("terraform init -migrate-state -backend-config=envs/staging.backend.hcl",
               "Initializing the backend...\nTerraform detected that the backend type changed from \"s3\" to "
               "\"s3\".\n\nSuccessfully configured the backend \"s3\"! Terraform will automatically\nuse this "
               "backend unless the backend configuration changes.", seconds=12.0,
               description="Migrate the staging state"),
          Say("Staging state is now in its own bucket `acme-terraform-state-staging`, migrated with `terraform "
              "init -migrate-state`. Prod comes next in its own PR."),
          ),
    )),
)

INFRA_QUESTIONS = (
    Q("Can I run terraform apply from my laptop?", "rule", [["deploy pipeline"]], ["infra-1"]),
    Q("How do I run a plan for staging?", "preference", [["make plan"]], ["infra-2"]),
    Q("terraform plan says backend initialization required, what do I run?", "learning",
      [["terraform init -reconfigure"]], ["infra-1"]),
    Q("How do we manage application secrets in the cluster?", "superseded", [["external-secrets"]],
      ["infra-6"], [["sealed-secrets"]]),
    Q("Should I create a SealedSecret for the new service?", "superseded", [["external-secrets"]],
      ["infra-6"]),
    Q("Where do the external secrets come from?", "decision", [["AWS Secrets Manager"]], ["infra-6"]),
    Q("helm upgrade says another operation is in progress, what did we do last time?", "learning",
      [["helm rollback"]], ["infra-4"]),
    Q("Which kubectl context is staging?", "preference", [["staging-eu"]], ["infra-5"]),
    Q("Can I run kubectl without specifying a context?", "preference", [["--context"]], ["infra-5"]),
    Q("Why did the platform API pods keep restarting?", "context", [["OOMKilled"]], ["infra-5"]),
    Q("Ansible fails with Permission denied (publickey) on the bastions, how did we fix it?", "learning",
      [["ssh-add"]], ["infra-7"]),
    Q("Which playbook patches the bastion hosts?", "context", [["patch.yml"]], ["infra-7"]),
    Q("The terraform fmt check fails in CI, how do I fix the formatting?", "learning",
      [["terraform fmt -recursive"]], ["infra-8"]),
    Q("How do I validate the terraform configuration?", "pattern", [["terraform validate"]], ["infra-8"]),
    Q("How do I lint the helm chart?", "pattern", [["helm lint"]], ["infra-3", "infra-6"]),
    Q("How is the terraform state organised per environment?", "decision", [["bucket per environment"]],
      ["infra-9"]),
    Q("Why did we split the terraform state buckets?", "decision", [["locked prod state"]], ["infra-9"]),
    Q("How do I move the state after changing the backend config?", "pattern", [["-migrate-state"]],
      ["infra-9"]),
    Q("Which var file is used for staging plans?", "context", [["envs/staging.tfvars"]], ["infra-1"]),
    Q("How do infrastructure changes get applied?", "rule", [["deploy pipeline"]], ["infra-1"]),
    Q("Which bucket holds the staging terraform state?", "context", [["acme-terraform-state-staging"]],
      ["infra-9"]),
    Q("What's the difference between a Deployment and a StatefulSet?", "none", [], []),
    Q("Draft a short status update for the team standup.", "none", [], []),
)

# =========================================================================== billing-worker (Python, Celery)

BILLING = "/home/dev/code/billing-worker"

BILLING_SESSIONS = (
    Session("billing-1", "2026-09-06T11:20:31", "main", (
        T("Set up billing-worker locally. We use poetry here, not uv: always poetry install and poetry add.",
          Bash("poetry install", "Installing dependencies from lock file\n\nPackage operations: 38 installs, 0 "
               "updates, 0 removals\n\n  - Installing amqp (5.2.0)\n  - Installing celery (5.4.0)\n  - "
               "Installing sqlalchemy (2.0.36)\n\nInstalling the current project: billing-worker (1.4.2)",
               seconds=22.0, description="Install dependencies"),
          Bash("poetry run pytest", "============================= test session starts ==============================\n"
               "collected 86 items\n\ntests/test_invoices.py ........................                  [ 27%]\n"
               "tests/test_tasks.py ..............................................     [100%]\n\n"
               "============================== 86 passed in 4.11s ==============================", seconds=6.0,
               description="Run the tests"),
          Say("Installed with `poetry install`; `poetry run pytest` passes (86 tests)."),
          ),
    )),
    Session("billing-2", "2026-09-13T09:58:19", "main", (
        T("The Celery worker can't connect to the broker.",
          Bash("poetry run celery -A billing.worker inspect ping", "Error: No nodes replied within time "
               "constraint\n[ERROR/MainProcess] consumer: Cannot connect to amqp://guest:**@127.0.0.1:5672//: "
               "[Errno 111] Connection refused.", error=True, exit_code=69, seconds=5.0,
               description="Ping the workers"),
          Bash("docker compose up -d rabbitmq", " Container billing-worker-rabbitmq-1  Started", seconds=4.0,
               description="Start RabbitMQ"),
          Bash("poetry run celery -A billing.worker inspect ping", "->  celery@dev-laptop: OK\n        pong\n\n1 "
               "node online.", seconds=3.0, description="Ping the workers again"),
          Say("RabbitMQ was not running. After `docker compose up -d rabbitmq` the worker connects; `poetry "
              "run celery -A billing.worker inspect ping` answers pong."),
          ),
    )),
    Session("billing-3", "2026-09-20T14:33:02", "feat/invoice-lock", (
        T("Two workers sometimes run the invoice batch at the same time. We'll use Postgres advisory locks "
          "instead of Redis locks for the invoice run, so a crashed worker releases its lock with its "
          "connection.",
          Write("billing/locks.py", "from contextlib import contextmanager\n\nfrom sqlalchemy import text\n\n"
                "INVOICE_RUN_LOCK = 4242\n\n\n@contextmanager\ndef advisory_lock(conn, key: int):\n    got = "
                "conn.execute(text(\"SELECT pg_try_advisory_lock(:k)\"), {\"k\": key}).scalar()\n    ...\n"),
          Edit("billing/tasks.py", "def run_invoices():\n    for account in due_accounts():",
               "def run_invoices():\n    with advisory_lock(conn, INVOICE_RUN_LOCK):\n        for account in "
               "due_accounts():"),
          Bash("poetry run pytest", "============================== 91 passed in 4.40s "
               "==============================", seconds=6.0, description="Run the tests"),
          Say("The invoice run takes `pg_try_advisory_lock(4242)` (`billing/locks.py`); a second worker skips "
              "the run. 91 tests pass."),
          ),
    )),
    Session("billing-4", "2026-09-27T10:11:45", "fix/migrations", (
        T("Apply the migrations locally, I just merged main.",
          Bash("poetry run alembic upgrade head", "ERROR [alembic.util.messaging] Multiple head revisions are "
               "present for given argument 'head'; please specify a specific target revision, '<branchname>@"
               "head' to narrow to a specific head, or 'heads' for all heads\n  FAILED: Multiple head revisions "
               "are present for given argument 'head'", error=True, exit_code=255, seconds=2.0,
               description="Apply migrations"),
          Bash("poetry run alembic heads", "3f2a1c9d7e10 (head)\n9c1d4b2a6f03 (head)", description="List heads"),
          Bash("poetry run alembic merge -m 'merge invoice and refund heads' 3f2a1c9d7e10 9c1d4b2a6f03",
               "Generating /home/dev/code/billing-worker/migrations/versions/b7e2f0c4d915_merge_invoice_and_"
               "refund_heads.py ...  done", description="Merge the heads"),
          Bash("poetry run alembic upgrade head", "INFO  [alembic.runtime.migration] Running upgrade "
               "3f2a1c9d7e10, 9c1d4b2a6f03 -> b7e2f0c4d915, merge invoice and refund heads",
               description="Apply migrations again"),
          Say("Main had two migration heads (invoices and refunds). I created a merge revision with `poetry "
              "run alembic merge`, then `alembic upgrade head` ran."),
          ),
    )),
    Session("billing-5", "2026-10-04T15:40:10", "test/integration", (
        T("Run the integration tests.",
          Bash("make test-integration", "poetry run pytest tests/integration\nERROR tests/integration/"
               "test_invoice_run.py - sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection "
               "to server at \"localhost\" (127.0.0.1), port 5432 failed: FATAL:  database \"billing_test\" "
               "does not exist\n1 error in 0.93s\nmake: *** [Makefile:23: test-integration] Error 1",
               error=True, exit_code=2, seconds=3.0, description="Run the integration tests"),
          Bash("make db-create-test", "createdb -h localhost -U postgres billing_test\npoetry run alembic -x "
               "db=test upgrade head", seconds=4.0, description="Create the test database"),
          Bash("make test-integration", "poetry run pytest tests/integration\n======================= 17 passed "
               "in 9.82s =======================", seconds=12.0, description="Run the integration tests again"),
          Say("The integration tests need the `billing_test` database: `make db-create-test` creates and "
              "migrates it, then `make test-integration` passes (17 tests)."),
          ),
    )),
    Session("billing-6", "2026-10-11T09:26:33", "feat/invoice-pdf", (
        T("Generate invoice PDFs. Use WeasyPrint rather than wkhtmltopdf, wkhtmltopdf is unmaintained.",
          Bash("poetry add weasyprint", "Using version ^63.1 for weasyprint\n\nUpdating dependencies\nResolving "
               "dependencies... (1.8s)\n\nPackage operations: 7 installs, 0 updates, 0 removals\n\n  - "
               "Installing weasyprint (63.1)", seconds=9.0, description="Add WeasyPrint"),
          Write("billing/pdf.py", "from weasyprint import HTML\n\n\ndef render_invoice(invoice) -> bytes:\n"
                "    return HTML(string=invoice_html(invoice)).write_pdf()\n"),
          Bash("poetry run pytest tests/test_pdf.py", "E   OSError: cannot load library 'libpango-1.0-0': "
               "libpango-1.0-0: cannot open shared object file: No such file or directory.  Additionally, "
               "ctypes.util.find_library() did not manage to locate a library called 'libpango-1.0-0'\n"
               "ERROR tests/test_pdf.py - OSError: cannot load library 'libpango-1.0-0'\n1 error in 0.71s",
               error=True, exit_code=2, description="Run the PDF tests"),
          Say("WeasyPrint needs the Pango system libraries."),
          Refused("sudo apt-get install -y libpango-1.0-0 libpangoft2-1.0-0",
                  description="Install the Pango libraries"),
          ),
        T("Never run sudo on my machine. Add the libs to the Dockerfile and run the tests in the container.",
          Edit("Dockerfile", "RUN apt-get update && apt-get install -y --no-install-recommends libpq5",
               "RUN apt-get update && apt-get install -y --no-install-recommends libpq5 libpango-1.0-0 "
               "libpangoft2-1.0-0"),
          Bash("docker compose run --rm worker poetry run pytest tests/test_pdf.py",
               "======================= 5 passed in 2.31s =======================", seconds=70.0,
               description="Run the PDF tests in the container"),
          Say("The Dockerfile installs Pango now; the PDF tests pass inside the worker container."),
          ),
    )),
    Session("billing-7", "2026-10-19T13:14:57", "feat/charge-retries", (
        T("Failed charge tasks should retry with exponential backoff, max 5 retries. I prefer autoretry_for "
          "with retry_backoff over manual self.retry calls.",
          Edit("billing/tasks.py", "@app.task(bind=True)\ndef charge(self, invoice_id):",
               "@app.task(autoretry_for=(GatewayTimeout,), retry_backoff=True, retry_backoff_max=600, "
               "max_retries=5)\ndef charge(invoice_id):"),
          Bash("poetry run pytest tests/test_tasks.py", "======================= 33 passed in 1.92s "
               "=======================", seconds=3.0, description="Run the task tests"),
          Say("`charge` retries `GatewayTimeout` with exponential backoff (capped at 10 minutes), at most 5 "
              "times."),
          ),
    )),
    Session("billing-8", "2026-11-05T10:02:26", "chore/lint", (
        T("Run the linters before the release.",
          Bash("poetry run flake8 billing tests", "billing/tasks.py:14:101: E501 line too long (118 > 100 "
               "characters)\nbilling/pdf.py:3:1: E302 expected 2 blank lines, found 1", error=True,
               description="Run flake8"),
          Bash("poetry run black billing tests", "reformatted billing/pdf.py\nreformatted billing/tasks.py\n\nAll "
               "done! ✨ 🍰 ✨\n2 files reformatted, 31 files left unchanged.", description="Format with black"),
          Bash("poetry run flake8 billing tests", "", description="Run flake8 again"),
          Say("flake8 reported two style errors; `poetry run black billing tests` reformatted both files and "
              "flake8 is clean."),
          ),
    )),
    Session("billing-9", "2026-11-19T08:44:12", "feat/monthly-run", (
        T("Schedule the monthly invoice run on the 1st at 02:00 UTC with celery beat.",
          Edit("billing/schedule.py", "beat_schedule = {", "beat_schedule = {\n    \"monthly-invoice-run\": {\n"
               "        \"task\": \"billing.tasks.run_invoices\",\n        \"schedule\": crontab(minute=0, hour=2,"
               " day_of_month=1),\n    },"),
          Bash("poetry run pytest tests/test_schedule.py", "======================= 4 passed in 0.38s "
               "=======================", description="Run the schedule tests"),
          Say("Celery beat runs `run_invoices` at 02:00 UTC on the 1st of each month "
              "(`monthly-invoice-run`)."),
          ),
    )),
)

BILLING_QUESTIONS = (
    Q("How do I add a dependency in this repo?", "preference", [["poetry"]], ["billing-1"], [["uv add"]]),
    Q("How do I install the dependencies?", "pattern", [["poetry install"]], ["billing-1"], [["uv sync"]]),
    Q("How do I run the tests?", "pattern", [["poetry run pytest"]], ["billing-1"], [["uv run pytest"]]),
    Q("How do I run the integration tests?", "pattern", [["make test-integration"]], ["billing-5"],
      [["-m integration"], ["-tags=integration"]]),
    Q("The integration tests say database billing_test does not exist, what's the fix?", "learning",
      [["make db-create-test"]], ["billing-5"]),
    Q("Celery can't connect to amqp on port 5672, what do I need to start?", "learning",
      [["docker compose up -d rabbitmq"]], ["billing-2"], [["docker compose up -d postgres"]]),
    Q("How do I check that the worker is alive?", "pattern", [["inspect ping"]], ["billing-2"]),
    Q("How do we stop two workers running the invoice batch at once?", "decision", [["advisory locks"]],
      ["billing-3"], [["processed_events"]]),
    Q("Why advisory locks rather than Redis locks?", "decision", [["crashed worker"]], ["billing-3"]),
    Q("alembic complains about multiple head revisions, what did we do?", "learning", [["alembic merge"]],
      ["billing-4"], [["alembic stamp"]]),
    Q("Which library generates the invoice PDFs?", "decision", [["weasyprint"]], ["billing-6"]),
    Q("Why not wkhtmltopdf?", "decision", [["unmaintained"]], ["billing-6"]),
    Q("The PDF tests fail with cannot load library libpango, how do we run them?", "learning",
      [["docker compose run"]], ["billing-6"]),
    Q("Can I install the missing system packages with sudo?", "preference", [["sudo", "Dockerfile"]],
      ["billing-6"]),
    Q("How should Celery tasks retry?", "preference", [["autoretry_for"]], ["billing-7"]),
    Q("How many times does a failed charge retry?", "context", [["5 retries"]], ["billing-7"]),
    Q("Which formatter and linter does this project use?", "pattern", [["black"], ["flake8"]], ["billing-8"],
      [["ruff"]]),
    Q("When does the monthly invoice run happen?", "context", [["02:00"]], ["billing-9"]),
    Q("Which message broker does the worker use?", "context", [["rabbitmq"]], ["billing-2"]),
    Q("Where is the invoice run lock implemented?", "context", [["locks.py"]], ["billing-3"]),
    Q("Where did we add the Pango libraries?", "context", [["Dockerfile"]], ["billing-6"]),
    Q("What is the difference between a process and a thread?", "none", [], []),
)

# =========================================================================== all projects

PROJECTS: tuple[Project, ...] = (
    Project("ledger-api", LEDGER, "2.1.63", "claude-opus-4-6", "2026-11-23T09:30:00Z",
            LEDGER_SESSIONS, LEDGER_QUESTIONS),
    Project("storefront-web", STORE, "2.1.59", "claude-sonnet-4-5-20250929", "2026-11-23T10:05:00Z",
            STORE_SESSIONS, STORE_QUESTIONS),
    Project("ingest-gateway", GATEWAY, "2.1.63", "claude-opus-4-6", "2026-11-23T11:40:00Z",
            GATEWAY_SESSIONS, GATEWAY_QUESTIONS),
    Project("platform-infra", INFRA, "2.1.61", "claude-opus-4-6", "2026-11-23T14:10:00Z",
            INFRA_SESSIONS, INFRA_QUESTIONS),
    Project("billing-worker", BILLING, "2.1.63", "claude-sonnet-4-5-20250929", "2026-11-23T15:20:00Z",
            BILLING_SESSIONS, BILLING_QUESTIONS),
)
