"""Credentials in HTTP headers: `Authorization:`, `X-Api-Key:` and its kin, `Cookie:` and `Set-Cookie:`."""

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
    _splice,
)
from cems_cli.text._redact_names import _key_is_sensitive

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
