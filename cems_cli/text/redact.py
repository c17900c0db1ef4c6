"""Privacy for every write path: drop `<private>` blocks, replace secrets with `[REDACTED:kind]`.

Secrets are recognised three ways:
* by their own shape: provider tokens (GitHub, GitLab, OpenAI, Anthropic, Stripe keys and webhook secrets,
  Slack bot/user/app tokens, Google API keys, OAuth access tokens and client secrets, Hugging Face, npm, PyPI,
  SendGrid, Vault, Databricks, Shopify, DigitalOcean, Grafana, Linear, Notion, Atlassian, Postman, Twilio,
  Mailgun, Telegram bots), age identities, JWTs, PEM and PGP private keys, AWS key ids and a 40-character AWS
  secret within 4 KB of one, Slack and Discord webhook URLs, passwords in URLs, the signature of a signed URL
  (`sig=`, `X-Amz-Signature=`, `X-Goog-Signature=`, `Signature=`) and an STS session token in one;
* by their place: HTTP headers (`Authorization:` with any scheme, `X-Api-Key:` and its kin, the values of
  `Cookie:` and `Set-Cookie:`), the password options of common clients (`mysql -pX`, `curl -u user:pw`,
  `sshpass -p X`, `docker login -p X`, `redis-cli -a X`, `ldapsearch -w X`, `openssl -passin pass:X`,
  `openssl enc -k X`, `htpasswd -b f user X`, `zip -P X`, `7z -pX`, `smbclient -U user%X`), what is piped to
  `sudo -S`, `.netrc` entries (`machine h login u password X`) and prose ("my password is X");
* by the name they are assigned to (`DB_PASSWORD=…`, `"api_key": "…"`, `AccountKey=…`, `API_KEY = a1b2c3d4`,
  with no-break spaces around the `=` too, `client_secret: q8Xz…` after other text on its line), or the
  markup or declaration holding them (`<password>…</password>`, `<add key="DbPassword" value="…"/>`,
  `const apiKey: string = "…"`).
The last two ways are where false positives live, so they keep the name, redact only the value, and leave
values that are plainly code or references alone: `password = get_password()`, `token: str`,
`API_KEY=${API_KEY}`, `secret = settings.secret`, `Authorization: Bearer $TOKEN`, `{"x-api-key": apiKey}`.

Every pattern runs in time linear in the length of the text, whatever the text: hooks redact tool output that
anyone can shape, and one quadratic pattern turns a 200 KB output into seconds of CPU on the agent's path.
The rules that keep it so (tests/unit/test_redact_linear.py runs every pattern on adversarial inputs):
* a match may only start where no earlier start could have scanned the same characters: a look-behind keeps
  starts to the beginning of a run of the characters the pattern loops over (`(?<![A-Za-z0-9_-])eyJ`), or
  the loop is bounded (`{0,30}`), so each character is scanned by a constant number of starts;
* a loop followed by something it cannot contain is possessive (`*+`), so a failing start gives up at once
  instead of backtracking through the run;
* patterns over a whole span (a command line, a header value) succeed whenever they start and leave the
  judgement to the replacer, so the scan resumes after the span instead of retrying inside it.
Each pattern also has gates: substrings one of which every match that changes the text contains. A text with
none of them skips the pattern for the price of a substring search, which is what most texts (holding no
secret at all) pay.
"""

from __future__ import annotations

import bisect
import re

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

_FLAGS = re.ASCII
_FOLDED = re.ASCII | re.IGNORECASE
# A blank between a name and its value: a space, a tab, or the no-break and other Unicode spaces that text
# pasted from a chat, a wiki or a PDF carries (`API_KEY\u00a0=\u00a0…`). Written out: the patterns are ASCII.
_BLANK = "[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]"


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# --- <private> blocks -----------------------------------------------------------------------------------

# `[^<>]*+`: a tag ends before the next `<`, so `<private<private…` is scanned once, not once per `<`.
_PRIVATE_TAG = re.compile(r"<(/?)private\b[^<>]*+>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Remove `<private>…</private>` blocks (any case, across lines, nested). An unclosed `<private>`
    hides everything after it: the writer meant it private and forgot to close it. A stray `</private>` is
    dropped."""
    # Unicode case folding matches `prıvate` (dotless ı) too, so only ASCII text may skip on `lower()`.
    if "<" not in text or (text.isascii() and "private" not in text.lower()):
        return text
    kept: list[str] = []
    depth = 0
    position = 0
    for tag in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            kept.append(text[position:tag.start()])
        closing = bool(tag.group(1))
        depth = max(depth - 1, 0) if closing else depth + 1
        position = tag.end()
    if depth == 0:
        kept.append(text[position:])
    return "".join(kept)


# --- helpers shared by the recognisers ------------------------------------------------------------------

_LITERALS = frozenset(
    "none null nil true false yes no on off undefined enabled disabled required optional auto default "
    "str string int bool boolean bytes number any object secretstr".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)*(?:\[.*\])?\Z")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _is_placeholder(value: str) -> bool:
    """References and stand-ins, not secrets: $VAR, ${VAR}, {{ secrets.X }}, <token>, %(x)s, ****, xxxx."""
    value = value.strip("\"'")
    if not value or value.startswith(("$", "{", "<", "%", "[REDACTED")):
        return True
    return not value.strip("*xX.")


def _is_plain_word(value: str) -> bool:
    """A lowercase dictionary-like word: prose ("header", "required"), never a generated credential."""
    return value.isalpha() and value.islower()


def _splice(match: re.Match[str], group: str, replacement: str, end: int | None = None) -> str:
    """The whole match with one group's text (up to `end`, an absolute index) replaced and the rest kept."""
    base = match.start()
    start, stop = match.span(group)
    whole = match.group(0)
    return whole[: start - base] + replacement + whole[(stop if end is None else end) - base :]


def _quoted_value(value: str, kind: str) -> str:
    """A command-line value with its quotes kept and its text redacted (placeholders stay)."""
    quote = value[0] if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0] else ""
    bare = value[1:-1] if quote else value
    if _is_placeholder(bare):
        return value
    return f"{quote}{_marker(kind)}{quote}"


# --- secrets recognised by shape ------------------------------------------------------------------------

if TYPE_CHECKING:
    Replacer = Callable[[re.Match[str]], str]


class _Shape:
    """One kind of secret: its gates (one of them is in every text it redacts), pattern and replacer.

    A pattern given as its source and flags is compiled the first time a text opens one of its gates: the
    rarer kinds (provider prefixes, .netrc, sudo -S…) would otherwise add ~10 ms of compiling to every hook
    that imports this module, for patterns most outputs never need."""

    __slots__ = ("kind", "gates", "gate", "folded", "_pattern", "_source", "replace")

    def __init__(
        self,
        kind: str,
        gates: Iterable[str],
        pattern: re.Pattern[str] | tuple[str, int],
        replace: Replacer | None = None,
    ) -> None:
        self.kind = kind
        self.gates = tuple(gates)
        # Gates sharing a prefix (glpat-, gldt-, … all start with gl) are looked for with one search: the
        # parser moves the common prefix out of the alternation, and the engine skips to it as to a literal.
        # Gates with nothing in common are cheaper as separate substring searches.
        shared = self.gates[0][:1] if all(gate[:1] == self.gates[0][:1] for gate in self.gates) else ""
        self.gate = None
        if len(self.gates) > 1 and shared:
            self.gate = re.compile("|".join(map(re.escape, self.gates)))
        if isinstance(pattern, tuple):
            self._pattern: re.Pattern[str] | None = None
            self._source = pattern
        else:
            self._pattern, self._source = pattern, (pattern.pattern, pattern.flags)
        # Case-insensitive patterns are gated on the lowercased text (their gates are written lowercase).
        self.folded = bool(self._source[1] & re.IGNORECASE)
        self.replace = replace or _replace_secret_group(kind)

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(*self._source)
        return self._pattern


def _replace_secret_group(kind: str) -> Replacer:
    """Replace the group `secret` (or the whole match when there is none), unless it is a placeholder."""
    marker = _marker(kind)

    def replace(match: re.Match[str]) -> str:
        if "secret" not in match.re.groupindex:
            return marker
        if _is_placeholder(match.group("secret")):
            return match.group(0)
        return _splice(match, "secret", marker)

    return replace


# Private keys: PEM (RSA, EC, OPENSSH, ENCRYPTED…) and PGP blocks, up to their END line or, cut short, to the
# end of the text. The label is bounded and only a `-----BEGIN ` starts a match, and a match always succeeds
# (at worst at \Z), so the lazy scan runs once.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]{0,40}?)PRIVATE KEY(?P<block>(?: BLOCK)?)-----"
    r".*?(?:-----END (?P=label)PRIVATE KEY(?P=block)-----|\Z)",
    re.DOTALL,
)

# An AWS secret access key is 40 characters of base64 with no prefix; alone it cannot be told from other
# base64, but near an access key id (a CSV row, `aws configure` prompts, a chat message, a JSON document) it
# is the key's secret. Both must occur, and the 40 characters must mix cases and hold a digit or a symbol (a
# git SHA-1 is 40 lowercase hex characters). "Near" is a screenful (4 KB) either side: the candidates and the
# ids are found by one scan each and paired by position, so the distance costs nothing (a pattern spanning
# the gap would rescan it once per id).
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", _FLAGS)
_AWS_SECRET_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9/+])"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    _FLAGS,
)
_AWS_NEAR = 4096


def _replace_aws_secret_near_id() -> Replacer:
    marker = _marker("aws_secret_key")
    # The text last scanned for key ids and where they start: one scan per text, however many candidates it
    # holds. One tuple, replaced whole, so two threads redacting two texts never mix their ids.
    last: list[tuple[str, list[int]]] = [("", [])]

    def replace(match: re.Match[str]) -> str:
        text, starts = last[0]
        if text is not match.string:
            text, starts = match.string, [m.start() for m in _AWS_KEY_ID.finditer(match.string)]
            last[0] = (text, starts)
        index = bisect.bisect_left(starts, match.start())
        near = (index < len(starts) and starts[index] - match.end() <= _AWS_NEAR) or (
            index > 0 and match.start() - starts[index - 1] <= _AWS_NEAR
        )
        return marker if near else match.group(0)

    return replace


_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}+://[^\s:/@]{0,256}+:(?P<secret>[^\s@/]{1,512}+)(?=@)",
    _FLAGS,
)

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


# --- HTTP headers: the name, then the value up to the quote that closes it (`-H "Authorization: …"`,
# `{"Authorization": "…"}`; a backslash-escaped quote does not close it) or, on a bare header line, to the end
# of the line. The value always matches once the separator is there, so the scan goes on after it.
_HEADER_VALUE = (
    r"(?P<cq>[\"'`])?" + _BLANK + r"{0,16}+(?P<sep>[:=])" + _BLANK + r"{0,16}+(?P<vq>[\"'`])?"
    r"(?P<value>(?(vq)(?:(?!(?P=vq))[^\n\\]|\\.){1,4096}+"
    r"|(?(oq)(?:(?!(?P=oq))[^\n\\]|\\.){1,4096}+|[^\n]{1,4096}+)))"
)
_AUTHORIZATION = re.compile(r"(?P<oq>[\"'`])?\b(?:Proxy-)?Authorization" + _HEADER_VALUE, _FOLDED)
_COOKIE = re.compile(r"(?P<oq>[\"'`])?\b(?P<name>Set-Cookie|Cookie)" + _HEADER_VALUE, _FOLDED)
# X-Api-Key, Api-Key, X-Auth-Token, Private-Token, Ocp-Apim-Subscription-Key…: a dashed name ending in key or
# token (checked by `_key_is_sensitive`, so Sort-Key or Public-Key stay), then `:` and one token.
_KEY_HEADER = re.compile(
    r"(?P<oq>[\"'`])?(?<![A-Za-z0-9\-])(?P<name>(?:[A-Za-z0-9]{1,24}+-){1,4}(?:key|token)|apikey)"
    r"(?P<cq>[\"'`])?" + _BLANK + r"{0,16}+:" + _BLANK + r"{0,16}+"
    r"(?P<vq>[\"'`])?(?P<value>[^\s\"'`,;]{1,4096}+)",
    _FOLDED,
)
# Schemes whose credentials are redacted whatever they look like; under any other scheme the credentials must
# look like one (one opaque token, or `name=value` parameters), so prose after "Authorization:" stays.
_AUTH_SCHEMES = frozenset(
    "bearer basic token bot negotiate ntlm ssws apikey api-key key dpop gnap splunk jwt".split()
)
# Schemes whose credentials are `name=value` parameters (quoted values, commas, spaces): all redacted.
_PARAM_SCHEMES = frozenset(
    "digest oauth hoba mutual vapid sharedaccesssignature aws4-hmac-sha256 goog4-hmac-sha256".split()
)
_SCHEME = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9._~+/\-]{0,40}+)[ \t]++(?=\S)")
# One credential: up to a blank, a quote or a backslash (the `\"` closing a JSON- or shell-escaped header).
_CREDENTIAL = re.compile(r"[^\s\\\"'`]++")
_AUTH_PARAM = re.compile(r"[A-Za-z0-9_\-]++[ \t]*+=")


def _is_code_value(match: re.Match[str]) -> bool:
    """`{"Authorization": token}`: a quoted name with an unquoted value is a program, not a header."""
    return match.group("cq") is not None and match.group("vq") is None


def _value_end(match: re.Match[str]) -> int:
    """Where the header value really ends: trailing blanks and the `\\` of a JSON-escaped quote stay."""
    value = match.group("value")
    trimmed = value.rstrip().rstrip("\\").rstrip()
    return match.start("value") + len(trimmed)


def _looks_like_token(value: str) -> bool:
    """One opaque token rather than a word or a name: long enough and not a lowercase word or identifier."""
    if _TYPE_NAME.match(value):
        return False  # a type annotation: `authorization: Optional[str]`
    value = value.rstrip(",;)}]")
    if len(value) < 8 or _is_placeholder(value) or _is_plain_word(value) or "(" in value:
        return False
    return not (_IDENTIFIER.match(value) and not any(c.isdigit() for c in value))


def _replace_authorization(match: re.Match[str]) -> str:
    if _is_code_value(match):
        return match.group(0)
    start, end = match.start("value"), _value_end(match)
    body = match.string[start:end]
    scheme = _SCHEME.match(body)
    if scheme is None:  # one token, no scheme: `Authorization: 0a1b2c3d4e5f`
        if any(c.isspace() for c in body) or body.lower() in _AUTH_SCHEMES or not _looks_like_token(body):
            return match.group(0)
        return _splice(match, "value", _marker("bearer"), end)
    name = scheme.group("scheme").lower()
    credentials = body[scheme.end():]
    if _is_placeholder(credentials):
        return match.group(0)
    token = _CREDENTIAL.match(credentials)
    if name in _PARAM_SCHEMES or (name not in _AUTH_SCHEMES and _AUTH_PARAM.match(credentials)
                                  and "(" not in credentials):
        cut = end  # parameters: everything to the end of the value
    elif name in _AUTH_SCHEMES:
        cut = start + scheme.end() + (token.end() if token else len(credentials))
    elif token and token.end() == len(credentials) and _looks_like_token(credentials):
        cut = end  # an unknown scheme and one opaque token
    else:
        return match.group(0)  # prose: "Authorization: the server checks it"
    whole, base = match.group(0), match.start()
    return whole[: start + scheme.end() - base] + _marker("bearer") + whole[cut - base :]


def _replace_key_header(match: re.Match[str]) -> str:
    value = match.group("value").rstrip("\\")
    # A quoted name (`{"x-api-key": …}`) is a key in code or JSON: the assignment rules below judge it.
    if match.group("cq") is not None or not _key_is_sensitive(match.group("name")):
        return match.group(0)
    if _is_placeholder(value) or _is_plain_word(value) or value.lower() in _LITERALS:
        return match.group(0)  # `X-Api-Key: <your key>`, prose ("the X-Api-Key: header")
    if _TYPE_NAME.match(value):
        return match.group(0)
    return _splice(match, "value", _marker("api_key"), match.start("value") + len(value))


_COOKIE_PAIR = re.compile(
    r"(?<![^;,\s\"'])(?P<name>[^=;,\s\"']{1,256}+)[ \t]*+=[ \t]*+(?P<value>[^;\s\"'\\]*+)"
)


def _redact_cookie_pairs(text: str, *, first_only: bool) -> str:
    """`a=1; b=2` → `a=[REDACTED:cookie]; b=[REDACTED:cookie]` (names kept: they say what the cookie is)."""

    def replace(pair: re.Match[str]) -> str:
        value = pair.group("value")
        if not value or _is_placeholder(value):
            return pair.group(0)
        return _splice(pair, "value", _marker("cookie"))

    return _COOKIE_PAIR.sub(replace, text, count=1 if first_only else 0)


def _replace_cookie(match: re.Match[str]) -> str:
    if _is_code_value(match) or match.group("sep") != ":":
        return match.group(0)
    end = _value_end(match)
    value = match.string[match.start("value"):end]
    # Set-Cookie: the first pair is the cookie, the rest are attributes (Path, Expires…) and stay.
    redacted = _redact_cookie_pairs(value, first_only=match.group("name").lower() == "set-cookie")
    return match.group(0) if redacted == value else _splice(match, "value", redacted, end)


# Secrets held by markup and typed declarations, which the `key = value` scan below reads as something
# else: `<password>hunter2</password>` and .NET's `<add key="DbPassword" value="…"/>` (no `=`/`:` right after
# the name), and TypeScript's `const apiKey: string = "…"` (whose `: string` is a type, not a value). Starts
# only at `<`, at `key=` or at the start of a name (bounded), and the value loops are possessive: linear.
_SECRET_WORD = (r"[A-Za-z0-9_.:\-]{0,40}?(?:password|passwd|passphrase|secret|token|api[_\-]?key|"
                r"access[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?)")
_SECRET_NAME = _SECRET_WORD + r"[A-Za-z0-9_\-]{0,20}"
_XML_SECRET = re.compile(
    r"<(?P<key>" + _SECRET_WORD + r")>(?P<secret>[^<\s][^<\n]{0,512}+)</(?P=key)>",
    _FOLDED,
)
_XML_KEY_VALUE = re.compile(
    r"\bkey=\"(?P<key>" + _SECRET_NAME + r")\"[ \t]{1,16}+value=\"(?P<secret>[^\"\n]{1,512}+)\"",
    _FOLDED,
)
_TYPED_ASSIGNMENT = re.compile(
    # the look-behind covers every character a name is made of: a run of them is scanned from its start only
    r"(?<![A-Za-z0-9_.:$\-])(?P<key>" + _SECRET_NAME + r")"
    r"[ \t]{0,8}+:[ \t]{0,8}+(?:string|str|String)[ \t]{0,8}+=[ \t]{0,8}+"
    r"(?P<q>[\"'`])(?P<secret>[^\"'`\n]{1,512}+)(?P=q)",
    _FOLDED,
)

# Gates: one of these is in every match (the names above all hold one of the words; a tag ends with one).
_NAME_WORDS = ("password", "passwd", "passphrase", "secret", "token", "key", "credential")
_XML_GATES = tuple(word + ">" for word in (*_NAME_WORDS, "credentials"))


def _replace_named_secret(match: re.Match[str]) -> str:
    """The value of a markup or typed secret, once its name is one (`<tokenizer>` is not)."""
    if not _key_is_sensitive(match.group("key").rpartition(":")[2]):  # `<db:Password>`: the name after `:`
        return match.group(0)
    return _REPLACE_SECRET(match)


_REPLACE_SECRET = _replace_secret_group("secret")


_SHAPE_RULES: list[_Shape] = [
    # Whole blocks, pairs and URLs first, so the tokens inside them are redacted as part of them.
    _Shape("private_key", ["PRIVATE KEY"], _PRIVATE_KEY),
    _Shape("aws_secret_key", ["AKIA", "ASIA"], _AWS_SECRET_CANDIDATE, _replace_aws_secret_near_id()),
    _Shape("aws_access_key", ["AKIA", "ASIA"], _AWS_KEY_ID),
    _Shape("aws_secret_key", ["secret"], re.compile(
        r"\baws_?secret(?:_?access)?_?key[\"']?[ \t]{0,16}+[:=][ \t]{0,16}+[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        _FOLDED,
    )),
    _Shape("password", ["://"], _URL_PASSWORD),
    _Shape("slack_webhook", ["hooks.slack.com"], re.compile(
        r"\bhooks\.slack\.com/(?:services|workflows|triggers)/"
        r"(?P<secret>[A-Za-z0-9_\-]{1,64}+(?:/[A-Za-z0-9_\-]{1,64}+){0,4}+)",
        _FOLDED,
    )),
    _Shape("discord_webhook", ["discord"], re.compile(
        r"\bdiscord(?:app)?\.com/api(?:/v[0-9]{1,2})?/webhooks/(?P<secret>[0-9]{5,30}+/[A-Za-z0-9_\-]{10,200}+)",
        _FOLDED,
    )),
    # Signed URLs: the signature (Azure SAS `sig=`, S3 and GCS `X-Amz-Signature=`/`X-Goog-Signature=`,
    # CloudFront `Signature=`) and an STS session token are the credential; the rest of the query stays.
    _Shape("signature", ["sig=", "signature=", "security-token="], (
        r"[?&;](?:sig|signature|x-(?:amz|goog)-signature|x-amz-security-token)="
        r"(?P<secret>[^&\s\"'#<>`]{1,4096}+)",
        _FOLDED,
    )),
    _Shape("password", _COMMAND_GATES, _COMMAND, _replace_command),
    _Shape("password", _RARE_COMMAND_GATES, _RARE_COMMAND, _replace_command),
    _Shape("password", ["machine", "default"], _NETRC, _replace_plain_secret("password")),
    _Shape("secret", _XML_GATES, _XML_SECRET, _replace_named_secret),
    _Shape("secret", ['key="'], _XML_KEY_VALUE, _replace_named_secret),
    _Shape("secret", _NAME_WORDS, _TYPED_ASSIGNMENT, _replace_named_secret),
    _Shape("password", ["sudo"], _SUDO_STDIN, _replace_sudo_stdin),
    _Shape("password", ["passw", "passphrase", "passcode"], _SAID_PASSWORD, _replace_said_password),
    _Shape("bearer", ["authorization"], _AUTHORIZATION, _replace_authorization),
    _Shape("api_key", ["key", "token"], _KEY_HEADER, _replace_key_header),
    _Shape("cookie", ["cookie"], _COOKIE, _replace_cookie),
    # Provider tokens. Each starts only at the beginning of a run of its characters (`\b` before a letter
    # that cannot follow a token character, or a look-behind), so a run is scanned once.
    _Shape("github_token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"], re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}+|github_pat_[A-Za-z0-9_]{22,255}+)\b", _FLAGS
    )),
    _Shape("gitlab_token", ["glpat-", "gldt-", "glptt-", "glrt-", "gloas-", "glcbt-", "glsoat-", "glffct-",
                            "glagent-", "glimt-", "glft-"], re.compile(
        r"\bgl(?:pat|dt|ptt|rt|oas|cbt|soat|ffct|agent|imt|ft)-[A-Za-z0-9_\-]{20,300}+"
        r"(?:\.[A-Za-z0-9_\-]{1,64}+){0,4}+",
        _FLAGS,
    )),
    _Shape("anthropic_key", ["sk-ant-"], re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}+", _FLAGS)),
    # OpenAI: sk-…, sk-proj-…, sk-svcacct-…; the digit look-ahead spares kebab-case words like sk-fade-in-…
    _Shape("openai_key", ["sk-"], re.compile(
        r"(?<![A-Za-z0-9_\-])sk-(?=[A-Za-z_\-]*+[0-9])[A-Za-z0-9_\-]{20,}+", _FLAGS
    )),
    # Stripe secret and restricted keys, and webhook signing secrets (`stripe listen` prints one)
    _Shape("stripe_key", ["k_live_", "k_test_", "whsec_"], re.compile(
        r"\b(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}+|whsec_[A-Za-z0-9+/]{24,}+={0,2}+)", _FLAGS
    )),
    # Slack bot, user, config (xoxe) and app-level (xapp-1-…) tokens
    _Shape("slack_token", ["xox", "xapp-"], re.compile(
        r"\b(?:xox[abprse]|xapp)-[A-Za-z0-9\-]{10,}+", _FLAGS
    )),
    _Shape("google_api_key", ["AIza"], re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", _FLAGS)),
    # Hugging Face: hf_ and 34 letters of both cases (hf_hub_download and other names have underscores).
    _Shape("huggingface_token", ["hf_", "api_org_"], re.compile(
        r"\b(?:hf|api_org)_(?=[a-z0-9]{0,79}+[A-Z])(?=[A-Z0-9]{0,79}+[a-z])[A-Za-z0-9]{30,80}+\b", _FLAGS
    )),
    _Shape("npm_token", ["npm_"], re.compile(r"\bnpm_[A-Za-z0-9]{36}\b", _FLAGS)),
    _Shape("sendgrid_key", ["SG."], re.compile(
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])", _FLAGS
    )),
    # Prefixed tokens of other providers (shapes as published by the providers and the gitleaks rule set).
    _Shape("vault_token", ["hvs.", "hvb."], (
        r"hv[sb]\.(?<![A-Za-z0-9_.\-]hv[sb]\.)[A-Za-z0-9_\-]{24,}+", _FLAGS
    )),
    # Databricks: `dapi` and 32 hex-like characters; a look-behind, not \b, so rapidapi… never starts one.
    # (Here and below the look-behind follows the literal it guards: a pattern that starts with a literal or
    # a character class lets the engine skip ahead to it, one that starts with a look-behind tries every
    # position.)
    _Shape("databricks_token", ["dapi"], (
        r"dapi(?<![A-Za-z0-9_\-]dapi)[a-h0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9_\-])", _FLAGS
    )),
    _Shape("shopify_token", ["shpat_", "shpca_", "shppa_", "shpss_"], (
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", _FLAGS
    )),
    # PyPI upload tokens are macaroons: `pypi-` and base64 that starts `AgE` (pypi-publish is a word)
    _Shape("pypi_token", ["pypi-AgE"], (r"\bpypi-AgE[A-Za-z0-9_\-]{50,}+", _FLAGS)),
    _Shape("digitalocean_token", ["_v1_"], (
        r"\bdo[opr]_v1_[a-f0-9]{64}\b", _FLAGS
    )),
    _Shape("google_oauth_token", ["ya29."], (r"\bya29\.[0-9A-Za-z_\-]{20,}+", _FLAGS)),
    _Shape("google_client_secret", ["GOCSPX-"], (
        r"\bGOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])", _FLAGS
    )),
    # Grafana service-account tokens and Grafana Cloud tokens (GLC_ in C code is another thing: case matters)
    _Shape("grafana_token", ["glsa_", "glc_"], (
        r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|glc_[A-Za-z0-9+/]{32,}+={0,3}+)", _FLAGS
    )),
    _Shape("linear_key", ["lin_api_"], (r"\blin_api_[A-Za-z0-9]{40}\b", _FLAGS)),
    _Shape("notion_token", ["ntn_"], (r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b", _FLAGS)),
    # Atlassian API tokens (ATATT3…, ATCTT3…, ~190 characters) and Bitbucket app passwords (ATBB…)
    _Shape("atlassian_token", ["TT3", "ATBB"], (
        r"\b(?:AT[AC]TT3[A-Za-z0-9_\-=]{60,}+|ATBB[A-Za-z0-9]{32}\b)", _FLAGS
    )),
    _Shape("postman_key", ["PMAK-"], (r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b", _FLAGS)),
    # Twilio API key SIDs: SK and 32 hex digits
    _Shape("twilio_key", ["SK"], (r"\bSK[0-9a-fA-F]{32}\b", _FLAGS)),
    # Mailgun private keys: key- and 32 hex digits (key-value is prose)
    _Shape("mailgun_key", ["key-"], (
        r"key-(?<![A-Za-z0-9_\-]key-)[0-9a-fA-F]{32}(?![A-Za-z0-9_\-])", _FLAGS
    )),
    # age identities: bech32 (its alphabet has no 1, b, i, o) after the human-readable part
    _Shape("age_secret_key", ["AGE-SECRET-KEY-1"], (
        r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", _FLAGS
    )),
    # Telegram bot tokens: the bot's id, `:`, then 35 characters from `A`. The id starts a run of digits or
    # follows `bot` (api.telegram.org/bot<token>/…); the 35 characters hold a digit, `_` or `-` (an XSD's
    # `clm12345:AgencyIdentificationCodeContentType` holds none).
    _Shape("telegram_bot_token", [":A"], (
        r"[0-9](?:(?<![A-Za-z0-9_\-][0-9])|(?<=bot[0-9]))[0-9]{4,15}+:A(?=[A-Za-z]{0,33}+[0-9_\-])[A-Za-z0-9_\-]{34}"
        r"(?![A-Za-z0-9_\-])",
        _FLAGS,
    )),
    _Shape("jwt", ["eyJ"], re.compile(
        r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{5,}+\.eyJ[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*+", _FLAGS
    )),
]
# The kind of every shape: what the capture spool's redaction shortcut is checked against.
_SHAPE_KINDS = frozenset(shape.kind for shape in _SHAPE_RULES)


# Command-line flags: `--password hunter2`. (`--password=…` is an assignment, handled below.)
_FLAG = re.compile(
    r"(?P<keep>(?<![\w-])--(?:[a-z]{1,30}+-){0,6}?(?:password|passwd|token|secret|api-key|apikey)"
    + _BLANK + "++)"
    r"(?P<value>\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"']++)",
    _FOLDED,
)


def _replace_flag(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    bare = value[1:-1] if quote else value
    # Prose about flags ("pass --token to the CLI") is followed by plain words; secrets are not.
    if _is_placeholder(bare) or bare.startswith("-") or (not quote and _is_plain_word(bare)):
        return match.group(0)
    return f"{match.group('keep')}{quote}{_marker('secret')}{quote}"


# --- secrets recognised by the name they are assigned to ------------------------------------------------

# Any key containing a secret-ish word, then `=`, `:`, `:=` or `=>`, then a value on the same line; the key is
# checked precisely in `_key_is_sensitive`. Bounded repetitions keep the scan linear over long base64 blobs,
# and the bounds (40 key characters after the word, 64 blanks) are what the capture spool's shortcut checks.
_ASSIGNMENT = re.compile(
    # the look-ahead is cheap: it gives up at once where no separator follows
    r"(?<![\w.\-])(?P<q>[\"']?)(?=[A-Za-z0-9_.\-]{1,100}+[\"']?" + _BLANK + r"{0,64}+[:=])"
    r"(?P<key>[A-Za-z0-9_.\-]{0,60}?"
    r"(?:secret|token|pass|pwd|key|credential|creds|auth)"
    r"[A-Za-z0-9_.\-]{0,40})(?P=q)"
    r"(?P<sep>" + _BLANK + r"{0,64}+(?:=>|:=|[:=])" + _BLANK + r"*+)"
    r"(?P<value>\"(?:[^\"\\\n]++|\\.)*+\"|'(?:[^'\\\n]++|\\.)*+'|[^\s,;'\"`})\]&]++)",
    _FOLDED,
)
_ASSIGNMENT_GATES = ("secret", "token", "pass", "pwd", "key", "cred", "auth")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENSITIVE_KEY = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:SECRETS?|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTHKEY)(?=_|$)"
    r"|(?:^|_)(?:PWD|AUTH|PASS|CREDS)(?=_|$)"
    r"|(?:^|_)[A-Z0-9]*(?:API|PRIVATE|ACCESS|SECRET|AUTH|SIGNING|ENCRYPTION|MASTER|ACCOUNT|SUBSCRIPTION)"
    r"_KEYS?(?=_|$)"
)
# A last word that makes the key describe a secret rather than hold one: TOKEN_URL, PASSWORD_FILE…
_QUALIFIERS = frozenset(
    "COUNT COUNTS LIMIT LIMITS LENGTH LEN SIZE TYPE TYPES KIND URL URLS URI ENDPOINT HOST PORT PATH "
    "FILE FILES FILENAME DIR NAME NAMES ID IDS EXPIRY EXPIRES EXPIRATION AT TTL TIMEOUT MIN MAX ENABLED "
    "DISABLED REQUIRED HEADER FIELD PARAM PROVIDER METHOD MODE POLICY RESET PROMPT HINT LABEL HELP FORMAT "
    "SCOPE SCOPES COST BUDGET USAGE ENV VAR VARIABLE".split()
)
_NOT_SECRET_KEYS = frozenset({"PWD", "OLDPWD"})  # the shell's working directories
# Keys a qualifier would wrongly clear: a service account's private_key_id identifies its key pair.
_ALWAYS_SECRET_KEYS = frozenset({"PRIVATE_KEY_ID"})
_REST_OF_LINE_IS_BLANK = re.compile(r"[^\S\n]*+(?:#|\n|\Z)")
# A generated value: 8 or more letters, digits and base64/URL-safe symbols, with a letter and a digit.
_MIXED_RUN = re.compile(
    r"(?=[A-Za-z0-9+/=_\-]{0,200}?[0-9])(?=[A-Za-z0-9+/=_\-]{0,200}?[A-Za-z])[A-Za-z0-9+/=_\-]{8,}"
)


def _key_is_sensitive(key: str) -> bool:
    words = _CAMEL.sub("_", key.strip("-_.")).upper().replace("-", "_").replace(".", "_")
    if words in _ALWAYS_SECRET_KEYS:
        return True
    if words in _NOT_SECRET_KEYS or not _SENSITIVE_KEY.search(words):
        return False
    return words.rsplit("_", 1)[-1] not in _QUALIFIERS


def _line_is_key_value(match: re.Match[str]) -> bool:
    """True when the key starts its line and the value ends it (comments aside): a YAML-style `key: value`
    line rather than prose such as "Token: the unit of text a model reads". Looks only at the indentation
    before the key and the blanks after the value, never the whole line: a 200 KB line of `token: x` pairs
    would otherwise be read once per pair."""
    text = match.string
    position = match.start()
    while position > 0 and text[position - 1] in " \t-":
        position -= 1
    if position > 0 and text[position - 1] != "\n":
        return False
    return _REST_OF_LINE_IS_BLANK.match(text, match.end()) is not None


def _looks_generated(value: str) -> bool:
    """A bare word after ` = ` that reads as a generated secret, not a variable: letters and digits mixed
    (a1b2c3d4e5), or a long run of both cases (xQzTbLmRkWvPaNsE). snake_case names with a digit
    (sha256_digest) and constants (DEFAULT_KEY2) read as code."""
    if "_" in value and (value.islower() or value.isupper()):
        return False
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    if len(value) >= 8 and has_letter and has_digit:
        return True
    return len(value) >= 16 and "_" not in value and not value.islower() and not value.isupper()


def _value_is_secret(match: re.Match[str]) -> bool:
    value, separator = match.group("value"), match.group("sep")
    operator = separator.strip()
    if value[:1] in "\"'":
        return not _is_placeholder(value[1:-1])
    if len(value) < 3 or _is_placeholder(value) or value.startswith("=") or value.lower() in _LITERALS:
        return False
    if "(" in value:
        return False  # a call: password = get_password()
    if operator == ":" and not _line_is_key_value(match):
        # After other text on its line: prose ("Token: the unit of text") or inline code (`token_logprobs:
        # Optional[List[float]]`, `auth: type[httpx2.Auth]` in a signature), unless the value is one run
        # of letters and digits mixed, as generated secrets are (`{client_id: web, client_secret: q8Xz2L}`).
        return _MIXED_RUN.fullmatch(value) is not None and _looks_generated(value)
    if not _IDENTIFIER.match(value):
        return True  # digits first, symbols, slashes: literal text such as hunter2! or s3cr3t/+x
    # A bare name is usually code: `password = password`, `{"token": token}`, `token: this.token`.
    if "." in value or match.group("q"):
        return False
    if operator == "=":
        # KEY=value in .env files, shells and --flag=value; with spaces (`key = name`, as in Python, INI,
        # Makefiles) only a value that reads as generated.
        # A no-break space around `=` is pasted text (a chat, a wiki), never code: judged like `KEY=value`.
        return separator == "=" or not separator.isascii() or _looks_generated(value)
    if operator == ":":
        return not _TYPE_NAME.match(value)  # YAML `password: hunter2`, not `api_key: SecretStr`
    return False


def _replace_assignment(match: re.Match[str]) -> str:
    if not _key_is_sensitive(match.group("key")) or not _value_is_secret(match):
        return match.group(0)
    value = match.group("value")
    quote = value[0] if value[:1] in "\"'" else ""
    head = match.group(0)[: match.start("value") - match.start()]
    return f"{head}{quote}{_marker('secret')}{quote}"


def redact_secrets(text: str) -> str:
    """Replace every recognised secret with `[REDACTED:kind]`, keeping the text around it."""
    if not text:
        return text
    lowered: str | None = None
    for shape in _SHAPE_RULES:
        if shape.folded:
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        if shape.gate.search(haystack) if shape.gate else any(gate in haystack for gate in shape.gates):
            replaced = shape.pattern.sub(shape.replace, text)
            if replaced != text:
                text, lowered = replaced, None
    if "--" in text:
        text = _FLAG.sub(_replace_flag, text)
    if lowered is None:
        lowered = text.lower()
    if ("=" in text or ":" in text) and any(gate in lowered for gate in _ASSIGNMENT_GATES):
        text = _ASSIGNMENT.sub(_replace_assignment, text)
    return text


def sanitize_for_storage(text: str) -> str:
    """What every write path stores: no `<private>` blocks, no secrets."""
    return redact_secrets(strip_private(text))


def sanitize_field(text: str | None) -> str | None:
    """A short stored field (a title, a pin or rule reason, a source) as it may be kept: sanitized and
    stripped; None when nothing is left."""
    if text is None:
        return None
    return sanitize_for_storage(text).strip() or None


def sanitize_tags(tags: Iterable[str]) -> list[str]:
    """Tags as they may be kept, in order, without repeats. A secret inside a tag becomes its marker
    (`env=[REDACTED:secret]`); a tag that was nothing but secrets (or `<private>`) is dropped rather than
    kept as a bare marker, which would only group unrelated memories under `[REDACTED:github_token]`."""
    kept: list[str] = []
    for tag in tags:
        clean = sanitize_for_storage(tag).strip()
        if not any(c.isalnum() for c in _MARKER.sub("", clean)):
            continue
        if clean not in kept:
            kept.append(clean)
    return kept
