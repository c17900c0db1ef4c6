"""Secrets recognised by their shape, and the ordered list of every shape `redact_secrets` runs."""

from __future__ import annotations

import bisect
import re

from cems_cli.text._redact_base import _FLAGS, _FOLDED, _marker, _Shape
from cems_cli.text._redact_commands import (
    _COMMAND,
    _COMMAND_GATES,
    _NETRC,
    _RARE_COMMAND,
    _RARE_COMMAND_GATES,
    _SAID_PASSWORD,
    _SUDO_STDIN,
    _replace_command,
    _replace_plain_secret,
    _replace_said_password,
    _replace_sudo_stdin,
)
from cems_cli.text._redact_headers import (
    _AUTHORIZATION,
    _COOKIE,
    _KEY_HEADER,
    _replace_authorization,
    _replace_cookie,
    _replace_key_header,
)
from cems_cli.text._redact_names import (
    _NAME_WORDS,
    _TYPED_ASSIGNMENT,
    _XML_GATES,
    _XML_KEY_VALUE,
    _XML_SECRET,
    _replace_named_secret,
)

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from cems_cli.text._redact_base import Replacer


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
