"""Privacy on write paths: <private> blocks vanish, secrets become [REDACTED:kind], prose and code survive."""

from __future__ import annotations

import json
import time

import pytest

from cems_cli.text.redact import (
    redact_secrets,
    sanitize_field,
    sanitize_for_storage,
    sanitize_tags,
    strip_private,
)

# Built from pieces so this file does not itself look like it leaks credentials.
GITHUB_CLASSIC = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ" + "."
       + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3\nq0Z9vW1xYz==\n"
       "-----END RSA PRIVATE KEY-----")
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
GITLAB = "glpat-" + "Ab3dEf6hIj9kLm2nOp5q"
HUGGINGFACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SENDGRID = "SG." + "Ab3dEf6hIj9kLm2nOp5qRs" + "." + "Tu8vWx1yZa4bCd7eFg0hIj3kLm6nOp9qRs2tUv5wXy8"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T0A1B2C3D/B4E5F6G7H/" + "abcdefghij0123456789ABCD"
DISCORD_HOOK = "https://discord.com/api/webhooks/" + "123456789012345678/" + "Ab3dEf6hIj9kLm2nOp5qRs-_Tu8vWx"
PGP = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXyz0ABCAC5\n=Ab12\n"
       "-----END PGP PRIVATE KEY BLOCK-----")


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
        ("https://user:tok3n@github.com/org/repo.git",
         "https://user:[REDACTED:password]@github.com/org/repo.git"),
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
        ("mysql --password hunter2 -u root", "mysql --password [REDACTED:password] -u root"),
        ("cli --api-key=Zx9Zx9Zx9", "cli --api-key=[REDACTED:secret]"),
        ('tool --token "Qw3rty!"', 'tool --token "[REDACTED:secret]"'),
        ("'password' => 's3cret'", "'password' => '[REDACTED:secret]'"),
    ],
)
def test_assignments_keep_the_key_and_redact_the_value(text, expected):
    assert redact_secrets(text) == expected


# --- kinds that used to slip through ---------------------------------------------------------------------

NEW_KINDS = [
    # a bare AWS secret next to its key id: same line, CSV row, `aws configure` prompts
    (f"{AWS_KEY_ID} {AWS_SECRET}", "[REDACTED:aws_access_key] [REDACTED:aws_secret_key]"),
    (f"name,key id,secret\nci,{AWS_KEY_ID},{AWS_SECRET}",
     "name,key id,secret\nci,[REDACTED:aws_access_key],[REDACTED:aws_secret_key]"),
    (f"AWS Access Key ID [None]: {AWS_KEY_ID}\nAWS Secret Access Key [None]: {AWS_SECRET}",
     "AWS Access Key ID [None]: [REDACTED:aws_access_key]\n"
     "AWS Secret Access Key [None]: [REDACTED:aws_secret_key]"),
    (f"{AWS_KEY_ID} at 3f786850e387550fdab836ed7e6dc881de23001b",  # a SHA-1 is no secret: one case only
     "[REDACTED:aws_access_key] at 3f786850e387550fdab836ed7e6dc881de23001b"),
    # webhooks: the path is the credential
    (f"post to {SLACK_HOOK} when done",
     "post to https://hooks.slack.com/services/[REDACTED:slack_webhook] when done"),
    (f"hook={DISCORD_HOOK}", "hook=https://discord.com/api/webhooks/[REDACTED:discord_webhook]"),
    (f"before\n{PGP}\nafter", "before\n[REDACTED:private_key]\nafter"),
    # passwords on command lines
    ("mysql -u root -pHunter2pw mydb", "mysql -u root -p[REDACTED:password] mydb"),
    ("mysql --password=Hunter2pw mydb", "mysql --password=[REDACTED:password] mydb"),
    ("mysql --password=Q9 -e 'select 1'", "mysql --password=[REDACTED:password] -e 'select 1'"),
    ("mysqldump -uroot -p'S3cr et' app > dump.sql",
     "mysqldump -uroot -p'[REDACTED:password]' app > dump.sql"),
    ("ssh box 'mariadb -u app -pHunter2pw'", "ssh box 'mariadb -u app -p[REDACTED:password]'"),
    ("curl -u admin:Hunter2pw https://api", "curl -u admin:[REDACTED:password] https://api"),
    ("curl --user 'bob:pass word' https://api", "curl --user 'bob:[REDACTED:password]' https://api"),
    ("curl -s 'https://x?a=1&b=2' -u me:Hunter2pw",
     "curl -s 'https://x?a=1&b=2' -u me:[REDACTED:password]"),
    ("sshpass -p Hunter2pw ssh deploy@host", "sshpass -p [REDACTED:password] ssh deploy@host"),
    ("sshpass -p'Hunter2pw' scp a b", "sshpass -p'[REDACTED:password]' scp a b"),
    ("sshpass -p Hunter2pw ssh -p 2222 host", "sshpass -p [REDACTED:password] ssh -p 2222 host"),
    ("run `mysql -pHunter2pw` then `ssh -pX host`", "run `mysql -p[REDACTED:password]` then `ssh -pX host`"),
    ("docker login -u me -p Hunter2pw registry.io",
     "docker login -u me -p [REDACTED:password] registry.io"),
    ("docker login --password Hunter2pw r.io", "docker login --password [REDACTED:password] r.io"),
    ("docker login --password=Hunter2pw r.io", "docker login --password=[REDACTED:password] r.io"),
    ("docker \\\n  login -u me \\\n  -p Hunter2pw r.io",
     "docker \\\n  login -u me \\\n  -p [REDACTED:password] r.io"),
    ("helm registry login r.io -u me -p Hunter2pw",
     "helm registry login r.io -u me -p [REDACTED:password]"),
    ("redis-cli -h cache -a Hunter2pw ping", "redis-cli -h cache -a [REDACTED:password] ping"),
    ("ldapsearch -x -D cn=admin -w Hunter2pw", "ldapsearch -x -D cn=admin -w [REDACTED:password]"),
    ("openssl pkcs12 -export -passout pass:Hunter2pw",
     "openssl pkcs12 -export -passout pass:[REDACTED:password]"),
    ("ls | mysql -phunter2 db", "ls | mysql -p[REDACTED:password] db"),
    # Azure connection strings
    ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFy+/Ab12==;EndpointSuffix=core.windows.net",
     "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:secret];EndpointSuffix=core.windows.net"),
    ("Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=Zm9vYmFy+/Ab12=",
     "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=[REDACTED:secret]"),
    # provider tokens
    (f"token {GITLAB} here", "token [REDACTED:gitlab_token] here"),
    (f"HF_TOKEN={HUGGINGFACE}", "HF_TOKEN=[REDACTED:huggingface_token]"),
    (f"//registry.npmjs.org/:_authToken={NPM}", "//registry.npmjs.org/:_authToken=[REDACTED:npm_token]"),
    (f"key {SENDGRID}.", "key [REDACTED:sendgrid_key]."),
    # headers, any scheme
    ('curl -H "x-api-key: Ab3dEf6hIj9k" https://api',
     'curl -H "x-api-key: [REDACTED:api_key]" https://api'),
    ("X-Api-Key: Ab3dEf6hIj9k", "X-Api-Key: [REDACTED:api_key]"),
    ("curl -H 'PRIVATE-TOKEN: Ab3dEf6hIj9k' https://gitlab",
     "curl -H 'PRIVATE-TOKEN: [REDACTED:api_key]' https://gitlab"),
    ("Authorization: token abc123def456", "Authorization: token [REDACTED:bearer]"),
    ("Authorization: SSWS 00abcdEFGH1234", "Authorization: SSWS [REDACTED:bearer]"),
    ("Authorization: 0a1b2c3d4e5f6a7b", "Authorization: [REDACTED:bearer]"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic [REDACTED:bearer]"),
    ('Authorization: Digest username="u", realm="r", response="6629fae49393a05397450978507c4ef1"',
     "Authorization: Digest [REDACTED:bearer]"),
    ("Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
     "SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924",
     "Authorization: AWS4-HMAC-SHA256 [REDACTED:bearer]"),
    ('curl -H "Authorization: Digest username=\\"u\\", response=\\"6629fae4\\"" https://x',
     'curl -H "Authorization: Digest [REDACTED:bearer]" https://x'),
    ('{"Authorization": "Bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ"}',
     '{"Authorization": "Bot [REDACTED:bearer]"}'),
    # cookies: names stay, values go; Set-Cookie attributes stay
    ("Cookie: session=31d4d96e407aad42; theme=dark",
     "Cookie: session=[REDACTED:cookie]; theme=[REDACTED:cookie]"),
    ("Set-Cookie: sid=31d4d96e407aad42; Path=/; Secure; HttpOnly",
     "Set-Cookie: sid=[REDACTED:cookie]; Path=/; Secure; HttpOnly"),
    ('curl -H "Cookie: sid=31d4d96e" https://x', 'curl -H "Cookie: sid=[REDACTED:cookie]" https://x'),
    ("curl -b 'sid=31d4d96e' https://x", "curl -b 'sid=[REDACTED:cookie]' https://x"),
    # `KEY = value` with spaces around `=`
    ("API_KEY = abcd1234efgh5678", "API_KEY = [REDACTED:secret]"),
    ("api_key = 9f8e7d6c5b4a", "api_key = [REDACTED:secret]"),
    ("client_secret = xQzTbLmRkWvPaNsEjHgF", "client_secret = [REDACTED:secret]"),
]


@pytest.mark.parametrize(("text", "expected"), NEW_KINDS)
def test_kinds_that_used_to_slip_through(text, expected):
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(("text", "expected"), NEW_KINDS)
def test_redacting_again_changes_nothing(text, expected):
    assert redact_secrets(expected) == expected


def test_a_service_account_file_keeps_nothing_of_its_key():
    private_key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    document = json.dumps({
        "type": "service_account", "project_id": "acme-prod",
        "private_key_id": "3f786850e387550fdab836ed7e6dc881de23001b", "private_key": private_key,
        "client_email": "deploy@acme-prod.iam.gserviceaccount.com", "client_id": "104578312345678901234",
    }, indent=2)
    redacted = redact_secrets(document)
    assert "3f786850e387550fdab836ed7e6dc881de23001b" not in redacted and "MIIEvQIBADAN" not in redacted
    assert '"private_key_id": "[REDACTED:secret]"' in redacted
    assert '"private_key": "[REDACTED:private_key]' in redacted
    assert '"client_email": "deploy@acme-prod.iam.gserviceaccount.com"' in redacted  # not a secret


@pytest.mark.parametrize(
    "text",
    [
        "from huggingface_hub import hf_hub_download",
        "hf_hub_download(repo_id='org/model', filename='config.json')",
        "hf_" + "abcdefghijklmnopqrstuvwxyzabcdefgh",  # one case only: a long name, not a token
        "npm_config_cache",
        "echo $npm_config_cache && npm_package_version=1.2.3",
        "see SG.com for details, or SG.example",
        "The password must be at least twelve characters and the token expires daily.",
        "mysql -u root -p mydb",  # -p alone prompts for the password
        "I use mysql for the data and curl for the API",
        "docker run -p 8080:80 nginx",  # -p publishes a port outside `login`
        "docker run -p 8080:80 app login",  # `login` is the container's argument, not the subcommand
        "echo $PW | docker login --password-stdin -u me r.io",
        "docker login -u me -p $REGISTRY_PASSWORD r.io",
        "curl -u bob https://api",  # no colon: curl prompts
        'curl -u "$USER:$PASS" https://api',
        "curl --user-agent 'Mozilla/5.0 (X11; Linux x86_64)' https://x",
        "sshpass -f ~/.pw ssh host",
        "Authorization: the server checks the header on every request",
        "authorization: required",
        "the Authorization: header carries the token",
        "authorization: str | None = Header(None)",
        "authorization: Optional[str] = None",
    "    authorization: Optional[str]",
        '{"Authorization": accessToken}',
        'session.headers.update({"Authorization": f"token {gh_token}"})',
        'headers = {"Authorization": "Bearer " + token}',
        "Authorization: Bearer ${{ secrets.API_TOKEN }}",
        "Cookie: a small piece of data the browser stores",
        "Set-Cookie: <cookie-name>=<cookie-value>",
        "the X-Api-Key: header",
        'headers = {"x-api-key": apiKey}',
        "sort-key: name",
        "public-key: see the docs",
        "api_key = api_key_from_env",
        "API_KEY = DEFAULT_API_KEY",
        "token = token2",
        "secret = sha256_digest",
        "glpat- is the prefix of GitLab personal access tokens",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQENBF\n-----END PGP PUBLIC KEY BLOCK-----",
    ],
)
def test_no_false_positives_among_the_new_kinds(text):
    assert redact_secrets(text) == text


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["prod", "deploy"], ["prod", "deploy"]),
        (["prod", GITHUB_CLASSIC], ["prod"]),  # a tag that is nothing but a secret is dropped
        (["DB_PASSWORD=hunter2"], ["DB_PASSWORD=[REDACTED:secret]"]),  # a secret inside a tag: its marker
        (["a <private>hidden</private>", "<private>x</private>"], ["a"]),
        ([f"  {HUGGINGFACE} ", f"{NPM}", "x"], ["x"]),
        (["dup", "dup ", " dup"], ["dup"]),
    ],
)
def test_tags_are_sanitized(tags, expected):
    assert sanitize_tags(tags) == expected


def test_fields_are_sanitized_and_stripped():
    assert sanitize_field(None) is None
    assert sanitize_field("  plain title  ") == "plain title"
    assert sanitize_field(f"deploy with {GITHUB_CLASSIC}") == "deploy with [REDACTED:github_token]"
    assert sanitize_field("<private>all of it</private>") is None


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


@pytest.mark.parametrize(("text", "redacted"), [
    ("<password>S3cr3t!pass</password>", "<password>[REDACTED:secret]</password>"),
    ("<db:Password>x1y2z3w4</db:Password>", "<db:Password>[REDACTED:secret]</db:Password>"),
    ('<add key="DbPassword" value="S3cr3t!pass"/>', '<add key="DbPassword" value="[REDACTED:secret]"/>'),
    ('const apiKey: string = "abcd1234efgh5678ijkl";', 'const apiKey: string = "[REDACTED:secret]";'),
    ("password: str = 'hunter2x'", "password: str = '[REDACTED:secret]'"),
])
def test_secrets_in_markup_and_typed_declarations(text, redacted):
    assert redact_secrets(text) == redacted


@pytest.mark.parametrize("text", [
    "<tokenizer>bpe</tokenizer>", "<token>${TOKEN}</token>", '<add key="TokenUrl" value="https://x"/>',
    "let token: string = process.env.TOKEN", "<keyboard>us</keyboard>",
])
def test_markup_that_holds_no_secret_stays(text):
    assert redact_secrets(text) == text
