#!/usr/bin/env python3
"""Generated secrets, each pasted into a plausible Slack message, one JSON object a line.

Every kind detect-secrets 1.5 has a plugin for (AWS, Artifactory, Azure storage, basic auth,
Discord, GitHub, GitLab, Base64 and hex high entropy, IBM Cloud IAM, IBM COS HMAC, JWT, keyword,
Mailchimp, npm, OpenAI, private keys, PyPI, SendGrid, Slack, Softlayer, Square, Stripe, Telegram,
Twilio), plus the kinds the redaction issue names that have no plugin there (Google API keys,
passwords named in prose, ADO/JDBC connection strings). Values are random from the seed in each
provider's published format; messages are drawn from a few phrasings per kind, with and without
a key name. Each line: {"kind", "text", "secrets"}, `secrets` being the substrings that must not
survive redaction.

Usage: generate.py [--seed N] [--per-kind N]   (the defaults are what redact/tests/corpus.rs checks)

The output is not kept in the repository: it is realistic enough for secret scanners (push
protection) to take it for leaked keys.
"""

import argparse
import base64
import json
import random
import string

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def chars(self, alphabet, n):
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def pick(self, items):
        return self.r.choice(items)

    def b64_bytes(self, n):
        return base64.b64encode(bytes(self.r.getrandbits(8) for _ in range(n))).decode()

    def b64url_json(self, obj):
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def password(self):
        words = ["Hunter", "Summer", "Winter", "Orders", "Kafka", "Falcon", "Tiger", "Rocket"]
        symbols = "!@#%&*"
        shape = self.r.randrange(3)
        if shape == 0:
            return self.pick(words) + str(self.r.randrange(10, 9999)) + self.chars("abcxyz", 3)
        if shape == 1:
            return self.chars(ALNUM, 10) + self.pick(symbols) + self.chars(string.digits, 2)
        return self.pick(words) + self.pick(symbols) + self.pick(words).lower() + str(self.r.randrange(10, 99))

    def host(self):
        return self.pick(["db.prod.internal", "orders-pg.acme.io", "10.0.12.34", "cache.payments.svc", "mq.acme.internal"])

    def user(self):
        return self.pick(["app", "orders", "admin", "svc_export", "deploy", "root"])


def aws(g):
    key_id = g.pick(["AKIA", "ASIA"]) + g.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    secret = g.chars(B64, 40)
    text = g.pick([
        f"new creds for the export job: {key_id} / {secret}",
        f"aws_access_key_id = {key_id}\naws_secret_access_key = {secret}",
        f"export AWS_ACCESS_KEY_ID={key_id} AWS_SECRET_ACCESS_KEY={secret}",
        f"the backup job still uses {key_id} {secret}, can we rotate?",
    ])
    return text, [key_id, secret]


def artifactory(g):
    token = "AKCp" + g.chars(string.digits, 1) + g.chars(ALNUM, 68)
    text = g.pick([
        f"artifactory api key for the CI runner: {token}",
        f"curl -H 'X-JFrog-Art-Api: {token}' https://artifactory.acme.io/api/repositories",
        f"{token} is the one that got revoked",
    ])
    return text, [token]


def azure_storage(g):
    account = g.pick(["acmeprodexports", "firstlinediag", "ordersarchive"])
    key = g.b64_bytes(64)
    sig = g.b64_bytes(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    if g.r.random() < 0.6:
        text = g.pick([
            f"connection string: DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};EndpointSuffix=core.windows.net",
            f"AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key}\"",
            f"the exporter is configured with AccountName={account};AccountKey={key}",
        ])
        return text, [key]
    url = (f"https://{account}.blob.core.windows.net/nightly/orders.parquet?sv=2022-11-02&ss=b&srt=o&sp=r"
           f"&se=2026-03-15T00:00:00Z&st=2026-03-14T00:00:00Z&spr=https&sig={sig}")
    return g.pick([f"SAS url for the file: {url}", f"try {url}"]), [sig]


def basic_auth(g):
    password = g.password()
    scheme = g.pick(["postgres", "postgresql", "mysql", "mongodb+srv", "amqp", "redis", "https"])
    url = f"{scheme}://{g.user()}:{password}@{g.host()}/orders"
    text = g.pick([
        f"DATABASE_URL is {url}",
        f"can connect with {url} from the bastion",
        f"psql '{url}' -c 'select 1' works",
    ])
    return text, [password]


def discord(g):
    user_id = str(g.r.randrange(10**17, 10**18 * 2))
    token = (base64.b64encode(user_id.encode()).decode().rstrip("=") + "." + g.chars(B64URL, 6)
             + "." + g.chars(B64URL, 38))
    text = g.pick([f"the alert bot's discord token {token}", f"DISCORD_TOKEN={token}", f"{token}"])
    return text, [token]


def github(g):
    token = g.pick([
        g.pick(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + g.chars(ALNUM, 36),
        "github_pat_11" + g.chars(UPPER_DIGITS, 20) + "_" + g.chars(ALNUM, 59),
    ])
    text = g.pick([
        f"git clone https://{token}@github.com/acme/payments-api",
        f"the deploy workflow uses {token}",
        f"GH_TOKEN={token} gh run list",
    ])
    return text, [token]


def gitlab(g):
    token = "glpat-" + g.chars(B64URL, 20)
    text = g.pick([
        f"runner registration fails with {token}",
        f"curl --header 'PRIVATE-TOKEN: {token}' https://gitlab.acme.io/api/v4/projects",
        f"old gitlab pat {token} expired yesterday",
    ])
    return text, [token]


def base64_high_entropy(g):
    value = g.b64_bytes(g.pick([24, 32, 48]))
    text = g.pick([
        f"the webhook signing value is '{value}'",
        f"HMAC for the partner callback: \"{value}\"",
        f"rotated, new value {value}",
        f"encryption_key = '{value}'",
    ])
    return text, [value]


def hex_high_entropy(g):
    value = g.chars(HEX, g.pick([32, 40, 48, 64]))
    text = g.pick([
        f"datadog key \"{value}\"",
        f"HMAC secret for the callback: {value}",
        f"new value is {value}",
        f"signing_key='{value}'",
    ])
    return text, [value]


def ibm_cloud_iam(g):
    key = g.chars(B64URL, 44)
    text = g.pick([f"ibm_cloud_iam_api_key = {key}", f"IBM_CLOUD_API_KEY: \"{key}\""])
    return text, [key]


def ibm_cos_hmac(g):
    key = g.chars(HEX, 48)
    text = g.pick([f"cos_hmac_secret_access_key = {key}", f"secret_access_key: \"{key}\""])
    return text, [key]


def jwt(g):
    header = g.b64url_json({"alg": g.pick(["HS256", "RS256"]), "typ": "JWT"})
    payload = g.b64url_json({"sub": str(g.r.randrange(10**6)), "iat": 1773480000 + g.r.randrange(10**5),
                             "scope": g.pick(["orders:read", "admin", "export"])})
    token = f"{header}.{payload}.{g.chars(B64URL, 43)}"
    text = g.pick([
        f"the partner sends Authorization: Bearer {token}",
        f"decoded this token and the exp is fine: {token}",
        f"{token}",
    ])
    return text, [token.split(".")[2]]


def keyword(g):
    value = g.password()
    text = g.pick([
        f"password = \"{value}\"",
        f"DB_PASSWORD={value}",
        f"\"api_key\": \"{value}\"",
        f"  password: {value}",
        f"secret: '{value}'",
    ])
    return text, [value]


def mailchimp(g):
    key = g.chars(HEX, 32) + "-us" + str(g.r.randrange(1, 21))
    text = g.pick([f"mailchimp key {key}", f"MAILCHIMP_API_KEY={key}", f"newsletter sync uses {key}"])
    return text, [key]


def npm(g):
    token = "npm_" + g.chars(ALNUM, 36)
    text = g.pick([
        f"//registry.npmjs.org/:_authToken={token}",
        f"NPM_TOKEN is {token}",
        f"publish fails with the old {token}",
    ])
    return text, [token]


def openai(g):
    body = g.chars(ALNUM, 20) + "T3BlbkFJ" + g.chars(ALNUM, 20)
    token = g.pick([
        "sk-" + body,
        "sk-proj-" + g.chars(B64URL, 74) + "T3BlbkFJ" + g.chars(B64URL, 74),
        "sk-svcacct-" + g.chars(B64URL, 74) + "T3BlbkFJ" + g.chars(B64URL, 74),
    ])
    text = g.pick([
        f"summariser uses {token}",
        f"OPENAI_API_KEY={token}",
        f"is {token} the prod key or the staging one?",
    ])
    return text, [token]


def private_key(g):
    kind = g.pick(["RSA ", "EC ", "OPENSSH ", ""])
    body = g.b64_bytes(g.pick([120, 240]))
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    pem = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(lines) + f"\n-----END {kind}PRIVATE KEY-----"
    text = g.pick([f"the sftp key that changed:\n{pem}", f"```\n{pem}\n```", pem])
    return text, [lines[0], lines[-1]]


def pypi(g):
    token = "pypi-AgEIcHlwaS5vcmc" + g.chars(B64URL, 70)
    text = g.pick([f"twine upload -u __token__ -p {token} dist/*", f"PYPI_TOKEN={token}", f"the pypi token {token}"])
    return text, [token]


def sendgrid(g):
    token = "SG." + g.chars(B64URL, 22) + "." + g.chars(B64URL, 43)
    text = g.pick([f"SENDGRID_API_KEY={token}", f"mails bounce, key is {token}", f"{token}"])
    return text, [token]


def slack(g):
    if g.r.random() < 0.3:
        path = "T" + g.chars(UPPER_DIGITS, 8) + "/B" + g.chars(UPPER_DIGITS, 10) + "/" + g.chars(ALNUM, 24)
        url = f"https://hooks.slack.com/services/{path}"
        return g.pick([f"alertmanager posts to {url}", f"webhook: {url}"]), [path.split("/")[-1]]
    token = g.pick([
        "xoxb-" + g.chars(string.digits, 12) + "-" + g.chars(string.digits, 13) + "-" + g.chars(ALNUM, 24),
        "xoxp-" + g.chars(string.digits, 12) + "-" + g.chars(string.digits, 12) + "-" + g.chars(string.digits, 13) + "-" + g.chars(HEX, 32),
        "xapp-1-A" + g.chars(UPPER_DIGITS, 10) + "-" + g.chars(string.digits, 13) + "-" + g.chars(HEX, 64),
    ])
    text = g.pick([f"SLACK_BOT_TOKEN={token}", f"the bot is using {token}", f"{token}"])
    return text, [token]


def softlayer(g):
    key = g.chars(HEX, 64)
    text = g.pick([f"softlayer_api_key = {key}", f"SL_API_KEY: {key}"])
    return text, [key]


def square(g):
    token = "sq0csp-" + g.chars(B64URL, 43)
    text = g.pick([f"square oauth secret {token}", f"SQUARE_APP_SECRET={token}"])
    return text, [token]


def stripe(g):
    token = g.pick(["sk_live_", "rk_live_", "sk_test_"]) + g.chars(ALNUM, g.pick([24, 99]))
    text = g.pick([
        f"checkout is still on {token}",
        f"STRIPE_SECRET_KEY={token}",
        f"{token}",
        f"curl https://api.stripe.com/v1/charges -u {token}:",
    ])
    return text, [token]


def telegram(g):
    token = str(g.r.randrange(10**8, 10**10)) + ":AA" + g.chars(B64URL, 33)
    text = g.pick([f"telegram bot token {token}", f"TELEGRAM_TOKEN={token}"])
    return text, [token]


def twilio(g):
    sid = g.pick(["AC", "SK"]) + g.chars(HEX, 32)
    text = g.pick([f"twilio {sid}", f"TWILIO_API_KEY={sid}", f"sms-notifier uses {sid}"])
    return text, [sid]


def google(g):
    key = "AIza" + g.chars(B64URL, 35)
    text = g.pick([f"maps key {key}", f"GOOGLE_API_KEY={key}", f"https://maps.googleapis.com/maps/api/geocode/json?key={key}"])
    return text, [key]


def prose_password(g):
    value = g.password()
    text = g.pick([
        f"the root password is {value}",
        f"grafana admin password is now {value}.",
        f"password for the replica user was changed to {value}",
        f"the new db password: {value}",
    ])
    return text, [value]


def connection_string(g):
    value = g.password().replace(";", "")
    text = g.pick([
        f"Server=tcp:orders-sql.database.windows.net,1433;Database=orders;User ID=app;Password={value};Encrypt=true",
        f"jdbc:postgresql://orders-pg:5432/orders?user=app&password={value}&sslmode=require",
        f"Data Source=10.0.12.34;Initial Catalog=billing;User Id=sa;Pwd={value};",
    ])
    return text, [value]


KINDS = [
    ("aws", aws), ("artifactory", artifactory), ("azure storage", azure_storage),
    ("basic auth url", basic_auth), ("discord", discord), ("github", github), ("gitlab", gitlab),
    ("base64 high entropy", base64_high_entropy), ("hex high entropy", hex_high_entropy),
    ("ibm cloud iam", ibm_cloud_iam), ("ibm cos hmac", ibm_cos_hmac), ("jwt", jwt),
    ("keyword", keyword), ("mailchimp", mailchimp), ("npm", npm), ("openai", openai),
    ("private key", private_key), ("pypi", pypi), ("sendgrid", sendgrid), ("slack", slack),
    ("softlayer", softlayer), ("square", square), ("stripe", stripe), ("telegram", telegram),
    ("twilio", twilio),
    # Not a detect-secrets plugin; named in the redaction issue.
    ("google api key", google), ("password in prose", prose_password),
    ("connection string", connection_string),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-kind", type=int, default=20)
    args = parser.parse_args()
    g = Gen(args.seed)
    for name, make in KINDS:
        for _ in range(args.per_kind):
            text, secrets = make(g)
            print(json.dumps({"kind": name, "text": text, "secrets": secrets}))


if __name__ == "__main__":
    main()
