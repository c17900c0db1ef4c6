"""Privacy for every write path: drop `<private>` blocks, replace secrets with `[REDACTED:kind]`.

Secrets are recognised two ways: by their own shape (provider tokens, JWTs, PEM private keys, passwords in
URLs, Authorization headers), and by the name they are assigned to (`DB_PASSWORD=…`, `"api_key": "…"`).
The second way is where false positives live, so it keeps the key, redacts only the value, and leaves
values that are plainly code or references alone: `password = get_password()`, `token: str`,
`API_KEY=${API_KEY}`, `secret = settings.secret`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_FLAGS = re.ASCII


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# --- <private> blocks -----------------------------------------------------------------------------------

_PRIVATE_TAG = re.compile(r"<(/?)private\b[^>]*>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Remove `<private>…</private>` blocks (any case, across lines, nested). An unclosed `<private>`
    hides everything after it: the writer meant it private and forgot to close it. A stray `</private>` is
    dropped."""
    if "<" not in text:
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


# --- secrets recognised by shape ------------------------------------------------------------------------

# (kind, pattern). Order matters: whole blocks and URLs first, generic shapes last. A pattern's optional group
# "keep" is left in place and only the rest of the match is replaced.
_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(
        r"-----BEGIN (?P<label>[A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END (?P=label)PRIVATE KEY-----|\Z)",
        re.DOTALL)),
    ("password", re.compile(
        r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:)(?P<secret>[^\s@/]+)(?=@)", _FLAGS)),
    ("bearer", re.compile(
        r"(?P<keep>\bAuthorization[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token)\s+)(?P<secret>[A-Za-z0-9\-._~+/]+=*)",
        re.IGNORECASE | _FLAGS)),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", _FLAGS)),
    ("aws_secret_key", re.compile(
        r"(?P<keep>\baws_?secret(?:_?access)?_?key[\"']?[ \t]*[:=][ \t]*[\"']?)"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        re.IGNORECASE | _FLAGS)),
    ("github_token", re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b", _FLAGS)),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}", _FLAGS)),
    # OpenAI: sk-…, sk-proj-…, sk-svcacct-…; the digit look-ahead spares kebab-case words like sk-fade-in-…
    ("openai_key", re.compile(r"\bsk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}", _FLAGS)),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", _FLAGS)),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", _FLAGS)),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", _FLAGS)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", _FLAGS)),
]


def _shape_replacer(kind: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        groups = match.groupdict()
        secret = groups.get("secret")
        if secret is None:
            return _marker(kind)
        if _is_placeholder(secret):
            return match.group(0)
        return (groups.get("keep") or "") + _marker(kind)

    return replace


# Command-line flags: `--password hunter2`. (`--password=…` is an assignment, handled below.)
_FLAG = re.compile(
    r"(?P<keep>(?<![\w-])--(?:[a-z]+-)*(?:password|passwd|token|secret|api-key|apikey)[ \t]+)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)",
    re.IGNORECASE | _FLAGS,
)


def _replace_flag(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    bare = value[1:-1] if quote else value
    # Prose about flags ("pass --token to the CLI") is followed by plain words; secrets are not.
    if _is_placeholder(bare) or bare.startswith("-") or (not quote and bare.isalpha() and bare.islower()):
        return match.group(0)
    return f"{match.group('keep')}{quote}{_marker('secret')}{quote}"


# --- secrets recognised by the name they are assigned to ------------------------------------------------

# Any key containing a secret-ish word, then `=`, `:`, `:=` or `=>`, then a value on the same line; the key is
# checked precisely in `_key_is_sensitive`. Bounded repetitions keep the scan linear over long base64 blobs.
_ASSIGNMENT = re.compile(
    r"(?<![\w.\-])(?P<q>[\"']?)(?=[A-Za-z0-9_.\-]{1,100}[\"']?[ \t]*[:=])"  # cheap reject: no separator
    r"(?P<key>[A-Za-z0-9_.\-]{0,60}?"
    r"(?:secret|token|pass|pwd|key|credential|creds|auth)"
    r"[A-Za-z0-9_.\-]{0,40})(?P=q)"
    r"(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[^\s,;'\"`})\]&]+)",
    re.IGNORECASE | _FLAGS,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENSITIVE_KEY = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:SECRETS?|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTHKEY)(?=_|$)"
    r"|(?:^|_)(?:PWD|AUTH|PASS|CREDS)(?=_|$)"
    r"|(?:^|_)[A-Z0-9]*(?:API|PRIVATE|ACCESS|SECRET|AUTH|SIGNING|ENCRYPTION|MASTER)_KEYS?(?=_|$)"
)
# A last word that makes the key describe a secret rather than hold one: TOKEN_URL, PASSWORD_FILE…
_QUALIFIERS = frozenset(
    "COUNT COUNTS LIMIT LIMITS LENGTH LEN SIZE TYPE TYPES KIND URL URLS URI ENDPOINT HOST PORT PATH "
    "FILE FILES FILENAME DIR NAME NAMES ID IDS EXPIRY EXPIRES EXPIRATION AT TTL TIMEOUT MIN MAX ENABLED "
    "DISABLED REQUIRED HEADER FIELD PARAM PROVIDER METHOD MODE POLICY RESET PROMPT HINT LABEL HELP FORMAT "
    "SCOPE SCOPES COST BUDGET USAGE ENV VAR VARIABLE".split()
)
_NOT_SECRET_KEYS = frozenset({"PWD", "OLDPWD"})  # the shell's working directories
_LITERALS = frozenset(
    "none null nil true false yes no on off undefined enabled disabled required optional auto default "
    "str string int bool boolean bytes number any object secretstr".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)*(?:\[.*\])?\Z")


def _is_placeholder(value: str) -> bool:
    """References and stand-ins, not secrets: $VAR, ${VAR}, {{ secrets.X }}, <token>, %(x)s, ****, xxxx."""
    value = value.strip("\"'")
    if not value or value.startswith(("$", "{", "<", "%", "[REDACTED")):
        return True
    return not value.strip("*xX.")


def _key_is_sensitive(key: str) -> bool:
    words = _CAMEL.sub("_", key.strip("-_.")).upper().replace("-", "_").replace(".", "_")
    if words in _NOT_SECRET_KEYS or not _SENSITIVE_KEY.search(words):
        return False
    return words.rsplit("_", 1)[-1] not in _QUALIFIERS


def _line_is_key_value(match: re.Match[str]) -> bool:
    """True when the key starts its line and the value ends it (comments aside): a YAML-style `key: value`
    line rather than prose such as "Token: the unit of text a model reads"."""
    text = match.string
    line_start = text.rfind("\n", 0, match.start()) + 1
    if text[line_start:match.start()].strip(" \t-") != "":
        return False
    line_end = text.find("\n", match.end())
    rest = text[match.end():] if line_end < 0 else text[match.end():line_end]
    return not rest.strip() or rest.lstrip().startswith("#")


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
        return False  # prose or inline code, not a config line
    if not _IDENTIFIER.match(value):
        return True  # digits first, symbols, slashes: literal text such as hunter2! or s3cr3t/+x
    # A bare name is usually code: `password = password`, `{"token": token}`, `token: this.token`.
    if "." in value or match.group("q"):
        return False
    if operator == "=":
        return separator == "="  # KEY=value in .env files, shells and --flag=value; not `key = name`
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
    for kind, pattern in _SHAPES:
        text = pattern.sub(_shape_replacer(kind), text)
    text = _FLAG.sub(_replace_flag, text)
    return _ASSIGNMENT.sub(_replace_assignment, text)


def sanitize_for_storage(text: str) -> str:
    """What every write path stores: no `<private>` blocks, no secrets."""
    return redact_secrets(strip_private(text))
