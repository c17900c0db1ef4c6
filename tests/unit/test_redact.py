"""Privacy on write paths: <private> blocks vanish, secrets become [REDACTED:kind], prose and code survive."""

from __future__ import annotations

import time

import pytest

from cems_cli.text.redact import redact_secrets, sanitize_for_storage, strip_private

# Built from pieces so this file does not itself look like it leaks credentials.
GITHUB_CLASSIC = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ" + "."
       + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3\nq0Z9vW1xYz==\n"
       "-----END RSA PRIVATE KEY-----")


# --- <private> ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("a <private>secret</private> b", "a  b"),
        ("a <PRIVATE>secret</Private> b", "a  b"),
        ("a <private>line1\nline2\n</private>b", "a b"),
        ("x<private>1</private>y<private>2</private>z", "xyz"),
        ("keep <private>hide\neverything after", "keep "),
        ("x<private>a<private>b</private>c</private>y", "xy"),  # nested: the outer block is hidden
        ("stray </private> closer", "stray  closer"),
        ('a <private reason="pii">x</private> b', "a  b"),
        ("<privateer> is not a tag", "<privateer> is not a tag"),
        ("1 < 2 and <b>bold</b>", "1 < 2 and <b>bold</b>"),
    ],
)
def test_strip_private(text, expected):
    assert strip_private(text) == expected


# --- every secret kind ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key AKIAIOSFODNN7EXAMPLE in logs", "key [REDACTED:aws_access_key] in logs"),
        ("ASIAY34FZKBOKMUTVV7A", "[REDACTED:aws_access_key]"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws_secret_key]"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]"),
        (f'"aws_secret_key": "{AWS_SECRET}"', '"aws_secret_key": "[REDACTED:aws_secret_key]"'),
        (f"token {GITHUB_CLASSIC} here", "token [REDACTED:github_token] here"),
        ("gho_" + "x" * 36, "[REDACTED:github_token]"),
        ("ghu_" + "Ab1" * 12, "[REDACTED:github_token]"),
        ("ghs_" + "Ab1" * 12, "[REDACTED:github_token]"),
        ("ghr_" + "Ab1" * 12, "[REDACTED:github_token]"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github_token]"),
        ("OPENAI_API_KEY=sk-" + "a1B2" * 12, "OPENAI_API_KEY=[REDACTED:openai_key]"),
        ("sk-proj-" + "Ab3_-" * 10, "[REDACTED:openai_key]"),
        ("use sk-ant-api03-" + "Zx9" * 20 + " now", "use [REDACTED:anthropic_key] now"),
        ("xoxb-123456789012-abcdefABCDEF", "[REDACTED:slack_token]"),
        ("xoxp-1-2-3-abcdefghij", "[REDACTED:slack_token]"),
        ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "[REDACTED:google_api_key]"),
        ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe [REDACTED:stripe_key]"),
        ("rk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:bearer]"),
        (f"jwt={JWT}", "jwt=[REDACTED:jwt]"),
        (f"cookie {JWT};", "cookie [REDACTED:jwt];"),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private_key]\nafter"),
        ("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----", "[REDACTED:private_key]"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n(truncated", "[REDACTED:private_key]"),
        ("postgres://app:s3cr3t@db:5432/x", "postgres://app:[REDACTED:password]@db:5432/x"),
        ("https://user:tok3n@github.com/org/repo.git", "https://user:[REDACTED:password]@github.com/org/repo.git"),
        ("redis://:p4ss@cache:6379", "redis://:[REDACTED:password]@cache:6379"),  # password without a user
        ('curl -H "Authorization: Bearer abc.DEF-123_xyz" https://api',
         'curl -H "Authorization: Bearer [REDACTED:bearer]" https://api'),
        ("authorization: bearer opaque-token-value", "authorization: bearer [REDACTED:bearer]"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:bearer]"),
    ],
)
def test_secret_kinds(text, expected):
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:secret]"),
        ("export API_TOKEN=\"abc123def\"", "export API_TOKEN=\"[REDACTED:secret]\""),
        ("export CLIENT_SECRET='x9y8z7'", "export CLIENT_SECRET='[REDACTED:secret]'"),
        ("password: hunter2", "password: [REDACTED:secret]"),
        ("  db_passwd: 'c0rrect horse'", "  db_passwd: '[REDACTED:secret]'"),
        ('{"api_key": "abcd1234efgh", "user": "bob"}', '{"api_key": "[REDACTED:secret]", "user": "bob"}'),
        ("{'apiKey': 'abcd1234efgh'}", "{'apiKey': '[REDACTED:secret]'}"),
        ("MYSQL_PWD=rootpw", "MYSQL_PWD=[REDACTED:secret]"),
        ("PRIVATE_KEY=abcdef0123", "PRIVATE_KEY=[REDACTED:secret]"),
        ("STORAGE_ACCESS_KEY=abcdef0123", "STORAGE_ACCESS_KEY=[REDACTED:secret]"),
        ("GOOGLE_CREDENTIALS=/dev/x+y", "GOOGLE_CREDENTIALS=[REDACTED:secret]"),
        ("X_AUTH=abc123", "X_AUTH=[REDACTED:secret]"),
        ("SECRET_KEY_BASE=f00ba4", "SECRET_KEY_BASE=[REDACTED:secret]"),
        ("accessToken = \"tok_12345\"", "accessToken = \"[REDACTED:secret]\""),
        ("self.password = \"hunter2\"", "self.password = \"[REDACTED:secret]\""),
        ("https://api.example.com/cb?access_token=abc123&state=x",
         "https://api.example.com/cb?access_token=[REDACTED:secret]&state=x"),
        ("mysql --password hunter2 -u root", "mysql --password [REDACTED:secret] -u root"),
        ("cli --api-key=Zx9Zx9Zx9", "cli --api-key=[REDACTED:secret]"),
        ('tool --token "Qw3rty!"', 'tool --token "[REDACTED:secret]"'),
        ("'password' => 's3cret'", "'password' => '[REDACTED:secret]'"),
    ],
)
def test_assignments_keep_the_key_and_redact_the_value(text, expected):
    assert redact_secrets(text) == expected


# --- things that must survive ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text",
    [
        "The password reset flow sends a token by email.",
        "Token: the unit of text a model reads",
        "Auth: we use OAuth via Google for all services",
        "password = get_password()",
        "password = password",
        "token = self.token",
        "secret = settings.secret",
        '{"password": password, "token": token}',
        "api_key: str",
        "    api_key: Optional[str] = None",
        "    token: SecretStr",
        "token: string;",
        "API_KEY=${API_KEY}",
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "password=<your password here>",
        "DB_PASSWORD=********",
        "PASSWORD=",
        "api_key = None",
        "auth: true",
        "MAX_TOKENS=4096",
        "max_tokens: 800",
        "num_tokens = count_tokens(text)",
        "TOKEN_URL=https://auth.example.com/token",
        "PASSWORD_FILE=/run/secrets/db",
        "SECRET_NAME=prod-db",
        "token_count = 12",
        "author: Jane Doe",
        "authority=ca.example.com",
        "PWD=/home/dev/project",
        "OLDPWD=/home/dev",
        "if token == expected_token:",
        "pass --token to the CLI when you call it",
        "see --password-file for details",
        "the sk-learn and sk-fading-circle-animation-class names",
        "task-management-system-service-layer",
        "AKIA is the prefix of AWS access key ids",
        "git@github.com:org/repo.git",
        "http://localhost:8080/path@v2",
        "postgres://app:${DB_PASS}@db/x",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <token>",
        "redis_url: str = os.environ['REDIS_URL']",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "def check_password(password: str) -> bool:",
        "sort_key=lambda r: r.id",
    ],
)
def test_no_false_positives(text):
    assert redact_secrets(text) == text


def test_redaction_is_idempotent():
    text = (f"GITHUB_TOKEN={GITHUB_CLASSIC}\nDB_PASSWORD=hunter2\n{PEM}\n"
            f"postgres://u:pw123@h/db\n\"api_key\": \"abcd1234\"\nAuthorization: Bearer {JWT}")
    once = redact_secrets(text)
    assert redact_secrets(once) == once
    assert GITHUB_CLASSIC not in once and "hunter2" not in once and "MIIEow" not in once
    assert "pw123" not in once and "abcd1234" not in once and JWT not in once
    assert once.count("[REDACTED:") == 6


def test_specific_kind_wins_over_generic_assignment():
    assert redact_secrets(f"GITHUB_TOKEN={GITHUB_CLASSIC}") == "GITHUB_TOKEN=[REDACTED:github_token]"
    assert redact_secrets(f'"token": "{GITHUB_CLASSIC}"') == '"token": "[REDACTED:github_token]"'


def test_empty_text():
    assert redact_secrets("") == "" and strip_private("") == "" and sanitize_for_storage("") == ""


def test_sanitize_for_storage_strips_then_redacts():
    text = "deploy with DB_PASSWORD=hunter2 <private>my ssn is 123-45-6789</private> done"
    assert sanitize_for_storage(text) == "deploy with DB_PASSWORD=[REDACTED:secret]  done"


def test_private_block_hides_secrets_without_a_marker():
    assert sanitize_for_storage(f"x <private>{GITHUB_CLASSIC}</private> y") == "x  y"


def test_large_inputs_stay_linear():
    blob = ("QUJD" * 250_000) + "\n"  # 1 MB of base64 without separators
    code = "value = compute(x)  # a comment with password and token words\n" * 20_000
    started = time.perf_counter()
    assert redact_secrets(blob) == blob
    assert redact_secrets(code) == code
    assert redact_secrets("password" * 100_000) == "password" * 100_000
    assert time.perf_counter() - started < 5.0
