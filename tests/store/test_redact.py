from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.redact import LEAF_CHAR_CAP, PATTERNS, TRUNCATION_MARKER, mask_secrets, redact


def fake(length: int, alphabet: str = "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8") -> str:
    """A fake credential body: ``alphabet`` repeated to ``length`` characters."""
    return (alphabet * (length // len(alphabet) + 1))[:length]


HEX = "0123456789abcdef"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Fake credentials in the documented shapes; none is real.
CASES = {
    "private_key_block": (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIOqRdeadbeef\n-----END OPENSSH PRIVATE KEY-----\ndone",
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----***\ndone",
    ),
    "basic_authorization": (
        "Authorization: Basic dXNlcjpodW50ZXIyaHVudGVy",
        "Authorization: Basic ***",
    ),
    "command_line_flag": (
        "run --token=abc123def --db-password hunter2 -api-key zz9 --verbose",
        "run --token=*** --db-password *** -api-key *** --verbose",
    ),
    "mailchimp_key": (f"mc {fake(32, HEX)}-us12 ok", "mc *** ok"),
    "gitlab_token": (
        f"glpat-{fake(20)} gldt-{fake(20)} glrt-{fake(24)}",
        "glpat-*** gldt-*** glrt-***",
    ),
    "gitlab_runner_registration": (f"GR1348941{fake(20)}", "GR1348941***"),
    "gitlab_session_cookie": (f"_gitlab_session={fake(32, HEX)}", "_gitlab_session=***"),
    "slack_webhook": (
        f"https://hooks.slack.com/services/{fake(44)}",
        "https://hooks.slack.com/services/***",
    ),
    "microsoft_teams_webhook": (
        f"https://acme.webhook.office.com/webhookb2/{fake(36, HEX)}@{fake(36, HEX)}",
        "https://acme.webhook.office.com/webhookb2/***",
    ),
    "huggingface_token": (f"hf_{fake(34)} api_org_{fake(34)}", "hf_*** api_org_***"),
    "npm_token": (
        f"//registry.npmjs.org/:_authToken npm_{fake(36)}",
        "//registry.npmjs.org/:_authToken npm_***",
    ),
    "pypi_token": (f"pypi-AgEIcHlwaS5vcmc{fake(60)}", "pypi-AgEIcHlwaS5vcmc***"),
    "sendgrid_key": (f"SG.{fake(22)}.{fake(43)}", "SG.***"),
    "sendinblue_key": (f"xkeysib-{fake(64, HEX)}-{fake(16)}", "xkeysib-***"),
    "twilio_key": (f"SK{fake(32, HEX)}", "SK***"),
    "mailgun_key": (f"key-{fake(32, HEX)} pubkey-{fake(32, HEX)}", "key-*** pubkey-***"),
    "databricks_token": (f"dapi{fake(32, HEX)}", "dapi***"),
    "digitalocean_token": (f"dop_v1_{fake(64, HEX)}", "dop_v1_***"),
    "doppler_token": (f"dp.pt.{fake(43)}", "dp.pt.***"),
    "dynatrace_token": (f"dt0c01.{fake(24)}.{fake(64)}", "dt0c01.***"),
    "age_secret_key": (
        f"AGE-SECRET-KEY-1{fake(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}",
        "AGE-SECRET-KEY-1***",
    ),
    "alibaba_key_id": (f"LTAI{fake(20)}", "LTAI***"),
    "artifactory_key": (f"AKCp{fake(69)}", "AKCp***"),
    "clojars_token": (f"CLOJARS_{fake(60)}", "CLOJARS_***"),
    "duffel_token": (f"duffel_live_{fake(43)}", "duffel_live_***"),
    "easypost_token": (f"EZAK{fake(54)}", "EZAK***"),
    "flutterwave_key": (f"FLWSECK_TEST-{fake(32, 'abcdef0123456789')}-X", "FLWSECK_TEST-***"),
    "frameio_token": (f"fio-u-{fake(64)}", "fio-u-***"),
    "flyio_token": (f"fo1_{fake(43)}", "fo1_***"),
    "grafana_token": (f"glsa_{fake(32)}_{fake(8, HEX)}", "glsa_***"),
    "harness_token": (f"pat.{fake(22)}.{fake(24)}.{fake(20)}", "pat.***"),
    "heroku_key": (f"HRKU-AA{fake(58)}", "HRKU-AA***"),
    "infracost_token": (f"ico-{fake(32)}", "ico-***"),
    "linear_key": (f"lin_api_{fake(40)}", "lin_api_***"),
    "new_relic_key": (f"NRAK-{fake(27, UPPER)}", "NRAK-***"),
    "notion_token": (f"ntn_{fake(11, '0123456789')}{fake(35)}", "ntn_***"),
    "octopus_key": (f"API-{fake(26, UPPER)}", "API-***"),
    "openshift_token": (f"sha256~{fake(43)}", "sha256~***"),
    "perplexity_key": (f"pplx-{fake(48)}", "pplx-***"),
    "planetscale_token": (f"pscale_pw_{fake(43)}", "pscale_pw_***"),
    "postman_key": (f"PMAK-{fake(24, HEX)}-{fake(34, HEX)}", "PMAK-***"),
    "prefect_key": (f"pnu_{fake(36)}", "pnu_***"),
    "pulumi_token": (f"pul-{fake(40, HEX)}", "pul-***"),
    "readme_key": (f"rdme_{fake(70, HEX)}", "rdme_***"),
    "rubygems_key": (f"rubygems_{fake(48, HEX)}", "rubygems_***"),
    "scalingo_token": (f"tk-us-{fake(48)}", "tk-us-***"),
    "sentry_token": (f"sntryu_{fake(64, HEX)}", "sntryu_***"),
    "settlemint_token": (f"sm_pat_{fake(16)}", "sm_pat_***"),
    "shippo_token": (f"shippo_live_{fake(40, HEX)}", "shippo_live_***"),
    "shopify_token": (f"shpat_{fake(32, HEX)}", "shpat_***"),
    "square_token": (f"sq0atp-{fake(22)}", "sq0atp-***"),
    "facebook_page_token": (f"EAAC{fake(100)}", "EAAC***"),
    "vault_token": (f"hvs.{fake(95)}", "hvs.***"),
    "onepassword_token": (f"ops_eyJ{fake(250)}", "ops_eyJ***"),
    "atlassian_token": (f"ATATT3{fake(186)}", "ATATT3***"),
    "cloudflare_origin_ca_key": (f"v1.0-{fake(24, HEX)}-{fake(146, HEX)}", "v1.0-***"),
    "sourcegraph_token": (f"sgp_{fake(40, HEX)}", "sgp_***"),
    "azure_ad_client_secret": (f"secret {fake(3)}8Q~{fake(34)} set", "secret *** set"),
    "url_credentials": (
        "clone https://deploy:hunter2pass@git.example.org/repo.git now",
        "clone https://deploy:***@git.example.org/repo.git now",
    ),
    "query_parameter": (
        "GET /cb?code=1&access_token=abc.DEF-123&api_key=zz9 HTTP/1.1",
        "GET /cb?code=1&access_token=***&api_key=*** HTTP/1.1",
    ),
    "secret_assignment": (
        'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" and password: hunter2',
        'aws_secret_access_key = "***" and password: ***',
    ),
    "anthropic_key": (
        "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wx-yz0123 end",
        "key sk-ant-*** end",
    ),
    "openai_key": (
        "use sk-AbCdEfGhIjKlMnOpQrStUvWx or sk-proj-AbCdEfGhIjKlMnOpQr_s-t",
        "use sk-*** or sk-proj-***",
    ),
    "stripe_key": (
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc rk_live_4eC39HqLyjWDarjtT1zdp7dc "
        "pk_test_4eC39HqLyjWDarjtT1",
        "sk_live_*** rk_live_*** pk_test_***",
    ),
    "aws_access_key_id": (
        "id=AKIAIOSFODNN7EXAMPLE, session ASIAY34FZKBOKMUTVV7A, A3T5IOSFODNN7EXAMPLE.",
        "id=AKIA***, session ASIA***, A3T5***.",
    ),
    "github_token": (
        "ghp_0123456789abcdefghijABCDEFGHIJ012345 gho_0123456789abcdefghijABCDEFGHIJ012345 "
        "ghs_0123456789abcdefghijABCDEFGHIJ012345",
        "ghp_*** gho_*** ghs_***",
    ),
    "github_pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_***",
    ),
    "slack_token": (
        "xoxb-123456789012-abcdefABCDEF xoxp-1234567890-xyz xapp-1-A0123-456-abc",
        "xoxb-*** xoxp-*** xapp-***",
    ),
    "google_api_key": (
        "maps AIzaSyA-1234567890abcdefghijklmnopqrstu!",
        "maps AIza***!",
    ),
    "jwt": (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
        "token eyJ***;",
    ),
    "authorization_header": (
        "Authorization: Bearer 0123abcd.EFGH-ijkl_mnop~qr+st/uv=",
        "Authorization: Bearer ***",
    ),
    "npmrc_auth": (
        "//registry.npmjs.org/:_authToken=743b294a-cd03-11ec-9d64-0242ac120002",
        "//registry.npmjs.org/:_authToken=***",
    ),
    "docker_config_auth": (
        '{"auths": {"ghcr.io": {"auth": "Ym9iOmh1bnRlcjI="}}}',
        '{"auths": {"ghcr.io": {"auth": "***"}}}',
    ),
    "compared_secret": (
        'if ("m{{h}o)p${e]nob" == my_super_password) {',
        'if ("***" == my_super_password) {',
    ),
    "session_cookie": (
        "Cookie: theme=dark; PHPSESSID=9f8e7d6c5b4a; XSRF-TOKEN=eyJpdiI6Ik",
        "Cookie: theme=dark; PHPSESSID=***; XSRF-TOKEN=***",
    ),
    "curl_user": (
        "curl -s -u 'deploy:pa ss;w0rd' https://api.example.org",
        "curl -s -u 'deploy:***' https://api.example.org",
    ),
    "mysql_password_flag": (
        "mysqldump -u root -pS3cr3t,x shop > shop.sql",
        "mysqldump -u root -p*** shop > shop.sql",
    ),
    "sshpass_flag": ("sshpass -p 'hunter 2' ssh deploy@host", "sshpass -p '***' ssh deploy@host"),
    "registry_login_flag": (
        "docker login -u bot -p dckr_s3cret registry.example.org",
        "docker login -u bot -p *** registry.example.org",
    ),
    "redis_password_flag": ("redis-cli -h db -a s3cretpw PING", "redis-cli -h db -a *** PING"),
    "mongo_password_flag": ("mongosh -u admin -p s3cretpw", "mongosh -u admin -p ***"),
    "sqlcmd_password_flag": ("sqlcmd -S db -U sa -P 'Str0ng!Pass'", "sqlcmd -S db -U sa -P '***'"),
    "ldap_password_flag": (
        "ldapsearch -x -D cn=admin -w s3cretpw -b dc=shop",
        "ldapsearch -x -D cn=admin -w *** -b dc=shop",
    ),
    "archive_password_flag": ("7z x backup.7z -pS3cretArchive", "7z x backup.7z -p***"),
    "openssl_pass_argument": (
        "openssl rsa -in key.pem -passin pass:s3cretpw",
        "openssl rsa -in key.pem -passin pass:***",
    ),
    "telegram_bot_token": (
        "https://api.telegram.org/bot7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM/getMe",
        "https://api.telegram.org/bot7213808860:***/getMe",
    ),
    "discord_bot_token": (
        "bot.run(MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs)",
        "bot.run(***)",
    ),
    "discord_webhook": (
        f"https://discord.com/api/webhooks/1234567890/{fake(68)}",
        "https://discord.com/api/webhooks/1234567890/***",
    ),
}


def test_every_pattern_has_a_case() -> None:
    assert sorted(p.name for p in PATTERNS) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_pattern_masks_its_shape_and_keeps_its_prefix(name: str) -> None:
    original, expected = CASES[name]
    (pattern,) = [p for p in PATTERNS if p.name == name]
    assert pattern.apply(original) == expected
    assert redact(original) == expected


@pytest.mark.parametrize(
    "text",
    [
        "sk-short",  # too short to be a key
        "ask-AbCdEfGhIjKlMnOpQrStUvWx",  # inside a longer word
        "monkey=banana",  # a parameter that merely ends in "key"
        "AKIAIOSFODNN7EXAMPLEX",  # 17 characters: not an access key id
        "bearer tokens are short-lived",
        "user@localhost",  # no dot in the domain
        "a table of 3 rows",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_long_leaf_is_cut_after_masking() -> None:
    secret = "sk-" + "A" * 40
    text = "x" * (LEAF_CHAR_CAP - 10) + " " + secret + " " + "y" * 500
    out = redact(text)
    assert out == "x" * (LEAF_CHAR_CAP - 10) + " sk-*** yy" + TRUNCATION_MARKER
    assert "AAAA" not in out


def test_a_leaf_at_the_cap_is_not_marked() -> None:
    assert redact("z" * LEAF_CHAR_CAP) == "z" * LEAF_CHAR_CAP
    assert redact("z" * (LEAF_CHAR_CAP + 1)) == "z" * LEAF_CHAR_CAP + TRUNCATION_MARKER


MEGABYTE = 1_000_000


@pytest.mark.parametrize(
    ("unit", "masked"),
    [
        ("a", None),  # one long run of token characters
        ("sk-", "sk-***"),  # a key prefix repeated without end: one key
        ("token=", "token=***"),  # parameters that swallow each other: one value
        ("a@", None),  # e-mail fragments without a domain
        ("a.", None),  # a domain that never ends in letters
        ("eyJ.", None),  # JWT heads that never complete
        ("x://a:", None),  # URL credentials that never reach "@"
        ("password ", None),  # assignments without a value
        ("Bearer ", None),
        ("AKIA", None),
    ],
)
def test_adversarial_megabyte_is_handled_correctly(unit: str, masked: str | None) -> None:
    # Quadratic patterns would take hours on these; linear ones take well under a second.
    text = unit * (MEGABYTE // len(unit))
    expected = text[:LEAF_CHAR_CAP] + TRUNCATION_MARKER if masked is None else masked
    assert redact(text) == expected


def test_adversarial_megabyte_with_a_secret_at_its_end() -> None:
    text = "a." * (MEGABYTE // 2) + " sk-" + "B" * 30
    assert mask_secrets(text) == "a." * (MEGABYTE // 2) + " sk-***"


secrets = st.sampled_from([original for original, _ in CASES.values()])
noise = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=200)
@given(st.lists(st.one_of(secrets, noise), max_size=8))
def test_planted_secrets_never_survive_surrounding_text(parts: list[str]) -> None:
    text = " ".join(parts)
    out = mask_secrets(text)
    for original, expected in CASES.values():
        for token in _secret_bodies(original, expected):
            assert token not in out


def _secret_bodies(original: str, expected: str) -> list[str]:
    """The words of ``original`` that its masked form dropped (the secrets themselves)."""
    kept = set(expected.split())
    return [w.strip(',.;!"') for w in original.split() if w not in kept and len(w) > 12]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=***"),
        ('export GITHUB_TOKEN="abc123"', 'export GITHUB_TOKEN="***"'),
        ("STRIPE_SECRET_KEY=whatever", "STRIPE_SECRET_KEY=***"),
        ("app.api-key: zzz", "app.api-key: ***"),
        ("MY_SECRET: x", "MY_SECRET: ***"),
        ("keyboard=1 tokens=5 passwordless=1", "keyboard=1 tokens=5 passwordless=1"),
    ],
)
def test_assignments_with_prefixed_names(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected


def test_prefixed_names_stay_linear_on_long_identifiers() -> None:
    hostile = "a-" * 200_000 + "DB_" * 100_000 + "PASSWORD=x"
    assert mask_secrets(hostile).endswith("PASSWORD=***")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("redis://:s3cretpw@cache:6379/0", "redis://:***@cache:6379/0"),
        ("amqp://:guestpw@rabbit/vhost", "amqp://:***@rabbit/vhost"),
        ("https://bob:pa/ss@h/x", "https://bob:***@h/x"),
        ("https://host:8080/a?who=x", "https://host:8080/a?who=x"),
        ("export PGPASSWORD=hunter2", "export PGPASSWORD=***"),
        ("MYSQL_PWD=abc123 DB_PASS=xyz789", "MYSQL_PWD=*** DB_PASS=***"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
        ("proxy-authorization: digest abcdef0123", "proxy-authorization: digest ***"),
        (
            "AccountName=acc;AccountKey=abc+/def==;EndpointSuffix=core",
            "AccountName=acc;AccountKey=***;EndpointSuffix=core",
        ),
        ("x_api_key=zz9top", "x_api_key=***"),
        ("Basic setup: read the guide", "Basic setup: read the guide"),
        ("pass the salt", "pass the salt"),
        ("pg_dump --password=s3cret -U shop", "pg_dump --password=*** -U shop"),
        ("app --no-password --port 80", "app --no-password --port 80"),
        ("tool --token-file /run/t --secret\tx", "tool --token-file /run/t --secret\t***"),
        ("foo--password=2 x-token 3", "foo--password=2 x-token 3"),
    ],
)
def test_shapes_the_catalogue_used_to_miss(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected


def test_a_truncated_private_key_block_is_masked_to_its_end() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1\nAAAA"
    assert mask_secrets(text) == "-----BEGIN RSA PRIVATE KEY-----***"


def _seconds(action: object) -> float:
    assert callable(action)
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


# Each unit repeated to a megabyte is a long run of near-matches for some pattern. A pattern
# that backtracks would be quadratic on it (hours); a linear catalogue stays within a fixed
# multiple of one plain regex pass over the same text, measured in the same test.
NEAR_MISSES = [
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY----- -",
    "redis://:",
    "x://a:b/",
    "https://u:p/",
    "Authorization: Basic ",
    "glpat-",
    "hf_a",
    "SG.aaaa.",
    "SK0123",
    "key-0a",
    "0123456789abcdef-us",
    "aaa1Q~",
    "pat.a.",
    "DB_PASS",
    "PGPASSWORD ",
    "EAAA",
    "xoxb-",
    "a@b.",
    "sk-ant-",
    "--db-password ",
    "-a-b-c-token",
    'password = "',
    "password: a b ",
    "a_b_password_",
    "key_key_key_",
    "dbPasswordX",
    "aB",
    "PASSWORD_MIN_",
    'if ("a" == password',
    '"a\\',
    "curl -u a:",
    "curl -u ",
    "mysql -p",
    "mysql a ",
    "sshpass -p",
    "docker login ",
    "_authToken=",
    '"auth": "',
    "Cookie: session=",
    "; sessid",
    "110201543:A",
    "aaaaaaaaaaaaaaaaaaaaaaaa.bbbbbb.",
    "eyJa.eyJ",
    "+1 555 ",
    "4111 1111 ",
    "DE89 3704 ",
    "a@",
    "x.y-z_",
]
# Generous: measured at 2-5 times one substitution pass; a quadratic pattern would be thousands.
RATIO_BOUND = 60


@pytest.mark.parametrize("unit", NEAR_MISSES)
def test_near_miss_megabytes_stay_linear(unit: str) -> None:
    text = unit * (MEGABYTE // len(unit))
    plain = re.compile(r"(?s).")  # one substitution per character: a plain linear pass
    baseline = min(_seconds(lambda: plain.sub("x", text)) for _ in range(3))
    masking = _seconds(lambda: redact(text))  # secrets and personal data, as stored
    assert masking <= RATIO_BOUND * baseline, (masking, baseline)
