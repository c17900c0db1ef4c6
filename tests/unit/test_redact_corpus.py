"""The redaction corpus: every further kind of secret that used to survive on disk, each in a realistic
setting where only its own rule can catch it, and look-alikes that must come out unchanged.

Values are fake but shaped like the real ones (prefix, alphabet and length as the providers publish them),
generated from a fixed seed so this file does not itself look like it leaks credentials. `corpus_figures()`
gives the two numbers the corpus is judged by: kinds caught / kinds, false positives / safe items.
"""

from __future__ import annotations

import random
import string

import pytest

from cems_cli.text.redact import redact_secrets, sanitize_for_storage

_RNG = random.Random(20261127)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def fake(alphabet: str, length: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(length))


def mixed(alphabet: str, length: int) -> str:
    """A random value that surely holds an uppercase letter, a lowercase letter and a digit."""
    while True:
        value = fake(alphabet, length)
        if all(any(test(c) for c in value) for test in (str.isupper, str.islower, str.isdigit)):
            return value


VAULT = "hvs." + "CAESI" + mixed(B64URL, 90)
DATABRICKS = "dapi" + fake("abcdefgh0123456789", 32)
SHOPIFY = "shpat_" + fake(HEX, 32)
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + mixed(B64URL, 120)
DIGITALOCEAN = "dop_v1_" + fake(HEX, 64)
GOOGLE_OAUTH = "ya29." + "a0AfB_" + mixed(B64URL, 150)
GOOGLE_CLIENT_SECRET = "GOCSPX-" + mixed(B64URL, 28)
SLACK_APP = (
    "xapp-1-A0" + fake(string.ascii_uppercase + string.digits, 9) + "-" + fake(string.digits, 13) + "-"
    + fake(HEX, 64)
)
STRIPE_WEBHOOK = "whsec_" + mixed(ALNUM, 32)
GRAFANA = "glsa_" + mixed(ALNUM, 32) + "_" + fake(HEX, 8)
LINEAR = "lin_api_" + mixed(ALNUM, 40)
NOTION = "ntn_" + fake(string.digits, 11) + mixed(ALNUM, 35)
ATLASSIAN = "ATATT3" + "xFfGF0" + mixed(B64URL, 170) + "=" + fake("0123456789ABCDEF", 8)
POSTMAN = "PMAK-" + fake(HEX, 24) + "-" + fake(HEX, 34)
TWILIO = "SK" + fake(HEX, 32)
MAILGUN = "key-" + fake(HEX, 32)
AGE = "AGE-SECRET-KEY-1" + fake(BECH32, 58)
TELEGRAM = fake(string.digits, 10) + ":AA" + mixed(B64URL, 33)
PASSWORD = "Tr0ub4dor!" + fake(string.digits, 3)  # what a person picks: a word, a symbol, digits
SAS_SIGNATURE = fake(ALNUM, 30) + "%2B" + fake(ALNUM, 10) + "%3D"
AMZ_SIGNATURE = fake(HEX, 64)
GENERATED = mixed(ALNUM, 24)
AWS_KEY_ID = "AKIA" + fake(string.ascii_uppercase + "234567", 16)
AWS_SECRET = mixed(ALNUM + "/+", 40)
FILLER = (
    "It was created for the deploy pipeline of the payments service, which runs nightly and uploads the "
    "release bundles; rotate it after the audit in March, and never paste it into the wiki or the chat. "
)

# kind → realistic texts holding it, each with the secret that must be gone after redaction.
CORPUS: dict[str, list[tuple[str, str]]] = {
    "vault_token": [(f"$ vault token create -policy=ci -field=token\n{VAULT}\n", VAULT)],
    "databricks_token": [(f"databricks workspace token for ci: {DATABRICKS} (expires in 90 days)",
                          DATABRICKS)],
    "shopify_token": [(f"Admin API access token {SHOPIFY} was revealed once; store it now.", SHOPIFY)],
    "pypi_token": [(f"twine upload -u __token__ -p {PYPI} dist/*", PYPI)],
    "digitalocean_token": [(f"doctl auth init --context ci -t {DIGITALOCEAN}", DIGITALOCEAN)],
    "google_oauth_token": [(f"$ gcloud auth print-access-token\n{GOOGLE_OAUTH}\n", GOOGLE_OAUTH)],
    "google_client_secret": [(f"OAuth client created. Client ID 1234-abc.apps.googleusercontent.com, "
                              f"secret {GOOGLE_CLIENT_SECRET}", GOOGLE_CLIENT_SECRET)],
    "slack_app_token": [(f"Socket Mode is on; app-level token {SLACK_APP} with connections:write",
                         SLACK_APP)],
    "stripe_webhook_secret": [(f"> Ready! You are using Stripe API Version [2024-06-20]. Your webhook "
                               f"signing secret is {STRIPE_WEBHOOK} (^C to quit)", STRIPE_WEBHOOK)],
    "grafana_token": [(f"service account ci-reader created with token {GRAFANA}", GRAFANA)],
    "linear_key": [(f"LINEAR_KEY={LINEAR} npm run sync-issues", LINEAR)],
    "notion_token": [(f"Internal integration 'docs-bot' ({NOTION}) can read the Engineering space", NOTION)],
    "atlassian_token": [(f"jira api token for the release bot -> {ATLASSIAN}", ATLASSIAN)],
    "postman_key": [(f"newman run collection.json --env-var apikey-value {POSTMAN}", POSTMAN)],
    "twilio_key": [(f"Twilio API key SID {TWILIO} (friendly name: sms-prod)", TWILIO)],
    "mailgun_key": [(f"mailgun private key {MAILGUN} for the mg.acme.io domain", MAILGUN)],
    "age_secret_key": [(f"$ age-keygen\n# created: 2026-11-27T10:00:00Z\n"
                        "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"
                        f"{AGE}\n",
                        AGE)],
    "telegram_bot_token": [
        (f"BotFather: Use this token to access the HTTP API:\n{TELEGRAM}\nKeep it secure", TELEGRAM),
        (f"curl -s https://api.telegram.org/bot{TELEGRAM}/getMe", TELEGRAM),
    ],
    "netrc_password": [
        (f"$ cat ~/.netrc\nmachine api.heroku.com\n  login ci@acme.io\n  password {PASSWORD}\n", PASSWORD),
        (f"machine github.com login octocat password {PASSWORD}", PASSWORD),
    ],
    "htpasswd_batch": [(f"htpasswd -bc /etc/nginx/.htpasswd admin {PASSWORD}", PASSWORD),
                       (f"htpasswd -nbB admin '{PASSWORD}' >> users", PASSWORD)],
    "sudo_stdin": [(f"echo '{PASSWORD}' | sudo -S apt-get install -y nginx", PASSWORD),
                   (f"sudo -S systemctl restart nginx <<< \"{PASSWORD}\"", PASSWORD)],
    "zip_password": [(f"zip -P {PASSWORD} backup.zip db.sql", PASSWORD),
                     (f"7z a -p{PASSWORD} backup.7z db.sql", PASSWORD)],
    "smbclient_user": [(f"smbclient //fs01/finance -U 'ACME\\jdoe%{PASSWORD}' -c 'ls'", PASSWORD)],
    "openssl_enc_key": [(f"openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k {PASSWORD}",
                         PASSWORD)],
    "azure_sas_sig": [(f"https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
                       f"&se=2026-12-01T00:00:00Z&spr=https&sig={SAS_SIGNATURE}", SAS_SIGNATURE)],
    "s3_presigned_signature": [(f"https://acme-reports.s3.amazonaws.com/q3.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                                f"&X-Amz-Date=20261127T100000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
                                f"&X-Amz-Signature={AMZ_SIGNATURE}", AMZ_SIGNATURE)],
    "no_break_space_assignment": [(f"DB_PASSWORD\u00a0=\u00a0{PASSWORD}", PASSWORD),
                                  (f"API_KEY\u00a0=\u00a0{GENERATED}", GENERATED)],
    "password_in_prose": [(f"my password is {PASSWORD}.", PASSWORD),
                          (f"The root password for the staging db was `{PASSWORD}`", PASSWORD)],
    "yaml_secret_after_text": [(f"oauth: {{client_id: acme-web, client_secret: {GENERATED}}}", GENERATED),
                               (f"google:  client_secret: {GENERATED}", GENERATED)],
    "aws_secret_far_from_key_id": [(f"Key id {AWS_KEY_ID}. {FILLER}The other half: {AWS_SECRET}",
                                    AWS_SECRET)],
}

# Text that looks like the kinds above and is not a secret: it must come out unchanged.
SAFE = [
    "pip install scikit-learn  # people still write sk-learn",
    "Redis is a key-value store; key-value pairs expire with EXPIRE.",
    "Fix the password reset flow before the release.",
    "The password is required and the password is too short.",
    "my password is not working, and the password was reset twice",
    "The password is stored in the vault; the password is at least 12 characters.",
    "The password is case-sensitive, e.g. one upper-case letter.",
    "Use RapidAPI: rapidapi-key header, see rapidapi.com",
    "the dapi module is undocumented; dapiClient.connect()",
    "ldapi:///var/run/slapd/ldapi is the local socket",
    "hvs. is the prefix of Vault service tokens",
    "shpat_ tokens are admin API tokens",
    "uses: pypa/gh-action-pypi-publish@release/v1",
    "pypi-token-name: publish",
    "ya29. marks a Google access token",
    "GOCSPX- starts an OAuth client secret",
    "xapp-1 tokens need connections:write",
    "whsec_ prefix: see Stripe docs",
    "static void GLC_CreateLightmapTextureArray(void);",
    "lin_api_version = 2",
    "ntn_ tokens replaced secret_ tokens in 2024",
    "ATATT3 tokens are Atlassian API tokens",
    "PMAK- keys come from the Postman dashboard",
    "SKU-000123 and SKIP_TESTS=1",
    "checksum 5f4dcc3b5aa765d61d8327deb882cf99 matches",
    "primary-key-constraint and foreign-key-check",
    "age keys look like AGE-SECRET-KEY-1…",
    "at 12:34:56 the build passed; 10:30:AM",
    '<xsd:element name="AgencyIdentificationCode" type="clm12345:AgencyIdentificationCodeContentType"/>',
    "a machine learning password reset flow",
    'the "machine learning password reset." ticket',
    "        file_secret_settings: PydanticBaseSettingsSource,",
    "    token_logprobs: Optional[List[float]] = None",
    "def send(self, auth: type[httpx2.Auth], token_endpoint_auth: Required[TokenEndpointAuthParam]): ...",
    "the default password policy requires rotation",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "htpasswd -v .htpasswd admin",
    "echo done | sudo tee /etc/motd",
    'echo "$DB_PASSWORD" | sudo -S true',
    "zip -r backup.zip src/ && unzip -l backup.zip",
    "7z x archive.7z -oout",
    "smbclient -L //fs01 -N",
    "smbclient //fs01/share -U jdoe",
    "openssl enc -d -aes-256-cbc -in db.sql.enc -kfile key.txt",
    "openssl enc -aes-256-cbc -pass env:BACKUP_PASSWORD -in db.sql",
    "openssl s_client -connect example.com:443",
    "sig = inspect.signature(fn)",
    "def verify(payload, sig=None): ...",
    "X-Amz-Signature is computed from the canonical request",
    "https://example.com/search?q=signals&sigma=2",
    "Token\u00a0:\u00a0the unit of text a model reads",
    "docs: client_secret: required",
    "see client_secret: <your secret>",
    "oauth: {client_id: web, client_secret: ${GOOGLE_SECRET}}",
    "docs for auth: https://api2.example.com/v1",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b on main",
]


def _leaks(redacted: str, secret: str) -> bool:
    """The secret, or its tail (what a redaction that stopped early leaves), is still in the text."""
    return secret in redacted or secret[-6:] in redacted


def _caught(text: str, secret: str) -> bool:
    redacted = sanitize_for_storage(text)
    return not _leaks(redacted, secret) and "[REDACTED:" in redacted


def corpus_figures() -> tuple[int, int, int, int]:
    """(kinds caught, kinds in the corpus, false positives, safe items)."""
    caught = sum(all(_caught(text, secret) for text, secret in cases) for cases in CORPUS.values())
    false_positives = sum(sanitize_for_storage(text) != text for text in SAFE)
    return caught, len(CORPUS), false_positives, len(SAFE)


@pytest.mark.parametrize(
    ("text", "secret"),
    [pytest.param(text, secret, id=f"{kind}-{index}")
     for kind, cases in CORPUS.items() for index, (text, secret) in enumerate(cases)],
)
def test_every_kind_is_redacted(text, secret):
    redacted = redact_secrets(text)
    assert not _leaks(redacted, secret), redacted
    assert "[REDACTED:" in redacted
    assert redact_secrets(redacted) == redacted  # redacting again changes nothing


@pytest.mark.parametrize("text", SAFE)
def test_look_alikes_are_left_alone(text):
    assert sanitize_for_storage(text) == text


def test_the_corpus_covers_every_kind_and_every_one_is_caught():
    caught, kinds, false_positives, safe = corpus_figures()
    assert kinds >= 30 and safe >= 50
    assert (caught, false_positives) == (kinds, 0)


def test_a_secret_keeps_the_text_around_it():
    """Only the value goes: the words, the option names and the URL's other parameters stay."""
    assert redact_secrets(f"zip -P {PASSWORD} b.zip db.sql") == "zip -P [REDACTED:password] b.zip db.sql"
    assert redact_secrets(f"my password is {PASSWORD}.") == "my password is [REDACTED:password]."
    url = f"https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig={SAS_SIGNATURE}&se=2026"
    assert redact_secrets(url) == "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig=[REDACTED:signature]&se=2026"
    assert redact_secrets(f"smbclient //fs/s -U jdoe%{PASSWORD} -c ls") == (
        "smbclient //fs/s -U jdoe%[REDACTED:password] -c ls"
    )
    assert redact_secrets(f"token {TWILIO}.") == "token [REDACTED:twilio_key]."
