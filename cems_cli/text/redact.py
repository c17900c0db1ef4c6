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

import re

from cems_cli.text._redact_base import _MARKER
from cems_cli.text._redact_names import (
    _ASSIGNMENT,
    _ASSIGNMENT_GATES,
    _FLAG,
    _replace_assignment,
    _replace_flag,
)
from cems_cli.text._redact_shapes import _SHAPE_RULES

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable


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
