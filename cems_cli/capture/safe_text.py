"""Making a hook's text safe to keep in the capture spool: `<private>` blocks dropped, secrets redacted, huge
values cut to head and tail (`clip`, `clip_tree`).

On the PostToolUse and Stop hooks' path, so stdlib only like the spool: the redaction module is imported
only when a text may hold something to redact (`may_need_redaction`)."""

from __future__ import annotations

from cems_cli.plumbing.hookio import json_dumps

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any


# Characters redacted beyond a cut point, so a secret that straddles the cut is still seen whole.
_MARGIN = 512
_WHITESPACE = " \t\n\r"
_KEY_LIMIT = 100
_MAX_DEPTH = 6
_MAX_ITEMS = 50
# Dict keys whose string value is judged with the key in view (`"DB_PASSWORD": "hunter2"` is a secret,
# although "hunter2" alone is not). A cheap lowercase substring test before the real check.
_SECRETISH = ("secret", "token", "pass", "pwd", "key", "cred", "auth")


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
# unchanged, so the hook need not import the redaction module, whose ~45 regular expressions take 10–30 ms to
# compile: a third of the hook's budget, spent on every `ls`. Written for the shapes in REDACTION_KINDS;
# tests/unit/test_tool_patterns.py fails when redaction (text/_redact_shapes.py) gains a shape not listed
# there, and tests/unit/test_redact_shortcut.py when a shape's gate is missing here.
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
# What may follow a secret-ish word before the separator in the redaction patterns (text/_redact_names.py): at
# most 40 more key characters (`pass` + `word`), a quote closing a quoted key, at most 64 blanks. Checked in a
# window of 128.
_KEY_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"
_KEY_TAIL = 40
_QUOTES = "\"'`"
_FLAG_CHARS = "abcdefghijklmnopqrstuvwxyz-"
_WORD_OR_DASH = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# "my password for the db is …": redaction (text/_redact_commands.py) allows `for` and three words of at most
# 64 characters between.
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


# The words redaction's "password is …" pattern starts with (pytest's PASSED is none of them).
_SAID_WORDS = ("password", "passphrase", "passcode", "passwd")


def _says_a_password(lowered: str) -> bool:
    """"password is …": one of the words, then ` is` or ` was` later on its line (within redaction's
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
    (redaction's flag pattern spans at most 6 words of 30 letters after the `--`)."""
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
