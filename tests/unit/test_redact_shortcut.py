"""The PostToolUse hook skips importing redaction when `spool.may_need_redaction` says a text cannot hold
a secret; that shortcut must know every gate of every shape redaction has, or a new kind is spooled raw."""

from __future__ import annotations

import random

import pytest

from cems_cli.capture import spool
from cems_cli.text import redact

# Gates that are secret-ish names: the shapes behind them need a `:` or `=` after the name (a header, an
# assignment), which is how the shortcut sees them (a name trigger and a separator).
NAME_GATES = {"authorization", "key", "token", "secret"}


def _gates() -> list[tuple[str, str]]:
    return [(shape.kind, gate) for shape in redact._SHAPE_RULES for gate in shape.gates]


@pytest.mark.parametrize(("kind", "gate"), _gates())
def test_the_shortcut_sees_every_gate(kind, gate):
    commands = dict(spool._COMMAND_TRIGGERS)
    if gate in NAME_GATES:
        assert spool.may_need_redaction(f"{gate}: x") and spool.may_need_redaction(f"{gate}=x"), kind
    elif gate in redact._COMMAND_GATES:
        # a client alone changes nothing: its password option must be there too
        assert not spool.may_need_redaction(f"{gate} --help")
        for option in commands[gate]:
            assert spool.may_need_redaction(f"{gate} {option}x"), (gate, option)
    else:
        assert spool.may_need_redaction(gate), kind
        assert spool.may_need_redaction(gate.upper()) and spool.may_need_redaction(gate.lower()), kind


SECRETS = [
    "AKIA" + "IOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXyz\n-----END PGP PRIVATE KEY BLOCK-----",
    '"private_key_id": "3f786850e387550fdab836ed7e6dc881de23001b"',
    "https://hooks.slack.com/services/" + "T0A1B2C3D/B4E5F6G7H/abcdefghij0123456789ABCD",
    "https://discord.com/api/webhooks/" + "123456789012345678/Ab3dEf6hIj9kLm2nOp5qRs-_Tu8vWx",
    "mysql -u root -pHunter2pw db",
    "curl -u admin:Hunter2pw https://api",
    "sshpass -p Hunter2pw ssh host",
    "docker login -u me -p Hunter2pw r.io",
    "redis-cli -a Hunter2pw ping",
    "ldapsearch -w Hunter2pw",
    "openssl pkcs12 -passout pass:Hunter2pw",
    "AccountName=acme;AccountKey=Zm9vYmFy+/Ab12==",
    "glpat-" + "Ab3dEf6hIj9kLm2nOp5q",
    "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
    "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "SG." + "Ab3dEf6hIj9kLm2nOp5qRs" + "." + "Tu8vWx1yZa4bCd7eFg0hIj3kLm6nOp9qRs2tUv5wXy8",
    'curl -H "x-api-key: Ab3dEf6hIj9k" https://api',
    "Authorization: Digest username=u, response=6629fae4",
    "Cookie: session=31d4d96e407aad42",
    "Set-Cookie: sid=31d4d96e407aad42; Path=/",
    "curl -b 'sid=31d4d96e' https://x",
    "API_KEY = abcd1234efgh5678",
]


@pytest.mark.parametrize("text", SECRETS)
def test_the_shortcut_never_skips_a_new_kind(text):
    assert redact.sanitize_for_storage(text) != text  # the sample really is a secret
    assert spool.may_need_redaction(text)
    assert spool.may_need_redaction(text.upper()) and spool.may_need_redaction(f"ok\n{text}\nok")


def test_the_shortcut_is_never_wrong_on_random_text_with_the_new_kinds():
    """Property: whenever the shortcut says "nothing to redact", redaction indeed changes nothing."""
    rng = random.Random(4321)
    pieces = [
        *("mysql", " -p", "Hunter2pw", "curl", " -u ", "a:b", "sshpass", "docker", " login", "Cookie", ": "),
        *("a=b", ";", "x-api-", "key", "Authorization", "Digest ", "hooks.slack.com/services/", "T0A1/B2C3/"),
        *("discord.com/api/webhooks/", "12345678/", "glpat-", "hf_", "npm_", "SG.", "AKIA"),
        *("IOSFODNN7EXAMPLE",),
        *("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", " = ", "="),
        *("\n", '"', "'", "-", "redis-cli", " -a ", "ldapsearch", " -w ", "pass:", "openssl"),
    ]
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        if not spool.may_need_redaction(text):
            assert redact.sanitize_for_storage(text) == text, text


def test_a_megabyte_without_private_tags_skips_the_tag_scan():
    """`clip` strips `<private>` from the whole text: ASCII text without "private" must not pay for it."""
    line = "<b>tests/test_api.py::test_case PASSED</b>\n"
    text = line * (1_000_000 // len(line))
    assert spool._strip_private(text) is text


@pytest.mark.parametrize(
    "text",
    [
        "tests/test_api.py::test_login PASSED\n==== 42 passed in 0.49s ====",
        "The password reset flow sends a token by email; see the key points below.",
        "------------------------------------------------------------\nRan 12 tests",
        "curl --fail -s localhost/health",
        "mysql --version",
    ],
)
def test_the_shortcut_skips_plain_output_that_only_mentions_a_name(text):
    """Names without a separator after them, clients without a password option: no import needed."""
    assert not spool.may_need_redaction(text)
    assert redact.sanitize_for_storage(text) == text


def test_the_shortcut_is_never_wrong_on_random_names_and_separators():
    rng = random.Random(99)
    pieces = [
        *("pass", "word", "token", "key", "auth", "secret", "pwd", "cred", "orization", "api", "x-", "db_"),
        *("=", ":", "=>", ":=", " ", "\t", "  ", "--", "-", "_", ".", '"', "'", "`", "\n", "hunter2x9"),
        *("a1b2c3d4e5f6", "value", "Bearer ", "abc", "login", " -p", "mysql", "curl", " -u ", "u:p"),
    ]
    for _ in range(6000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        if not spool.may_need_redaction(text):
            assert redact.sanitize_for_storage(text) == text, text
