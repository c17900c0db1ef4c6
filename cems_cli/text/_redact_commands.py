"""Passwords on command lines (the options of common clients), piped to `sudo -S`, in `.netrc`, in prose."""

from __future__ import annotations

import re

from cems_cli.text._redact_base import (
    _FLAGS,
    _FOLDED,
    _LITERALS,
    _is_placeholder,
    _is_plain_word,
    _marker,
    _quoted_value,
    _splice,
)
from cems_cli.text._redact_headers import _redact_cookie_pairs

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from cems_cli.text._redact_base import Replacer


# --- command lines: one match per command (up to `;`, `|`, `&`, a backtick or the end of the line, quotes and
# `\`-newline continuations included); `_replace_command` then redacts the password options it takes.
_COMMAND_ARGS = r"(?P<args>(?:\"[^\"\n]*+\"|'[^'\n]*+'|\\[\s\S]|[^\n;|&\"'`\\]++|[\"'])*+)"
_COMMAND = re.compile(
    r"(?<![\w.\-])(?P<command>mysql(?:dump|admin|import|show|check|pump|slap|sh)?|mariadb(?:-[a-z]{2,12}+)?"
    r"|sshpass|docker|podman|nerdctl|buildah|skopeo|helm|oras|curl|redis-cli|ldap[a-z]{2,12}+|openssl)"
    r"(?![\w.\-])" + _COMMAND_ARGS,
    _FOLDED,
)
_COMMAND_GATES = ("mysql", "mariadb", "sshpass", "login", "curl", "redis-cli", "ldap", "openssl")
# Rarer clients, in a pattern of their own: a text naming `curl` does not pay for looking for them too.
_RARE_COMMAND = (
    r"(?<![\w.\-])(?P<command>htpasswd|zip|unzip|7za?|7zz|smbclient|smbget|smbcacls|smbmap|rpcclient)"
    r"(?![\w.\-])" + _COMMAND_ARGS,
    _FOLDED,
)
_RARE_COMMAND_GATES = ("htpasswd", "zip", "7z", "smb", "rpcclient")
_VALUE = r"(?P<value>\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'`]++)"
_OPTION_VALUE = {
    # mysql -pSECRET (attached: `-p` alone prompts, `-p db` names a database), --password[=| ]SECRET
    "mysql": re.compile(r"(?<=\s)(?:-p(?=\S)|--password(?:=|[ \t]++)(?!-))" + _VALUE),
    "sshpass": re.compile(r"(?<=\s)-p[ \t]*+(?!-)" + _VALUE),
    # docker/podman/helm… `login -p SECRET` (elsewhere -p publishes a port): checked for `login` first
    "login": re.compile(r"(?<=\s)(?:-p[ \t]*+|--password(?:=|[ \t]++))(?!-)" + _VALUE),
    "redis-cli": re.compile(r"(?<=\s)(?:-a|--pass)[ \t]++(?!-)" + _VALUE),
    "ldap": re.compile(r"(?<=\s)-w[ \t]*+(?!-)" + _VALUE),
    # openssl -passin pass:SECRET (`env:`/`file:` name where it is), and `enc -k SECRET` / `-K HEXKEY`
    "openssl": re.compile(
        r"(?<=\s)(?:-(?:pass|passin|passout|kpass|password)[ \t]++[\"']?pass:|-[kK][ \t]++(?!-))" + _VALUE
    ),
    # zip/unzip -P SECRET (zip's -p does not exist; unzip's -p pipes, lowercase)
    "zip": re.compile(r"(?<=\s)-P[ \t]++(?!-)" + _VALUE),
    # 7z -pSECRET (attached; `-p` alone prompts)
    "7z": re.compile(r"(?<=\s)-p(?=[^\s-])" + _VALUE),
}
# smbclient -U 'DOMAIN\\user%SECRET' / --user=user%SECRET (no `%`: it prompts, nothing to hide)
_SMB_USER = re.compile(
    r"(?<=\s)(?:-U|--user(?:name)?)(?:=|[ \t]*+)(?P<q>[\"'])?[^\s%\"']*+%"
    r"(?P<value>(?(q)[^\"'\n]++|[^\s\"'`]++))"
)
# One shell word of a command's arguments, quotes included (htpasswd's password is a positional argument).
_WORD = re.compile(r"(?:\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'`]++)++")
# `login` as the subcommand (`docker login`, `helm registry login`, `docker --config d login`), not as an
# argument: `docker run -p 80:80 app login` publishes a port.
_LOGIN = re.compile(r"\s*+(?:\S++\s++){0,3}?login(?!\S)")
# curl -u user:SECRET / --user / -U / --proxy-user (no colon: curl prompts, nothing to hide)
_CURL_USER = re.compile(
    r"(?<=\s)(?:-u|-U|--user|--proxy-user)(?:=|[ \t]*+)(?P<q>[\"'])?[^\s:\"']*+:"
    r"(?P<value>(?(q)[^\"'\n]++|[^\s\"'`]++))"
)
_CURL_COOKIE = re.compile(r"(?<=\s)(?:-b|--cookie)(?:=|[ \t]++)" + _VALUE)


def _family(command: str) -> str:
    if command.startswith(("mysql", "mariadb")):
        return "mysql"
    if command.startswith("ldap"):
        return "ldap"
    if command in ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras"):
        return "login"
    if command in ("zip", "unzip"):
        return "zip"
    if command.startswith("7z"):
        return "7z"
    if command.startswith(("smb", "rpcclient")):
        return "smb"
    return command


def _redact_option(match: re.Match[str]) -> str:
    return _splice(match, "value", _quoted_value(match.group("value"), "password"))


def _redact_curl_user(match: re.Match[str]) -> str:
    value = match.group("value")
    return match.group(0) if _is_placeholder(value) else _splice(match, "value", _marker("password"))


def _redact_curl_cookie(match: re.Match[str]) -> str:
    return _splice(match, "value", _redact_cookie_pairs(match.group("value"), first_only=False))


def _redact_htpasswd(args: str) -> str:
    """`htpasswd -b[c] FILE USER SECRET`, `htpasswd -nb USER SECRET`: with -b the password is a positional
    argument (the third, or the second with -n, which writes no file)."""
    flags = ""
    positional: list[re.Match[str]] = []
    for word in _WORD.finditer(args):
        text = word.group(0)
        if text.startswith("-") and not positional:
            flags += text[1:]
        elif text != "\\":  # a `\`-newline continuation
            positional.append(word)
            if len(positional) == 3:
                break  # FILE USER SECRET at most: the rest is not read
    index = 1 if "n" in flags else 2
    if "b" not in flags or len(positional) <= index:
        return args
    secret = positional[index]
    return args[: secret.start()] + _quoted_value(secret.group(0), "password") + args[secret.end() :]


def _replace_command(match: re.Match[str]) -> str:
    args = match.group("args")
    family = _family(match.group("command").lower())
    if family == "curl":
        redacted = _CURL_COOKIE.sub(_redact_curl_cookie, _CURL_USER.sub(_redact_curl_user, args))
    elif family == "smb":
        redacted = _SMB_USER.sub(_redact_curl_user, args)
    elif family == "htpasswd":
        redacted = _redact_htpasswd(args)
    elif family == "login" and not _LOGIN.match(args):
        return match.group(0)
    else:
        # sshpass takes one -p, before the command it runs (`ssh -p 2222` after it is a port)
        redacted = _OPTION_VALUE[family].sub(_redact_option, args, count=1 if family == "sshpass" else 0)
    return match.group(0) if redacted == args else _splice(match, "args", redacted)


# --- passwords outside a client's options: .netrc, `echo SECRET | sudo -S`, "my password is SECRET" ---------

# .netrc: `machine HOST [login USER] [account A] password SECRET`, on one line or several (`default` instead
# of a machine). Only a `machine` or `default` starts a match and each keyword's value is bounded, so a start
# scans a few words; prose ("machine learning password reset") leaves a plain word, which the replacer keeps.
# (Here and below the look-behind follows the word it guards, as in the provider tokens.)
_NETRC = (
    r"(?:machine(?<![\w.\-]machine)[ \t\n]++[^\s]{1,256}+|default(?<![\w.\-]default))"
    r"(?:\s++(?:login|account|port)[ \t\n]++[^\s]{1,256}+){0,3}+"
    r"\s++password[ \t\n]++(?P<secret>[^\s]{1,512}+)",
    _FLAGS,
)
# `echo SECRET | sudo -S …` (or printf), `sudo -S … <<< SECRET`: sudo reads the password from stdin. The
# echoed words and the words after sudo are bounded (8 of them), so each `echo` or `sudo` scans a few words;
# `-S` is checked by the replacer.
_SUDO_STDIN = (
    r"(?:(?P<cmd>echo(?<![\w.\-]echo)|printf(?<![\w.\-]printf))"
    r"(?P<args>(?:[ \t]++(?:\"[^\"\n]{0,512}+\"|'[^'\n]{0,512}+'|[^\s|;&\"'`]{1,512}+)){1,8}+)"
    r"[ \t]*+\|[ \t]*+sudo(?P<opts>(?:[ \t]++[^\s|;&]{1,64}+){0,8}+)"
    r"|sudo(?<![\w.\-]sudo)(?P<hopts>(?:[ \t]++[^\s|;&<]{1,64}+){0,8}+)[ \t]*+<<<[ \t]*+"
    r"(?P<here>\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'`;|&]++))",
    _FLAGS,
)
_SUDO_STDIN_FLAG = re.compile(r"(?<!\S)(?:-[A-Za-z]*S[A-Za-z]*|--stdin)(?!\S)")
# "my password is hunter2", "the root password for the db was `S3cr3t!`": the word, at most three words after
# `for`, `is`/`was`, then one value, judged by the replacer (a word or a path is prose, not a password).
_SAID_PASSWORD = (
    r"pass(?<![\w\-]pass)(?:word|phrase|code|wd)"
    r"(?:[ \t]++for(?:[ \t]++[^\s]{1,64}+){1,3}?)?"
    r"[ \t]++(?:is|was)\b(?:[ \t]++(?:still|now|just|set[ \t]++to)\b)?[ \t]*+:?[ \t]*+"
    r"(?P<secret>\"[^\"\n]{1,256}+\"|'[^'\n]{1,256}+'|`[^`\n]{1,256}+`|[^\s]{1,256}+)",
    _FOLDED,
)
_SENTENCE_END = ".,;:)]}\"'"


def _replace_plain_secret(kind: str) -> Replacer:
    """Replace the group `secret` unless it is a placeholder, a literal or a plain lowercase word (prose)."""
    marker = _marker(kind)

    def replace(match: re.Match[str]) -> str:
        value = match.group("secret")
        word = value.rstrip(_SENTENCE_END)  # "… password reset." ends a sentence
        if _is_placeholder(value) or _is_plain_word(word) or word.lower() in _LITERALS:
            return match.group(0)
        return _splice(match, "secret", marker)

    return replace


def _replace_sudo_stdin(match: re.Match[str]) -> str:
    if match.group("cmd") is None:  # sudo -S … <<< SECRET
        if not _SUDO_STDIN_FLAG.search(match.group("hopts")):
            return match.group(0)
        return _splice(match, "here", _quoted_value(match.group("here"), "password"))
    if not _SUDO_STDIN_FLAG.search(match.group("opts")):
        return match.group(0)  # `echo done | sudo tee /etc/motd`
    args = match.group("args")
    words = list(_WORD.finditer(args))
    if match.group("cmd") == "printf":
        secrets = words[1:] or words  # printf FORMAT ARGS: the arguments; a lone format is the text itself
    else:
        while len(words) > 1 and words[0].group(0).startswith("-"):  # echo -n, -e
            words = words[1:]
        secrets = words
    redacted = args
    for word in reversed(secrets):
        secret = _quoted_value(word.group(0), "password")
        redacted = redacted[: word.start()] + secret + redacted[word.end() :]
    return match.group(0) if redacted == args else _splice(match, "args", redacted)


def _reads_as_password(value: str) -> bool:
    """A value after "password is" that is not prose: not a word (hyphens, dots and apostrophes allowed), a
    number of characters too short to be one, a literal, a placeholder or a path."""
    if len(value) < 4 or _is_placeholder(value) or value.lower() in _LITERALS:
        return False
    if value.startswith(("/", "~", "./")) or "://" in value:
        return False
    return not value.replace("-", "").replace("'", "").replace(".", "").isalpha()


def _replace_said_password(match: re.Match[str]) -> str:
    value = match.group("secret")
    if len(value) >= 2 and value[0] in "\"'`" and value[-1] == value[0]:
        inner = value[1:-1]
        if _is_placeholder(inner) or inner.lower() in _LITERALS:
            return match.group(0)
        return _splice(match, "secret", f"{value[0]}{_marker('password')}{value[0]}")
    bare = value.rstrip(_SENTENCE_END)
    if not _reads_as_password(bare):
        return match.group(0)
    return _splice(match, "secret", _marker("password"), match.start("secret") + len(bare))
