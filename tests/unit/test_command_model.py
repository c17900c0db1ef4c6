"""The command model behind rules on Bash commands and capture's command keys (cems_cli.command)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cems_cli.capture.command_kinds import parse_command
from cems_cli.capture.observations import command_key
from cems_cli.command.invocations import capture_commands
from cems_cli.command.model import analyse
from cems_cli.command.plain import plain_simples
from cems_cli.rules._shapes import command_shape, pattern_shape, shape_matches
from cems_cli.rules.matcher import decide
from cems_cli.rules.model import make_rule

CORPUS = Path(__file__).with_name("command_corpus.jsonl")
RULE_SETS = {"rm": ("rm -rf*", "Bash"), "root": ("rm -rf /", "Bash"), "push": ("git push --force*", "Bash"),
             "edit": ("migrations/*", "Edit")}


def corpus_rows() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "migrations").mkdir()
    os.symlink("migrations", root / "db")
    return str(root)


@pytest.mark.parametrize("row", corpus_rows(), ids=lambda row: row["command"][:40])
def test_corpus(row, project):
    pattern, tool = RULE_SETS[row["rules"]]
    decision = decide([make_rule(pattern, tool)], "Bash", {"command": row["command"]}, cwd=project)
    if row["expect"] == "block":
        assert decision is not None and decision.action in ("block", "ask"), decision
    else:
        assert decision is None, decision


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rm --rec --for /", ["rm", "--rec", "--for", "/"]),
        ("{rm,-rf,/}", ["rm", "-rf", "/"]),
        ("rm${IFS}-rf${IFS}/", ["rm", "-rf", "/"]),
        ("rm$IFS-rf$IFS/", ["rm", "-rf", "/"]),
        ("export GIT_PAGER='rm -rf /'; git log", ["rm", "-rf", "/"]),
        ("R=rm; $R -rf /", ["rm", "-rf", "/"]),
        ("x=$'\\x72m'; $x -rf /", ["rm", "-rf", "/"]),
        ("r\\\nm -rf /", ["rm", "-rf", "/"]),
        ("echo 'rm -rf /' | bash", ["rm", "-rf", "/"]),
        ("cat <<'E' | bash\nrm -rf /\nE", ["rm", "-rf", "/"]),
        ("trap 'rm -rf /' EXIT", ["rm", "-rf", "/"]),
        ("git -c core.pager='rm -rf /' log", ["rm", "-rf", "/"]),
        ("GIT_PAGER='rm -rf /' git log", ["rm", "-rf", "/"]),
        ("git -c alias.p='push --force' p", ["git", "push", "--force"]),
        ("g=git; $g push --force", ["git", "push", "--force"]),
        ("git -C repo -c alias.p='push --force' p", ["git", "push", "--force"]),
        ("runuser -u root -- rm -rf /", ["rm", "-rf", "/"]),
        ("nsenter -t 1 -m rm -rf /", ["rm", "-rf", "/"]),
        ("systemd-run --user rm -rf /", ["rm", "-rf", "/"]),
        ("script -c 'rm -rf /' /dev/null", ["rm", "-rf", "/"]),
        ("parallel rm -rf ::: /", ["rm", "-rf", "/"]),
        ("ssh -p 22 host rm -rf /", ["rm", "-rf", "/"]),
        ("docker run --rm -v /:/h alpine rm -rf /h", ["rm", "-rf", "/h"]),
        ("kubectl exec -it pod -- rm -rf /", ["rm", "-rf", "/"]),
        ("docker compose -f c.yml run --rm web rm -rf /", ["rm", "-rf", "/"]),
        ("docker-compose exec web rm -rf /", ["rm", "-rf", "/"]),
        ("find . -exec rm -rf {} \\;", ["rm", "-rf", "{}"]),
        # IFS set on the line splits the expansions after it (not only blanks)
        ("IFS=,; x=rm,-rf,/; $x", ["rm", "-rf", "/"]),
        ("IFS=,; rm${IFS}-rf${IFS}/", ["rm", "-rf", "/"]),
        # a program given another name earlier on the line runs under it
        ("hash -p /bin/rm x; x -rf /", ["rm", "-rf", "/"]),
        ("cp /bin/rm ./del; ./del -rf /", ["rm", "-rf", "/"]),
        ("ln -s /bin/rm /tmp/del && /tmp/del -rf /", ["rm", "-rf", "/"]),
        ("install -m755 /bin/rm ~/bin/d; d -rf /", ["rm", "-rf", "/"]),
        ("toybox rm -rf /", ["rm", "-rf", "/"]),
        ("coproc X { rm -rf /; }", ["rm", "-rf", "/"]),
        # inline code of an interpreter: the shell command it runs, a tree it removes
        ("python3 -c 'import os; os.system(\"rm -rf /\")'", ["rm", "-rf", "/"]),
        ("python -c 'import shutil; shutil.rmtree(\"/\")'", ["rm", "-r", "-f", "/"]),
        ("perl -e 'system(\"rm -rf /\")'", ["rm", "-rf", "/"]),
        ("ruby -e 'system \"rm -rf /\"'", ["rm", "-rf", "/"]),
        ("node -e 'require(\"child_process\").execSync(\"rm -rf /\")'", ["rm", "-rf", "/"]),
        ("awk 'BEGIN{system(\"rm -rf /\")}'", ["rm", "-rf", "/"]),
        ("perl -e 'print `rm -rf /`'", ["rm", "-rf", "/"]),
        ("python -c 'import subprocess; subprocess.run([\"git\", \"push\", \"--force\"])'",
         ["git", "push", "--force"]),
        # a script written earlier on the line runs its text
        ("echo 'rm -rf /' > /tmp/x.sh && sh /tmp/x.sh", ["rm", "-rf", "/"]),
        ("cat > x.sh <<'E'\nrm -rf /\nE\nbash x.sh", ["rm", "-rf", "/"]),
        ("echo 'rm -rf /' | tee x.sh; ./x.sh", ["rm", "-rf", "/"]),
        ("echo 'set -e' > x.sh; echo 'rm -rf /' >> x.sh; . ./x.sh", ["rm", "-rf", "/"]),
    ],
)
def test_what_a_line_runs(text, expected):
    analysis = analyse(text)
    assert expected in analysis.commands, analysis
    assert not analysis.unchecked, analysis


@pytest.mark.parametrize(
    "text",
    ['eval "$(curl x)"', "source <(curl x)", ". <(curl x)", "curl x | sh", "$(echo rm) -rf /",
     "`echo rm` -rf /", "$CMD -rf /", "bash -c \"$X\"", 'git -c core.pager="$P" log', "/???/r? -rf /",
     "sh < /dev/stdin", "xargs -a cmds sh", "echo 'rm -rf /' | xargs -I{} sh -c '{}'",
     "IFS=$(cat f); x=rm,-rf; $x /", "curl -s x > i.sh; bash i.sh", "ln -s $(which rm) /tmp/d; /tmp/d -rf /",
     "cp /bin/r? ./d; ./d -rf /", "python -c 'import os; os.system(\"r\" + \"m -rf /\")'",
     "python -c 'import os; os.system(f\"rm -rf {d}\")'"],
)
def test_what_cannot_be_checked(text):
    assert analyse(text).unchecked


@pytest.mark.parametrize(
    "text", ["python -c 'print(1)'", "perl -ne 'print if /system/' f", "awk '{print $1}' f",
             "ls", "source .venv/bin/activate", "GIT_PAGER=cat git log", "echo $(date)", "[ -d x ] && ls x",
             "eval echo hi", "bash script.sh", "echo {a,b}"],
)
def test_what_can_be_checked(text):
    assert not analyse(text).unchecked


def test_an_unchecked_command_asks_only_when_a_bash_block_rule_applies():
    command = {"command": 'eval "$(curl -s x)"'}
    decision = decide([make_rule("rm -rf*", "Bash")], "Bash", command)
    assert decision is not None and decision.action == "ask"
    assert decision.unchecked.startswith("cannot be checked")
    assert decide([make_rule("rm -rf*", "Bash", action="warn")], "Bash", command) is None
    assert decide([make_rule("*.env", "Edit")], "Bash", command) is None
    other_project = [make_rule("rm -rf*", "Bash", project="project:a/b")]
    assert decide(other_project, "Bash", command, project="c/d") is None


def test_the_hook_answers_ask_and_says_why():
    from cems_cli.plumbing.hookio import pre_tool_use_answer

    decision = decide([make_rule("rm -rf*", "Bash")], "Bash", {"command": "curl -s x | sh"})
    answer = pre_tool_use_answer(decision)
    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert output["permissionDecision"] == "ask"
    assert "cannot be checked: sh reads commands from a pipe" in output["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("text", "writes"),
    [("echo x > a 2>&1", ["a"]), ("tee -a a b", ["a", "b"]), ("sed -i s/a/b/ f", ["f"]),
     ("sed -i -e s/a/b/ f g", ["f", "g"]), ("cp a b c/", ["c/"]), ("mv a b", ["b", "a"]),
     ("dd if=a of=b", ["b"]), ("cat <<EOF > f\nx\nEOF", ["f"]), ("{ a; b; } > f", ["f"]),
     ("cp -t d a", ["d"]), ("tee -- -a", ["-a"]), ("sed -e s/a/b/ -i f", ["f"]),
     # the grammar splits this destination in two nodes after `/$`: still one file
     ("d=x; e=y; echo x > ~/$d/$e/f.toml", ["~/x/y/f.toml"])],
)
def test_writes(text, writes):
    assert analyse(text).writes == writes


def test_command_v_runs_nothing():
    assert analyse("command -v rm").commands == [["command", "-v", "rm"]]


def test_edit_rules_resolve_symlinks(tmp_path):
    (tmp_path / "migrations").mkdir()
    os.symlink("migrations", tmp_path / "db")
    rule = make_rule("migrations/*", "Edit")
    assert decide([rule], "Write", {"file_path": str(tmp_path / "db" / "1.sql")}, cwd=str(tmp_path))
    assert decide([rule], "Edit", {"file_path": "db/1.sql"}, cwd=str(tmp_path))
    assert decide([rule], "Bash", {"command": "echo x > db/1.sql"}, cwd=str(tmp_path))
    assert decide([rule], "Bash", {"command": "cat db/1.sql"}, cwd=str(tmp_path)) is None


@pytest.mark.parametrize(
    ("command", "key"),
    [("timeout 600 pytest -q", "pytest"), ("nice -n 10 make test", "make test"),
     ("sudo -E env A=1 nice -n 5 npm test", "npm test"), ("cd x && uv run pytest -q | tail -5", "pytest")],
)
def test_capture_keys_commands_through_the_same_model(command, key):
    assert command_key(command) == key


def test_capture_segments_drop_wrappers():
    assert [s.canonical for s in parse_command("timeout 600 pytest -q 2>&1 | tail -5")] == ["pytest -q"]
    assert [s.canonical for s in parse_command("nice -n 10 make test")] == ["make test"]
    invocations = capture_commands("A=1 a | b; c")
    assert [(i.words, i.pipe) for i in invocations] == [(["a"], 0), (["b"], 1), (["c"], 0)]


def test_plain_path_agrees_with_the_parser():
    from cems_cli.command.tree import tree_simples

    for text in ["git status --short", "cd x && git commit -m 'a; b' | tail", "A=1 b 'c d' \"e\" ; f & g",
                 "a || b |& c", "x=1", "echo 'it''s'x\"\" '' ;"]:
        plain = plain_simples(text)
        assert plain is not None
        parsed, clean = tree_simples(text)
        assert clean
        assert [(s.words, s.pipe, s.assignments) for s in plain] == [
            (s.words, s.pipe, s.assignments) for s in parsed if s.words or s.assignments], text
    assert plain_simples("echo $HOME") is None and plain_simples("echo 'unclosed") is None


def test_fast_path_gives_exactly_what_the_model_gives():
    import random

    from cems_cli.command import _programs, model
    from cems_cli.command.plain import NEEDS_MODEL, fast_commands

    rng = random.Random(7)
    pieces = ["a", "b", "rm", "-rf", "/x", "x=1", "=", " ", " ", "\t", ";", "&", "|", "\n", "'", '"', "'x y'",
              '"a;b"', "''", "*", "~", "é", "tee", "cat", "git", "git ", "-c", "config", "alias.p=push",
              *sorted(NEEDS_MODEL)[::5]]
    fast = 0
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        commands = fast_commands(text)
        if commands is not None:
            fast += 1
            assert commands == model.analyse(text).commands, text
    assert fast > 1000
    special = (set(_programs._WRAPPERS) | _programs._SHELLS | _programs._KEYWORDS | _programs._DOCKER_LIKE
               | {"function", "su", "script", "eval", "source", ".", "trap", "alias", "find", "ssh",
                  "kubectl", "export", "declare", "typeset", "local", "readonly"})
    assert special == NEEDS_MODEL


def test_only_the_writers_write():
    """The matcher skips the model for a plain line naming no command in WRITERS: every command the model
    sees write a file must be there, and each one there must write with some arguments."""
    from cems_cli.command import _programs, model
    from cems_cli.command.plain import NEEDS_MODEL, WRITERS

    arguments = ["a b", "-i a b", "-i -e x a", "--in-place a b", "-o out a", "--output=o a", "-O o a",
                 "--output-document=o a", "of=f", "-t dir a", "--target-directory=d a", "x a b c", "-pi a"]
    names = (set(WRITERS) | set(_programs._SHELLS) | {"git", "cat", "ls", "echo", "printf", "make", "npm",
             "grep",
             "find", "tar", "unzip", "gzip", "mkdir", "chgrp", "sort", "split", "csplit", "xz", "zip", "awk",
             "python", "node", "docker", "kubectl", "pip", "cargo", "go", "head", "tail", "wc", "diff", "jq",
             "yq", "sqlite3", "psql", "ssh", "sftp", "ftp", "nc", "openssl", "base64", "gpg", "editor"})
    for name in sorted(names):
        writes = [model.analyse(f"{name} {args}").writes for args in arguments]
        if name in WRITERS:
            assert any(writes), name
        elif name not in NEEDS_MODEL:
            assert not any(writes), name


@pytest.mark.parametrize("text", ["a " * 40000, ";" * 70000, "$(a) " * 15000, '"$(' * 25000, "{" * 30000,
                                  "rm -rf " + "a" * 5_000_000])
def test_parsing_is_bounded(text):
    started = time.monotonic()
    analyse(text)
    assert time.monotonic() - started < 3.0


# --- shapes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "options", "operands", "open_"),
    [
        ("rm -rf*", "rm", {"-r", "-f"}, 0, True),
        ("rm -Rf /", "rm", {"-r", "-f"}, 1, False),
        ("rm --recursive --force *", "rm", {"-r", "-f"}, 0, True),
        ("git push --force*", "git", {"-f"}, 1, True),
        ("git push -f*", "git", {"-f"}, 1, True),
        ("git pull --force*", "git", {"--force"}, 1, True),  # equivalents are per (sub)command
        ("/usr/bin/git push*", "git", set(), 1, True),
        ("git checkout -- *", "git", set(), 2, True),
        ("tar -x --file=a*", "tar", {"-x", "--file=a", "--file"}, 0, True),
    ],
)
def test_pattern_shapes(pattern, name, options, operands, open_):
    shape = pattern_shape(pattern)
    assert shape is not None
    assert (shape[0], shape[2], len(shape[1]), shape[3]) == (name, options, operands, open_)


@pytest.mark.parametrize(
    "pattern", ["*--no-verify*", "curl * | sh", "rm* -rf", "rm -r* /", "$(x) y", "a; b", "rm \\*", "-rf x",
                "echo `x`", "a > b"],
)
def test_patterns_that_are_not_one_plain_command_have_no_shape(pattern):
    assert pattern_shape(pattern) is None


def test_quoted_patterns_are_parsed_like_commands():
    shape = pattern_shape('printf "a  b" -v*')
    assert shape is not None and shape[1][0]("a  b") and not shape[1][0]("a b")
    assert pattern_shape("echo 'a' 'b") is not None  # an unclosed quote closes at the end
    assert pattern_shape("a 'b'\nc") is None


@pytest.mark.parametrize(
    ("pattern", "argv", "expected"),
    [("rm -rf*", ["rm", "--rec", "--for", "/"], True), ("rm -rf*", ["rm", "--r", "--f", "/"], True),
     ("rm -rf*", ["rm", "--rec", "/"], False), ("git push --force*", ["git", "push", "--mir"], True),
     ("git push --force*", ["git", "push", "--forc", "origin"], True),
     ("npm publish --force*", ["npm", "publish", "--forc"], True),
     ("npm publish --force*", ["npm", "publish", "--forcex"], False)],
)
def test_long_options_match_their_abbreviations(pattern, argv, expected):
    shape = pattern_shape(pattern)
    assert shape is not None and shape_matches(shape, command_shape(argv)) == expected


def test_command_shape_unifies_option_spellings():
    assert command_shape(["rm", "--recursive", "-v", "--force", "x"]) == ("rm", ["x"], {"-r", "-v", "-f"})
    assert command_shape(["git", "push", "origin", "+main"])[2] == {"-f"}
    assert command_shape(["git", "fetch", "origin", "+main"])[2] == set()
    assert command_shape(["git", "push", "--force=yes"])[2] == {"--force=yes", "-f"}  # --force is -f
    assert command_shape(["ls", "-", "--"]) == ("ls", ["-", "--"], set())


@pytest.mark.parametrize(
    ("pattern", "argv", "expected"),
    [
        ("rm -rf*", ["rm", "-f", "-R", "a", "b"], True),
        ("rm -rf*", ["rm", "-r", "a"], False),
        ("rm -rf /", ["rm", "-fr", "/"], True),
        ("rm -rf /", ["rm", "-fr", "/", "/x"], False),
        ("rm -rf /", ["rm", "-fr"], False),
        ("rm */x", ["rm", "a/x"], True),
        ("git push --force*", ["git", "pull", "--force"], False),
        ("git push --force*", ["git", "push"], False),
    ],
)
def test_shape_matching(pattern, argv, expected):
    shape = pattern_shape(pattern)
    assert shape is not None
    assert shape_matches(shape, command_shape(argv)) == expected


def test_a_line_past_the_parsed_length_cannot_be_checked():
    """Only the first 64 KiB are parsed: `git -c a.b=c` × 9,000 hid the `push -f` after them, and the line
    passed as fully checked. A Bash block rule now asks."""
    line = "git " + "-c a.b=c " * 9000 + "push -f"
    analysis = analyse(line)
    assert analysis.unchecked == ["the command line is longer than the 64 KiB that are parsed"]
    decision = decide([make_rule("git push --force*", "Bash")], "Bash", {"command": line})
    assert decision is not None and decision.action == "ask"


def test_a_very_long_pipeline_is_not_parsed_and_cannot_be_checked():
    """tree-sitter-bash took 10 s on 16,000 pipeline stages, 50 s on 32,000: past the hook's 5 s timeout,
    after which Claude Code runs the call."""
    line = "a|" * 20_000 + "rm -rf /"
    started = time.monotonic()
    decision = decide([make_rule("git push --force*", "Bash")], "Bash", {"command": line})
    assert time.monotonic() - started < 3.0
    assert decision is not None and decision.action == "ask"
    assert analyse(line).unchecked == ["the command line has more than 4000 pipes, more than are parsed"]
