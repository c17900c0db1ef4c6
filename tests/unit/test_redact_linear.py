"""Redaction runs in linear time on any text: every pattern, on 200 KB inputs built to make it backtrack.

Hooks redact tool output that anything can shape (a file, a web page, a log), on the agent's path. Before
the rewrite, 200 KB of `sk-sk-sk-…` took 86 s in the OpenAI pattern, `a-a-a-…` 36 s in the URL-password
pattern, `eyJ-eyJ-…` 14 s in the JWT pattern and `<private<private…` 3.5 s in the tag scan. Each input here
is a long run of the characters a pattern loops over, or a prefix repeated with a near miss after it; a
quadratic pattern takes seconds on them, a linear one milliseconds. The bounds are generous (this runs on
a loaded 2-core machine); what they catch is the difference between the two.
"""

from __future__ import annotations

import re
import time

import pytest

from cems_cli.text import _redact_base as base
from cems_cli.text import _redact_commands as commands
from cems_cli.text import _redact_headers as headers
from cems_cli.text import _redact_names as names
from cems_cli.text import _redact_shapes as shapes
from cems_cli.text import redact

SIZE = 200_000


def fill(unit: str) -> str:
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


AKID = "AKIA" + "IOSFODNN7EXAMPLE"

# Runs of the characters most patterns loop over: every family is also run on these.
GENERIC = {
    "letters": fill("a"),
    "word-dash": fill("a-"),
    "word-dot": fill("a."),
    "dashes": fill("-"),
    "base64": fill("QUJD"),
    "base64-symbols": fill("aB3/+"),
    "spaces": fill(" "),
    "quotes": fill('"'),
    "mixed": fill("a=:\"' -_./"),
}

# Inputs aimed at one family each: its prefix repeated, or its prefix followed by a run that almost matches.
TARGETED = {
    "private_tag": {"tags": fill("<private"), "tag-attributes": fill("<private a")},
    "private_key": {
        "begins": fill("-----BEGIN "),
        "label": "-----BEGIN " + fill("A "),
        "unclosed": fill("-----BEGIN A PRIVATE KEY-----"),
        "pgp-unclosed": fill("-----BEGIN PGP PRIVATE KEY BLOCK-----"),
    },
    "aws": {
        "ids": fill("AKIAAAAAAAAAAAAAAAAA "),
        "id-then-base64": AKID + " " + fill("aB3/+"),
        "near-misses": fill(AKID + " aB3dE/"),
        "named": fill("aws_secret_access_key= "),
    },
    "url_password": {
        "scheme-run": fill("ab+"),
        "schemes": fill("a://"),
        "user": "a://b:" + fill("c"),
        "colons": fill("a://b:c"),
        "no-at": fill("https://user:pass/"),
    },
    "webhooks": {
        "slack": fill("hooks.slack.com/services/"),
        "discord": fill("discord.com/api/webhooks/1234567/"),
    },
    "command_line": {
        "names": fill("mysql "),
        "options": "mysql " + fill(" -p"),
        "quotes": "mysql " + fill("\"'"),
        "curl-users": "curl " + fill(" -u a"),
        "curl-colons": "curl -u " + fill("a:"),
        "login": "docker login " + fill(" -p"),
        "separators": fill("curl;mysql|sshpass&"),
        "continuations": "mysql " + fill("\\\n"),
        "openssl-keys": "openssl enc " + fill(" -k"),
    },
    "rare_commands": {
        "htpasswd-words": "htpasswd -b " + fill("a "),
        "htpasswd-quotes": "htpasswd -b " + fill("'a' \""),
        "smb-users": "smbclient " + fill(" -U a%"),
        "smb-run": "smbclient -U " + fill("a"),
        "zip-options": "zip " + fill(" -P"),
        "7z-options": "7z " + fill(" -p"),
        "rare-names": fill("zip 7z smbclient htpasswd "),
    },
    "headers": {
        "authorization": fill("Authorization: "),
        "authorization-quoted": fill('"Authorization: x'),
        "authorization-escaped": '"Authorization: Bearer ' + fill('\\"'),
        "authorization-words": fill("Authorization"),
        "key-header": fill("x-api-key: "),
        "dashed-words": fill("x-x-x-key"),
        "dashed-key-colon": fill("a-b-c-d-key:"),
        "cookies": fill("Cookie: a=b;"),
        "cookie-pairs": "Cookie: " + fill("a=b;"),
        "set-cookie": fill("Set-Cookie: "),
    },
    "tokens": {
        "jwt-dashes": fill("eyJ-"),
        "slack-app": fill("xapp-"),
        "stripe-webhook": fill("whsec_"),
        "jwt-dots": fill("eyJaaaaa."),
        "jwt-second-segment": "eyJaaaaa." + fill("eyJ-"),
        "openai": fill("sk-"),
        "anthropic": fill("sk-ant-"),
        "stripe": fill("sk_live_"),
        "github": fill("ghp_"),
        "github-pat": fill("github_pat_"),
        "gitlab": fill("glpat-"),
        "slack": fill("xoxb-"),
        "google": fill("AIza-"),
        "huggingface": fill("hf_a"),
        "huggingface-run": "hf_" + fill("aB"),
        "npm": fill("npm_"),
        "sendgrid": fill("SG.a"),
    },
    "provider_tokens": {
        "vault": fill("hvs."),
        "vault-run": "hvs." + fill("aB3-"),
        "databricks": fill("dapi"),
        "rapidapi": fill("rapidapi0"),
        "shopify": fill("shpat_"),
        "pypi": fill("pypi-AgE"),
        "digitalocean": fill("dop_v1_"),
        "google-oauth": fill("ya29."),
        "google-secret": fill("GOCSPX-"),
    },
    "provider_tokens_2": {
        "grafana": fill("glsa_"),
        "grafana-cloud": "glc_" + fill("aB3+"),
        "linear": fill("lin_api_"),
        "notion": fill("ntn_0"),
        "atlassian": fill("ATATT3"),
        "atlassian-run": "ATATT3" + fill("aB3_"),
        "bitbucket": fill("ATBB"),
        "postman": fill("PMAK-"),
        "twilio": fill("SK0"),
        "mailgun": fill("key-0"),
        "age": fill("AGE-SECRET-KEY-1"),
        "digits": fill("0"),
        "telegram-ids": fill("1234567:A"),
        "telegram-tail": "1234567:A" + fill("a"),
        "telegram-bot": fill("bot1"),
    },
    "signed_url": {
        "sig": fill("?sig="),
        "sig-value": "?sig=" + fill("a"),
        "amz": fill("&X-Amz-Signature="),
        "signature-run": fill("&signature=a"),
    },
    "passwords": {
        "machines": fill("machine "),
        "machine-logins": "machine a" + fill(" login b"),
        "machine-passwords": fill("machine a password "),
        "defaults": fill("default "),
        "echoes": fill("echo "),
        "echo-words": "echo " + fill("a "),
        "echo-sudo": fill("echo a | sudo "),
        "sudos": fill("sudo "),
        "sudo-options": "sudo " + fill("-S "),
        "here-strings": fill("sudo <<<"),
        "said": fill("password is "),
        "said-for": fill("password for a "),
        "said-for-words": "password for " + fill("a "),
        "passwords": fill("password "),
        "said-values": fill("my password is x "),
    },
    "flag": {"flags": fill("--password "), "flag-words": fill("--a-"), "flag-quotes": fill('--token "')},
    "assignment": {
        "key-words": fill("key"),
        "key-spaces": fill("password" + " " * 50),
        "open-quotes": fill('pass="'),
        "open-single-quotes": fill("pass='"),
        "escaped-quotes": 'pass="' + fill('\\"'),
        "yaml-pairs": fill("token: abcdef "),
        "long-keys": fill("a" * 99 + "="),
        "keyword-keys": fill("keykeykey" * 10 + "="),
        "yaml-indent": fill("-") + "token: abc",
        "camel-keys": fill("apiKeyToken="),
    },
    "markup": {
        "open-tags": fill("<password>"),
        "unclosed-values": fill("<password>a"),
        "long-tag-names": fill("<" + "a" * 60 + "token"),
        "key-values": fill('key="password" value="'),
        "typed": fill("apiKey: string = "),
        "typed-unclosed": fill('token: str = "a'),
        "secret-words": fill("secrettokenpassword"),
    },
}

# The provider tokens added with the second round of kinds: two families of their own, so that each family's
# total stays a sum over a dozen patterns or so (the slack and stripe shapes, extended, stay under tokens).
PROVIDER_KINDS = (
    "vault_token", "databricks_token", "shopify_token", "pypi_token", "digitalocean_token",
    "google_oauth_token", "google_client_secret", "grafana_token", "linear_key", "notion_token",
    "atlassian_token", "postman_key", "twilio_key", "mailgun_key", "age_secret_key", "telegram_bot_token",
)

def _shape_patterns(*sources: tuple[str, int]) -> list[re.Pattern[str]]:
    """The compiled patterns of the shapes given by their source (compiled on first use)."""
    return [shape.pattern for shape in shapes._SHAPE_RULES if shape._source in sources]


# Every pattern that scans a text (with sub, search or finditer), by family. Patterns used only with
# `.match` on a value already cut out by a scanner are in ANCHORED: they see each character once.
SCANNERS: dict[str, list[re.Pattern[str]]] = {
    "private_tag": [redact._PRIVATE_TAG],
    "private_key": [shapes._PRIVATE_KEY],
    "aws": [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind.startswith("aws")],
    "provider_tokens": [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind in PROVIDER_KINDS[:7]],
    "provider_tokens_2": [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind in PROVIDER_KINDS[7:]],
    "signed_url": [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind == "signature"],
    "passwords": [
        *_shape_patterns(commands._NETRC, commands._SUDO_STDIN, commands._SAID_PASSWORD),
        commands._SUDO_STDIN_FLAG,
    ],
    "url_password": [shapes._URL_PASSWORD],
    "webhooks": [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind.endswith("_webhook")],
    "command_line": [
        commands._COMMAND, commands._CURL_USER, commands._CURL_COOKIE,
        *(commands._OPTION_VALUE[name] for name in ("mysql", "sshpass", "login", "redis-cli", "ldap")),
        commands._OPTION_VALUE["openssl"],
    ],
    "rare_commands": [
        *_shape_patterns(commands._RARE_COMMAND), commands._SMB_USER, commands._WORD,
        commands._OPTION_VALUE["zip"], commands._OPTION_VALUE["7z"],
    ],
    "headers": [headers._AUTHORIZATION, headers._KEY_HEADER, headers._COOKIE, headers._COOKIE_PAIR],
    "tokens": [
        shape.pattern
        for shape in shapes._SHAPE_RULES
        if shape.kind.endswith(("_token", "_key"))
        and not shape.kind.startswith(("aws", "private"))
        and shape.kind not in PROVIDER_KINDS
    ] + [shape.pattern for shape in shapes._SHAPE_RULES if shape.kind == "jwt"] + [base._MARKER],
    "flag": [names._FLAG],
    "gates": [shape.gate for shape in shapes._SHAPE_RULES if shape.gate],
    "assignment": [names._ASSIGNMENT, names._CAMEL, names._SENSITIVE_KEY],
    "markup": [names._XML_SECRET, names._XML_KEY_VALUE, names._TYPED_ASSIGNMENT],
}
ANCHORED = [
    base._IDENTIFIER, base._TYPE_NAME, headers._SCHEME, headers._CREDENTIAL, headers._AUTH_PARAM,
    names._REST_OF_LINE_IS_BLANK, commands._LOGIN, names._MIXED_RUN,
]
# CPU time of this process, not wall time: on a machine shared with other jobs, waiting for a core is not the
# pattern's cost, and a quadratic pattern burns the CPU time itself.
_clock = time.process_time
# One pattern on one 200 KB input: 1-35 ms when linear, seconds when quadratic. A family runs each of its
# patterns on ~10-25 inputs: 0.05-0.8 s here.
PAIR_BUDGET_SECONDS = 0.25
FAMILY_BUDGET_SECONDS = 2.0


def _module_patterns() -> set[re.Pattern[str]]:
    found: set[re.Pattern[str]] = set()
    modules = (redact, base, commands, headers, names, shapes)
    for value in (value for module in modules for value in vars(module).values()):
        if isinstance(value, re.Pattern):
            found.add(value)
        elif isinstance(value, dict):
            found.update(v for v in value.values() if isinstance(v, re.Pattern))
    found.update(shape.pattern for shape in shapes._SHAPE_RULES)
    found.update(shape.gate for shape in shapes._SHAPE_RULES if shape.gate)
    return found


def test_every_pattern_of_the_module_is_checked_here():
    """A new pattern, in any redaction module, must be given a family here (and so adversarial inputs)."""
    covered = {pattern for patterns in SCANNERS.values() for pattern in patterns} | set(ANCHORED)
    assert _module_patterns() - covered == set()


def _scan(patterns: list[re.Pattern[str]], inputs: dict[str, str]) -> dict[str, float]:
    timings = {}
    for pattern in patterns:
        for name, text in inputs.items():
            started = _clock()
            for _match in pattern.finditer(text):
                pass
            timings[f"{pattern.pattern[:40]!r} on {name}"] = _clock() - started
    return timings


@pytest.mark.parametrize("family", sorted(SCANNERS))
def test_each_pattern_family_is_linear_on_adversarial_input(family):
    inputs = {**GENERIC, **TARGETED.get(family, {})}
    timings = _scan(SCANNERS[family], inputs)
    slowest = max(timings, key=timings.__getitem__)
    total = sum(timings.values())
    assert timings[slowest] < PAIR_BUDGET_SECONDS, f"{slowest}: {timings[slowest]:.2f}s"
    assert total < FAMILY_BUDGET_SECONDS, f"{family}: {total:.2f}s, slowest {slowest}"


def test_anchored_helpers_are_linear_on_adversarial_input():
    inputs = {**GENERIC, **{f"{f}:{n}": t for f, group in TARGETED.items() for n, t in group.items()}}
    started = _clock()
    for pattern in ANCHORED:
        for text in inputs.values():
            pattern.match(text)
    assert _clock() - started < 1.0


def test_the_whole_pipeline_is_fast_on_the_inputs_that_used_to_take_seconds():
    """What the hooks call, on the inputs that were quadratic before (86 s, 36 s, 14 s, 3.5 s, …)."""
    worst = [
        TARGETED["tokens"]["openai"], GENERIC["word-dash"], TARGETED["tokens"]["jwt-dashes"],
        TARGETED["tokens"]["jwt-dots"], TARGETED["private_tag"]["tags"], TARGETED["flag"]["flag-words"],
        TARGETED["aws"]["ids"], TARGETED["headers"]["key-header"], TARGETED["assignment"]["yaml-pairs"],
    ]
    started = _clock()
    for text in worst:
        redact.sanitize_for_storage(text)
    assert _clock() - started < 1.0


def test_every_adversarial_input_goes_through_the_pipeline_in_bounded_time():
    inputs = [*GENERIC.values(), *(text for group in TARGETED.values() for text in group.values())]
    started = _clock()
    for text in inputs:
        redact.sanitize_for_storage(text)
    # ~125 inputs of 200 KB (25 MB of text): about 4 s of CPU here, where one quadratic pattern takes minutes.
    assert _clock() - started < 8.0
