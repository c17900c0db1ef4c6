"""The line of a failure's output that capture keeps: what a later search for the same problem contains."""

import pytest

from cems_cli.capture.error_lines import error_line

CONFTEST_IMPORT = """Exit code 4
ImportError while loading conftest '/home/dev/code/api/tests/conftest.py'.
tests/conftest.py:6: in <module>
    from api.app import create_app
E   ModuleNotFoundError: No module named 'api'"""

TERRAFORM = """Exit code 1
╷
│ Error: Backend initialization required, please run "terraform init"
│
│ Reason: Backend configuration block has changed
╵"""

PLAYWRIGHT = """Exit code 1

Running 14 tests using 4 workers

  1) [chromium] › tests/e2e/home.spec.ts:4:5 › home › shows featured products

    Error: browserType.launch: Executable doesn't exist at /home/dev/.cache/ms-playwright/chromium/chrome
    ╔═════════════════════════════════════════════════════════╗
    ║ Looks like Playwright Test or Playwright was just installed or updated. ║
    ╚═════════════════════════════════════════════════════════╝

  14 failed"""

NEXT_BUILD = """Exit code 1
   Creating an optimized production build ...
Error: Invalid src prop (https://cdn.example.com/a.jpg) on `next/image`, hostname "cdn.example.com" is bad
 ELIFECYCLE  Command failed with exit code 1."""

GO_TEST = """Exit code 1
--- FAIL: TestRouter_Backpressure (0.02s)
    router_test.go:88: expected 429, got 200
FAIL
FAIL	github.com/acme/gateway/internal/router	0.118s
ok  	github.com/acme/gateway/internal/auth	0.412s
FAIL"""

MAKE_WRAPPED = """Exit code 2
poetry run pytest tests/integration
ERROR tests/integration/test_run.py - OperationalError: database "billing_test" does not exist
1 error in 0.93s
make: *** [Makefile:23: test-integration] Error 1"""

SQLC = """Exit code 1
# package db
queries/quotas.sql:2:1: column "burst_limit" does not exist"""

GOLANGCI = """Exit code 1
internal/stream/kafka.go:42:2: Error return value of `w.Close` is not checked (errcheck)
\tw.Close()
\t^
1 issues:
* errcheck: 1"""


@pytest.mark.parametrize(
    ("output", "line"),
    [
        # The exception pytest reports, not the line saying where it was raised.
        (CONFTEST_IMPORT, "ModuleNotFoundError: No module named 'api'"),
        # Frames drawn around a message are not part of it.
        (TERRAFORM, 'Error: Backend initialization required, please run "terraform init"'),
        # The runner's count and its wrapper's exit line say nothing of what went wrong.
        (PLAYWRIGHT, "Error: browserType.launch: Executable doesn't exist at "
                     "/home/dev/.cache/ms-playwright/chromium/chrome"),
        (NEXT_BUILD, "Error: Invalid src prop (https://cdn.example.com/a.jpg) on 'next/image', hostname "
                     '"cdn.example.com" is bad'),
        (MAKE_WRAPPED, 'ERROR tests/integration/test_run.py - OperationalError: database "billing_test" does '
                       "not exist"),
        # go test: the failing test's name and what it said, on one line.
        (GO_TEST, "--- FAIL: TestRouter_Backpressure (0.02s) router_test.go:88: expected 429, got 200"),
        (SQLC, 'queries/quotas.sql:2:1: column "burst_limit" does not exist'),
        (GOLANGCI,
         "internal/stream/kafka.go:42:2: Error return value of 'w.Close' is not checked (errcheck)"),
        ("Exit code 127\nbash: line 1: pyest: command not found", "bash: line 1: pyest: command not found"),
        ("Exit code 3\nmodules/eks/main.tf\nmodules/rds/variables.tf", "modules/eks/main.tf"),
    ],
)
def test_the_line_kept_is_the_one_naming_the_problem(output, line):
    assert error_line(output, 240) == line


def test_output_saying_nothing_more_than_its_exit_code_keeps_that():
    assert error_line("Exit code 1") == "Exit code 1"
    assert error_line("Exit code 1\n3 failed") == "Exit code 1"
    assert error_line("") == error_line("\n \n") == "an error"


def test_the_line_is_one_line_within_the_limit():
    line = error_line("Error: " + "x " * 300, limit=50)
    assert len(line) <= 50 and line.endswith("…") and "\n" not in line


def test_terminal_colours_and_cursor_moves_are_left_out():
    output = ("\x1b[1A\x1b[2K[WebServer] Error: \x1b[2mexpect(\x1b[22m\x1b[31mreceived\x1b[39m\x1b[2m)."
              "\x1b[22mtoBeTruthy()")
    assert error_line(output) == "[WebServer] Error: expect(received).toBeTruthy()"


def test_window_titles_and_colours_are_taken_out_of_text():
    from cems_cli.text.terminal import without_terminal_control

    assert without_terminal_control("Deploy \x1b]0;title\x07\x1b[31mred\x1b[0m done") == "Deploy red done"
