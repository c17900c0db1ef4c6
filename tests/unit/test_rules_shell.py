"""The shell lexer behind command rules: words as the shell sees them, every command a line runs."""

from __future__ import annotations

import random
import shlex
import time

import pytest

from cems_cli.rules import matcher, shell
from cems_cli.rules.matcher import command_shape, pattern_shape, plain_commands, shape_matches
from cems_cli.rules.shell import lex, simple_commands


def words(text: str) -> list[list[str]]:
    return [command.words for command in lex(text)[0]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("git status --short", [["git", "status", "--short"]]),
        ("  a\t b  ", [["a", "b"]]),
        ("a 'b c' \"d e\" f\\ g", [["a", "b c", "d e", "f g"]]),
        ("a'b'\"c\"d", [["abcd"]]),
        ("a '' \"\"", [["a", "", ""]]),
        ("a && b || c ; d | e & f |& g", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]),
        ("a;b&&c", [["a"], ["b"], ["c"]]),
        ("a\nb", [["a"], ["b"]]),
        ("(a; b) && { c; }", [["a"], ["b"], ["{", "c"], ["}"]]),
        ("a 'b;c' \"d&&e\"", [["a", "b;c", "d&&e"]]),
        # double quotes: backslash escapes only $ ` " \ and newline
        ('"a\\"b" "\\$x" "\\n"', [['a"b', "$x", "\\n"]]),
        ("'a\\'", [["a\\"]]),
        # comments start only at the beginning of a word
        ("a # b c", [["a"]]),
        ("a#b c", [["a#b", "c"]]),
        ("a # it's\nb", [["a"], ["b"]]),
        ("a;#x\nb", [["a"], ["b"]]),
        # line continuation
        ("a \\\nb", [["a", "b"]]),
        ("ab\\\ncd", [["abcd"]]),
        # ANSI-C quoting
        ("$'a\\tb' $'\\x41\\101\\u0042' $'it\\'s'", [["a\tb", "AAB", "it's"]]),
        ("$\"x y\"", [["x y"]]),
        # redirections take their target with them; descriptor numbers go too
        ("a > out 2>&1 < in b", [["a", "b"]]),
        ("a &>log; b >>log 2> err", [["a"], ["b"]]),
        ("echo 2 > x", [["echo", "2"]]),
        ("echo '2'>x", [["echo", "2"]]),
        # substitutions stay inside their word
        ("echo $(a b) `c d` \"$(e)\"", [["echo", "$(a b)", "`c d`", "$(e)"]]),
        ("echo $(a ')' b) c", [["echo", "$(a ')' b)", "c"]]),
        ("x=$((1 + 2))", [["x=$((1 + 2))"]]),
        # here-documents: the body is stdin, not commands, and quotes in it mean nothing
        ("cat <<EOF\nit's\nEOF\nb", [["cat"], ["b"]]),
        ("cat <<-EOF\n\tit's\n\tEOF\nb", [["cat"], ["b"]]),
        ("cat <<'A' && cat <<B\n1\nA\n2\nB\nc", [["cat"], ["cat"], ["c"]]),
    ],
)
def test_lexing(text, expected):
    assert words(text) == expected


def test_substituted_commands_are_collected():
    assert lex("a $(b c) `d` \"$(e $(f))\" <(g) >(h)")[1] == ["b c", "d", "e $(f)", "g", "h"]
    body = "$(a) `b` \\$(c)"
    assert lex(f"cat <<EOF\n{body}\nEOF")[1] == [body, "a", "b"]
    assert lex("cat <<'EOF'\n$(a)\nEOF")[1] == ["$(a)"]  # parsed as commands, but not substituted
    assert lex("echo '$(a)'")[1] == []


def test_here_document_bodies_are_parsed_apart_and_here_strings_are_stdin():
    commands, nested = lex("bash <<EOF\nrm x\nit's\nEOF\nsh <<< 'rm y'")
    assert [(c.words, c.stdin) for c in commands] == [(["bash"], []), (["sh"], ["rm y"])]
    assert nested == ["rm x\nit's"]
    assert ["rm", "y"] in simple_commands("sh <<< 'rm y'")
    assert ["rm", "y"] not in simple_commands("cat <<< 'rm y'")


def test_a_shift_that_looks_like_a_here_document_hides_nothing():
    assert ["rm", "-rf", "/"] in simple_commands("(( x = 1 << 2 ))\n\\rm -rf /")
    assert ["rm", "-rf", "/"] in simple_commands("let 'y=1'<<2\n\\rm -rf /\n2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/bin/rm -rf /", [["rm", "-rf", "/"]]),
        ("./run.sh x", [["run.sh", "x"]]),
        ("$(dirname $0)/run.sh", [["$(dirname $0)/run.sh"], ["dirname", "$0"]]),
        ("A=1 B='x y' git push", [["git", "push"]]),
        ("A=1", []),
        ("sudo -u root -g wheel rm -rf /", [["sudo", "-u", "root", "-g", "wheel", "rm", "-rf", "/"],
                                            ["rm", "-rf", "/"]]),
        ("sudo -uroot A=1 rm x", [["sudo", "-uroot", "A=1", "rm", "x"], ["rm", "x"]]),
        ("env - A=1 rm x", [["env", "-", "A=1", "rm", "x"], ["rm", "x"]]),
        ("env -S 'rm -f' x", [["env", "-S", "rm -f", "x"], ["rm", "-f", "x"]]),
        ("timeout --signal=KILL 5 rm x", [["timeout", "--signal=KILL", "5", "rm", "x"], ["rm", "x"]]),
        ("xargs -I{} -P 4 rm {}", [["xargs", "-I{}", "-P", "4", "rm", "{}"], ["rm", "{}"]]),
        ("nice -10 nohup rm x", [["nice", "-10", "nohup", "rm", "x"], ["nohup", "rm", "x"], ["rm", "x"]]),
        ("git -C dir -c a=b --git-dir x push", [["git", "push"]]),
        ("git --version", [["git"]]),
        ("then ! A=1 rm x", [["rm", "x"]]),
        ("function f { rm x; }", [["rm", "x"]]),
        ("bash -c 'rm x' name arg", [["bash", "-c", "rm x", "name", "arg"], ["rm", "x"]]),
        ("bash script.sh", [["bash", "script.sh"]]),
        ("su -c 'rm x' root", [["su", "-c", "rm x", "root"], ["rm", "x"]]),
        ("eval rm '-rf x'", [["eval", "rm", "-rf x"], ["rm", "-rf", "x"]]),
        ("find . -exec rm {} \\; -print", [["find", ".", "-exec", "rm", "{}", ";", "-print"], ["rm", "{}"]]),
        ("watch -n 1 rm x", [["watch", "-n", "1", "rm", "x"], ["rm", "x"]]),
        ("echo `echo \\`rm x\\``", [["echo", "`echo `rm x``"], ["echo", "`rm x`"], ["rm", "x"]]),
    ],
)
def test_simple_commands(text, expected):
    assert simple_commands(text) == expected


def nest(levels: int, command: str = "rm -rf /") -> str:
    for _ in range(levels):
        command = f"sh -c {shlex.quote(command)}"
    return command


def test_nesting_is_bounded():
    assert ["rm", "-rf", "/"] in simple_commands(nest(shell.MAX_DEPTH))
    found = simple_commands(nest(shell.MAX_DEPTH + 4))
    assert len(found) == shell.MAX_DEPTH + 1 and ["rm", "-rf", "/"] not in found


def test_hundreds_of_nested_substitutions_fall_back_to_a_quote_blind_reading():
    text = "echo " + '"$(' * 5000 + "; \\rm -rf /"
    started = time.monotonic()
    found = simple_commands(text)
    assert time.monotonic() - started < 2
    assert ["rm", "-rf", "/"] in found


@pytest.mark.parametrize(
    "text",
    ["a " * 40000, ";" * 70000, "'a' " * 20000, "$(a) " * 15000, '"$(' * 25000, "a\n" * 40000,
     "cat <<E\n" + "x y\n" * 30000, "é " * 40000, "rm -rf " + "a" * 5_000_000],
)
def test_parsing_is_capped(text):
    started = time.monotonic()
    simple_commands(text)
    assert time.monotonic() - started < 2.0


def test_only_the_first_max_parse_chars_are_parsed():
    padding = "true " + "x" * shell.MAX_PARSE_CHARS
    assert simple_commands("rm -rf / ; " + padding)[0] == ["rm", "-rf", "/"]
    assert ["rm", "-rf", "/"] not in simple_commands(padding + "; rm -rf /")


# --- agreement with shlex and with the matcher's fast path ------------------------------------------------


def shlex_commands(text: str) -> list[list[str]]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and all(char in "();<>|&" for char in token):
            commands.append([])
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def random_line(rng: random.Random, pieces: list[str]) -> str:
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))


def test_lexer_splits_like_shlex_where_shlex_follows_the_shell():
    # shlex (posix, punctuation_chars, whitespace_split, no comments) is right about quotes, blanks and
    # control operators; the lexer must agree there. Beyond it (comments, $'…', \ in "…", substitutions,
    # here-documents, line continuations) shlex departs from the shell, and so do the tests above.
    rng = random.Random(2024)
    pieces = ["a", "b", "rm", "-rf", "/x", "=", ".", " ", " ", "\t", "'q r'", "''", '"s t"', '""', '"it\'s"',
              "'a\"b'", ";", "&&", "||", "|", "&", "(", ")", "*"]
    for _ in range(5000):
        text = random_line(rng, pieces)
        assert words(text) == shlex_commands(text), text


def test_fast_path_gives_exactly_what_the_lexer_gives():
    rng = random.Random(7)
    names = sorted(matcher._NOT_PLAIN)
    pieces = ["a", "b", "git", "push", "-f", "-C", "/bin/rm", "x=1", "=", " ", " ", "\t", "\r", ";", "&", "|",
              "\n", "{", "}", "!", "*", "\x00", "\x0c", "#", "'", '"', "'x y'", '"a;b"', "''", '" | "', "é",
              "\\", "$", *names]
    plain = 0
    for _ in range(20000):
        text = random_line(rng, pieces)
        fast = plain_commands(text)
        if fast is not None:
            plain += 1
            assert fast == simple_commands(text), text
    assert plain > 3000
    assert plain_commands("git commit -m 'fix: a; b' && echo \"done\"") == [
        ["git", "commit", "-m", "fix: a; b"], ["echo", "done"]]
    assert plain_commands("echo 'it''s'x\"\" '' ;") == [["echo", "itsx", ""]]
    assert plain_commands("echo 'unclosed") is None
    assert plain_commands('echo "$HOME"') is None


def test_fast_path_knows_every_name_the_lexer_unwraps():
    unwrapped = shell._KEYWORDS | set(shell._WRAPPERS) | shell._SHELLS | {"function", "su", "runuser", "eval",
                                                                          "find"}
    assert matcher._NOT_PLAIN == unwrapped
    assert matcher._PLAIN_MAX_CHARS == shell.MAX_PARSE_CHARS


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


def test_quoted_patterns_are_lexed_like_commands():
    shape = pattern_shape('printf "a  b" -v*')
    assert shape is not None and shape[1][0]("a  b") and not shape[1][0]("a b")
    assert pattern_shape("echo 'a' 'b") is not None  # an unclosed quote closes at the end
    assert pattern_shape("a 'b'\nc") is None


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
