"""Secrets recognised by the name they are assigned to (`DB_PASSWORD=…`, `--token X`, `<password>…`)."""

from __future__ import annotations

import re

from cems_cli.text._redact_base import (
    _BLANK,
    _FOLDED,
    _IDENTIFIER,
    _LITERALS,
    _TYPE_NAME,
    _is_placeholder,
    _is_plain_word,
    _marker,
    _replace_secret_group,
)

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
