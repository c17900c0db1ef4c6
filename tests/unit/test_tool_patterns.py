"""tool_patterns: commands classified, failures inferred, and events turned into stable pattern statements."""

from __future__ import annotations

import random

import pytest

from cems_cli.capture import safe_text
from cems_cli.capture.bash_outcome import bash_failed
from cems_cli.capture.command_kinds import parse_command
from cems_cli.capture.error_lines import error_line
from cems_cli.capture.tool_patterns import ToolEvent, derive_statements
from cems_cli.text import _redact_shapes, redact

CWD = "/home/dev/acme-api"
PROJECT = "project:acme/api"

PYTEST_FAILED = """\
F.........                                                               [100%]
=================================== FAILURES ===================================
_________________________________ test_config __________________________________

    def test_config():
>       settings = Settings()
E       KeyError: 'REDIS_URL'

tests/test_config.py:9: KeyError
=========================== short test summary info ============================
FAILED tests/test_config.py::test_config - KeyError: 'REDIS_URL'
1 failed, 41 passed in 0.52s
"""
PYTEST_PASSED = "..........................................                 [100%]\n42 passed in 0.49s\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.count = 0

    def __call__(self) -> float:
        self.now += 7.0
        self.count += 1
        return self.now


def bash(
    clock: Clock, command: str, stdout: str = "", stderr: str = "", session: str = "s1", **extra
) -> ToolEvent:
    return ToolEvent(
        tool_use_id=f"toolu_{clock.count}",
        session_id=session,
        tool_name="Bash",
        cwd=CWD,
        received_at=clock(),
        tool_input={"command": command},
        tool_response={"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False},
        **extra,
    )


def edit(clock: Clock, path: str, session: str = "s1") -> ToolEvent:
    return ToolEvent(
        tool_use_id=f"toolu_{clock.count}",
        session_id=session,
        tool_name="Edit",
        cwd=CWD,
        received_at=clock(),
        tool_input={"file_path": f"{CWD}/{path}", "old_string": "a", "new_string": "b"},
        tool_response={"filePath": f"{CWD}/{path}"},
    )


# --- what a command is ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind", "canonical"),
    [
        ("pytest -q", "test", "pytest -q"),
        ("cd api && FOO=1 pytest -q tests/test_x.py -k redis 2>&1 | tail -20", "test", "cd api && pytest -q"),
        ("uv run pytest -x --basetemp=/tmp/bt-$RANDOM", "test", "uv run pytest -x"),
        (f"{CWD}/.venv/bin/python -m pytest tests/unit -q", "test", ".venv/bin/python -m pytest -q"),
        ("npm test", "test", "npm test"),
        ("npm run test:unit -- --watch=false", "test", "npm run test:unit -- --watch=false"),
        ("sudo -E timeout 60 go test ./...", "test", "go test ./..."),
        ("ruff check .", "lint", "ruff check ."),
        ("npx eslint src/", "lint", "npx eslint"),
        ("ruff format --check .", "format", "ruff format --check ."),
        ("npx tsc --noEmit", "typecheck", "npx tsc --noEmit"),
        ("mypy src", "typecheck", "mypy src"),
        ("npm run build", "build", "npm run build"),
        ("cargo build --release", "build", "cargo build --release"),
        ("npm install lodash --save", "install", "npm install"),
        ("pip install -e . redis", "install", "pip install -e ."),
        ("uv pip install -r requirements.txt", "install", "uv pip install -r requirements.txt"),
        ("yarn", "install", "yarn"),
        ("docker compose up -d", "tool", "docker compose up -d"),
        ("python manage.py migrate", "migrate", "python manage.py migrate"),
        ("uv run alembic upgrade head", "migrate", "uv run alembic upgrade head"),
        ("terraform validate", "lint", "terraform validate"),
        ("helm lint charts/platform", "lint", "helm lint"),
        ("terraform fmt -recursive", "format", "terraform fmt -recursive"),
        ("sqlc generate", "generate", "sqlc generate"),
        ("make deploy-staging", "deploy", "make deploy-staging"),
        ("git status", None, "git status"),
        ("grep -rn REDIS_URL src/", None, "grep -rn REDIS_URL"),
        # a project's own test runner, run as a script (Django, SymPy, shell scripts)
        ("python tests/runtests.py aggregation -v 2", "test", "python tests/runtests.py aggregation -v 2"),
        ("cd tests && ./runtests.py migrations.test_commands", "test",
         "cd tests && ./runtests.py migrations.test_commands"),
        ("bin/test sympy/combinatorics/tests/test_permutations.py", "test", "bin/test"),
        ("./scripts/run_tests.sh", "test", "./scripts/run_tests.sh"),
        ("test -f setup.py", None, "test -f"),  # the shell's builtin
        ("python tests/test_views.py", None, "python tests/test_views.py"),
    ],
)
def test_commands_are_classified(command, kind, canonical):
    segments = [s for s in parse_command(command, CWD) if s.kind or len(parse_command(command, CWD)) == 1]
    assert (segments[-1].kind, segments[-1].canonical) == (kind, canonical)


def test_a_command_line_holds_several_commands_and_pipes_are_filters():
    segments = parse_command("npm ci && npm test | tee out.log\ncargo build", CWD)
    assert [(s.kind, s.canonical) for s in segments] == [
        ("install", "npm ci"),
        ("test", "npm test"),
        ("build", "cargo build"),
    ]


def test_unbalanced_quotes_do_not_break_parsing():
    assert parse_command('echo "unterminated && pytest', CWD)[0].tool == "echo"


# --- did it fail? ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "stderr", "failed"),
    [
        (PYTEST_FAILED, "", True),
        (PYTEST_PASSED, "", False),
        # A test that logs a handled traceback still passed: the summary decides.
        ("Traceback (most recent call last):\nValueError: boom\n" + PYTEST_PASSED, "", False),
        ("", "npm ERR! code ERESOLVE\nnpm ERR! Could not resolve dependency", True),
        ("", "bash: line 1: pyest: command not found", True),
        (
            "",
            "To github.com:acme/api.git\n   1a2b3c..4d5e6f  main -> main",
            False,
        ),  # git writes progress here
        ("", "npm WARN deprecated inflight@1.0.6: not supported", False),
        ("src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.", "", True),
        ("make: *** [Makefile:12: test] Error 1", "", True),
        ("Found 3 errors.\n[*] 2 fixable with the `--fix` option.", "", True),
        ("All checks passed!", "", False),
        ("--- FAIL: TestRedis (0.00s)\nFAIL\tgithub.com/acme/api\t0.01s", "", True),
        ("ok  \tgithub.com/acme/api\t0.01s", "", False),
    ],
)
def test_bash_failure_is_inferred_from_output(stdout, stderr, failed):
    assert bash_failed(bash(Clock(), "cmd", stdout, stderr)) is failed


def test_interruption_and_failure_events_are_failures_whatever_the_output():
    clock = Clock()
    interrupted = bash(clock, "pytest", PYTEST_PASSED, interrupted=True)
    failure = bash(clock, "pytest", "", failure_event=True, error="Exit code 1")
    assert bash_failed(interrupted) and bash_failed(failure)


def test_error_line_is_the_most_telling_line():
    assert error_line(PYTEST_FAILED) == "KeyError: 'REDIS_URL'"  # more in test_error_lines.py


# --- statements -----------------------------------------------------------------------------------------


def realistic_sequence() -> list[ToolEvent]:
    """pytest fails → Edit → pytest passes; npm install; one file edited again and again over two sessions."""
    clock = Clock()
    return [
        bash(clock, "pytest -q", PYTEST_FAILED),
        edit(clock, "src/acme/config.py"),
        bash(clock, "pytest -q tests/test_config.py", PYTEST_PASSED),
        bash(clock, "cd web && npm install react-query", "added 3 packages in 2s"),
        edit(clock, "src/acme/cache.py"),
        edit(clock, "src/acme/cache.py"),
        edit(clock, "src/acme/cache.py", session="s2"),
        edit(clock, "src/acme/cache.py", session="s2"),
        bash(clock, "docker compose up -d redis", "Container acme-redis-1  Started", session="s2"),
    ]


def test_a_realistic_sequence_gives_the_expected_statements():
    statements = derive_statements(PROJECT, realistic_sequence())
    assert [s.text for s in statements] == [
        "In project acme/api `pytest -q` failed with `KeyError: 'REDIS_URL'`; it passed after editing "
        "src/acme/config.py.",
        "In project acme/api the tests run with `pytest -q`.",
        "In project acme/api dependencies are installed with `cd web && npm install` (npm).",
        "In project acme/api the file `src/acme/cache.py` changes often: it was edited in several sessions.",
    ]
    assert {s.kind for s in statements} == {"fix", "test", "install", "hot_file"}
    assert statements[-1].session_id == "s2"  # the edit that made it true


def test_statements_are_deterministic_and_do_not_change_as_events_accumulate():
    events = realistic_sequence()
    first = derive_statements(PROJECT, events)
    shuffled = list(events)
    random.Random(7).shuffle(shuffled)
    assert derive_statements(PROJECT, shuffled) == first  # ordered by capture time, not input order
    clock = Clock()
    clock.now = events[-1].received_at
    more = [*events, bash(clock, "pytest -q", PYTEST_PASSED), edit(clock, "src/acme/cache.py", session="s3")]
    later = derive_statements(PROJECT, more)
    assert later[: len(first)] == first  # earlier statements keep their exact text: no counts in them


def test_a_pass_without_any_change_is_not_a_fix():
    clock = Clock()
    statements = derive_statements(
        PROJECT, [bash(clock, "pytest -q", PYTEST_FAILED), bash(clock, "pytest -q", PYTEST_PASSED)]
    )
    assert [s.kind for s in statements] == ["test"]


def test_an_install_between_failure_and_success_is_the_fix():
    clock = Clock()
    failure = "E   ModuleNotFoundError: No module named 'redis'\n1 failed in 0.10s"
    events = [
        bash(clock, "pytest -q", failure),
        bash(clock, "pip install redis", "Successfully installed redis-5.0.1"),
        bash(clock, "pytest -q", PYTEST_PASSED),
    ]
    [fix] = [s for s in derive_statements(PROJECT, events) if s.kind == "fix"]
    assert fix.text == (
        "In project acme/api `pytest -q` failed with `ModuleNotFoundError: No module named 'redis'`; "
        "it passed after running `pip install redis`."
    )


def test_failure_and_fix_must_happen_in_the_same_session():
    clock = Clock()
    events = [
        bash(clock, "pytest -q", PYTEST_FAILED, session="a"),
        edit(clock, "src/acme/config.py", session="b"),
        bash(clock, "pytest -q", PYTEST_PASSED, session="b"),
    ]
    assert [s.kind for s in derive_statements(PROJECT, events)] == ["test"]


def test_a_file_edited_in_one_session_only_is_not_hot():
    clock = Clock()
    events = [edit(clock, "src/app.py") for _ in range(6)]
    assert derive_statements(PROJECT, events) == []


def test_using_a_developer_tool_is_not_a_pattern():
    """"The `alembic` command-line tool is used" tells a developer nothing: no statement, however often."""
    clock = Clock()
    events = [
        bash(clock, "alembic stamp head", "INFO  [alembic] Running stamp_revision"),
        bash(clock, "alembic revision -m 'add users'", "Generating ok"),
        bash(clock, "kubectl get pods", "NAME READY"),
        bash(clock, "kubectl get pods", "NAME READY"),
    ]
    assert derive_statements(PROJECT, events) == []


def test_failed_commands_are_not_patterns():
    clock = Clock()
    events = [
        bash(clock, "npm test", "", 'npm ERR! Missing script: "test"'),
        bash(clock, "pip install nope", "", "ERROR: Could not find a version that satisfies the requirement"),
    ]
    assert derive_statements(PROJECT, events) == []


def test_read_only_and_unknown_tools_are_ignored():
    clock = Clock()
    events = [
        ToolEvent("t1", "s1", "Read", CWD, clock(), tool_input={"file_path": f"{CWD}/README.md"}),
        ToolEvent("t2", "s1", "mcp__github__create_issue", CWD, clock(), tool_input={"title": "x"}),
        ToolEvent("t3", "s1", "Bash", CWD, clock(), tool_input={}),
    ]
    assert derive_statements(PROJECT, events) == []


# --- the hook's redaction shortcut ----------------------------------------------------------------------


def test_the_shortcut_knows_every_secret_shape_redaction_has():
    """When redaction learns a new kind of secret, safe_text._SHAPE_TRIGGERS must learn its trigger too."""
    assert _redact_shapes._SHAPE_KINDS == safe_text.REDACTION_KINDS


SECRETS = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
    "psql postgres://app:s3cr3tpw@db.internal:5432/app",
    "curl -H 'Authorization: Bearer abcdef0123456789abcdef'",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
    "sk-proj-abc123def456ghi789jkl012mno345",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "xoxb-123456789012-abcdefghijkl",
    "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "DB_PASSWORD=hunter2",
    "deploy --token abc123xyz",
    '{"api_key": "abc123"}',
    "see <private>my home address</private>",
]


@pytest.mark.parametrize("text", SECRETS)
def test_the_shortcut_never_skips_a_secret(text):
    assert redact.sanitize_for_storage(text) != text  # the sample really is a secret
    assert safe_text.may_need_redaction(text)
    assert safe_text.may_need_redaction(text.upper()) and safe_text.may_need_redaction(f"ok\n{text}\nok")


CLEAN_OUTPUTS = [
    'src/acme/config.py:14:    redis_url: str = os.environ["REDIS_URL"]',
    PYTEST_PASSED,
    "added 3 packages, and audited 120 packages in 2s\nfound 0 vulnerabilities",
    "On branch main\nnothing to commit, working tree clean",
]


@pytest.mark.parametrize("text", CLEAN_OUTPUTS)
def test_the_shortcut_skips_plain_output(text):
    assert not safe_text.may_need_redaction(text)
    assert redact.sanitize_for_storage(text) == text


def test_the_shortcut_is_never_wrong_on_random_text():
    """Property: whenever the shortcut says "nothing to redact", redaction indeed changes nothing."""
    rng = random.Random(1234)
    pieces = [
        *("pass", "word", "=", ":", " ", "--", "key", "token", "AKIA", "ghp_", "https://", "u:p@h", "<", ">"),
        *("private", "sk-", "abc", "0123456789", "ABCDEFGHIJKLMNOP", "\n", '"', "eyJ", ".", "_", "Bearer"),
    ]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        if not safe_text.may_need_redaction(text):
            assert redact.sanitize_for_storage(text) == text, text
