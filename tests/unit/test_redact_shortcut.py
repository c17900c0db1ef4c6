"""The PostToolUse hook skips importing redaction when `safe_text.may_need_redaction` says a text cannot hold
a secret; that shortcut must know every gate of every shape redaction has, or a new kind is spooled raw."""

from __future__ import annotations

import random

import pytest

from cems_cli.capture import safe_text
from cems_cli.text import _redact_shapes, redact

# Gates that are secret-ish names: the shapes behind them need a `:` or `=` after the name (a header, an
# assignment), which is how the shortcut sees them (a name trigger and a separator).
NAME_GATES = {"authorization", "key", "token", "secret", "password", "passwd", "passphrase", "credential"}


def _gates() -> list[tuple[str, str]]:
    return [(shape.kind, gate) for shape in _redact_shapes._SHAPE_RULES for gate in shape.gates]


# Gates too common in prose to count alone: the shortcut looks at what the shape needs after them.
TAILED_GATES = {
    "SK": "SK" + "0123456789abcdef" * 2,  # Twilio: 32 hex digits
    "key-": "key-" + "0123456789abcdef" * 2,  # Mailgun: 32 hex digits
    ":A": "123456789:A" + "a1_" * 11 + "b",  # Telegram: a bot id, then 34 token characters
    # "my password is …"
    "passw": "the password is x",
    "passphrase": "the passphrase is x",
    "passcode": "the passcode is x",
}


@pytest.mark.parametrize(("kind", "gate"), _gates())
def test_the_shortcut_sees_every_gate(kind, gate):
    commands = dict(safe_text._COMMAND_TRIGGERS)
    if gate in NAME_GATES:
        assert safe_text.may_need_redaction(f"{gate}: x") and safe_text.may_need_redaction(f"{gate}=x"), kind
    elif gate in TAILED_GATES:
        assert not safe_text.may_need_redaction(f"{gate} ")
        assert safe_text.may_need_redaction(TAILED_GATES[gate]), kind
    elif gate in commands:
        # a client (or a .netrc keyword) alone changes nothing: its password option must be there too
        assert not safe_text.may_need_redaction(f"{gate} --help")
        for option in commands[gate]:
            assert safe_text.may_need_redaction(f"{gate} {option}x"), (gate, option)
    else:
        assert safe_text.may_need_redaction(gate), kind
        assert safe_text.may_need_redaction(gate.upper()) and safe_text.may_need_redaction(gate.lower()), kind


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
    "<password>Hunter2pw</password>",
    'const apiKey: string = "Ab3dEf6hIj9k";',
    # the second round of kinds
    "vault login hvs." + "CAESIJlWh3Xq0b9Ff2y8Zk4TnV1rA6sD",
    "dapi" + "0123456789abcdefgh0123456789abcd",
    "shpat_" + "0123456789abcdef" * 2,
    "twine upload -p pypi-" + "AgEIcHlwaS5vcmc" + "Ab1_" * 15,
    "dop_v1_" + "0123456789abcdef" * 4,
    "ya29." + "a0AfB_byC1d2E3f4G5h6I7j8",
    "GOCSPX-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1w",
    "xapp-1-A0123456789-1234567890123-" + "0123456789abcdef" * 4,
    "whsec_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "glsa_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "_0a1b2c3d",
    "lin_api_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6h",
    "ntn_" + "12345678901" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3",
    "ATATT3" + "xFfGF0" + "Ab3dEf6hIj9k" * 8,
    "PMAK-" + "0123456789abcdef01234567" + "-" + "0123456789abcdef" * 2 + "01",
    "SK" + "0123456789abcdef" * 2,
    "key-" + "0123456789abcdef" * 2,
    "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
    "https://api.telegram.org/bot" + "1234567890:AAH" + "b3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_",
    "machine api.heroku.com login me@acme.io password Hunter2pw",
    "htpasswd -bc .htpasswd admin Hunter2pw",
    "echo 'Hunter2pw' | sudo -S apt-get update",
    "zip -P Hunter2pw backup.zip db.sql",
    "7z a -pHunter2pw backup.7z db.sql",
    "smbclient //fs/share -U jdoe%Hunter2pw",
    "openssl enc -aes-256-cbc -in a -k Hunter2pw",
    "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig=Ab3dEf6hIj9kLm2nOp5q%3D",
    "https://b.s3.amazonaws.com/k?X-Amz-Signature=" + "0123456789abcdef" * 4,
    "my password is Hunter2pw",
    "oauth: {client_id: web, client_secret: q8Xz2LmN4pR7sT1v}",
]


@pytest.mark.parametrize("text", SECRETS)
def test_the_shortcut_never_skips_a_new_kind(text):
    assert redact.sanitize_for_storage(text) != text  # the sample really is a secret
    assert safe_text.may_need_redaction(text) and safe_text.may_need_redaction(f"ok\n{text}\nok")
    # uppercased, it may no longer be one (Mailgun's key- is lowercase); when it still is, it is seen
    shouted = text.upper()
    assert safe_text.may_need_redaction(shouted) or redact.sanitize_for_storage(shouted) == shouted


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
        *("machine", " login ", " password ", "default", "echo ", " | ", "sudo", " -S ", "<<< ", "htpasswd"),
        *(" -b ", "zip", " -P ", "7z", " -p", "smbclient", " -U ", "a%b", " -k ", "?", "&", "sig="),
        *("SK", "key-"),
        *("0123456789abcdef", "1234567", ":A", "Ab1_Cd2-Ef3", "my ", " is ", " was ", " for the db", "hvs."),
        *("dapi", "ya29.", "whsec_", "xapp-", "client_secret: ", "{a: b, ", "}", "\u00a0"),
    ]
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        if not safe_text.may_need_redaction(text):
            assert redact.sanitize_for_storage(text) == text, text


def test_a_megabyte_without_private_tags_skips_the_tag_scan():
    """`clip` strips `<private>` from the whole text: ASCII text without "private" must not pay for it."""
    line = "<b>tests/test_api.py::test_case PASSED</b>\n"
    text = line * (1_000_000 // len(line))
    assert safe_text._strip_private(text) is text


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
    assert not safe_text.may_need_redaction(text)
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
        if not safe_text.may_need_redaction(text):
            assert redact.sanitize_for_storage(text) == text, text
