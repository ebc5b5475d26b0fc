"""Self-identifying provider tokens: the prefix-plus-body rules ported from gitleaks.

Data only, read by :mod:`toolwire.core.redact` (the owner of the catalogue), which turns each
row into one pattern. Ported from gitleaks' ``config/gitleaks.toml`` at v8.30.0-27 (commit
b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b), with the alphabets of detect-secrets' plugins where
they are wider (v1.5.0-50, commit 5e141933554a0b74e7341841f318be21e895339c).
"""

from __future__ import annotations

# Self-identifying provider tokens, ported from gitleaks' rule set (``config/gitleaks.toml``):
# name, literal prefix (a regex), body, and the lower-case keywords that pre-test the text.
# Bodies are the rule's alphabet with its minimum length; an open upper bound masks more, never
# less. Rules that need a keyword nearby (``twitter ... = <32 chars>``) are the assignment
# shape's job; a rule without a prefix of its own (Mailchimp, Azure AD) is written out below.
PROVIDER_TOKENS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("anthropic_key", r"sk-ant-", r"[A-Za-z0-9_\-]{16,}", ("sk-ant-",)),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-)?", r"[A-Za-z0-9_\-]{16,}", ("sk-",)),
    (
        "stripe_key",
        r"(?:sk|rk|pk)_(?:live|test|prod)_",
        r"[A-Za-z0-9]{10,}",
        ("_live_", "_test_", "_prod_"),
    ),
    (
        "aws_access_key_id",
        r"A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA",
        r"[A-Z0-9]{16}(?![A-Z0-9])",
        ("a3t", "akia", "asia", "abia", "acca"),
    ),
    ("github_token", r"gh[pousr]_", r"[A-Za-z0-9]{36,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("github_pat", r"github_pat_", r"[A-Za-z0-9_]{22,}", ("github_pat_",)),
    (
        "gitlab_token",
        r"(?:glpat|gldt|glft|glrt|glsoat|glcbt|glimt|glagent|gloas|glffct|glptt)-",
        r"[A-Za-z0-9_\-]{20,}",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glrt-",
            "glsoat-",
            "glcbt-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glffct-",
            "glptt-",
        ),
    ),
    ("gitlab_runner_registration", r"GR1348941", r"[A-Za-z0-9_\-]{20,}", ("gr1348941",)),
    ("gitlab_session_cookie", r"_gitlab_session=", r"[0-9a-z]{32,}", ("_gitlab_session=",)),
    ("slack_token", r"xox[baprsoe]-|xoxe\.xox[bp]-|xapp-", r"[A-Za-z0-9\-]{10,}", ("xox", "xapp-")),
    (
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/",
        r"[A-Za-z0-9+/]{20,}",
        ("hooks.slack.com",),
    ),
    (
        "microsoft_teams_webhook",
        r"webhook\.office\.com/webhookb2/",
        r"[A-Za-z0-9@/\-]{40,}",
        ("webhookb2",),
    ),
    ("google_api_key", r"AIza", r"[A-Za-z0-9_\-]{35}", ("aiza",)),
    ("huggingface_token", r"hf_|api_org_", r"[A-Za-z0-9]{30,}", ("hf_", "api_org_")),
    ("npm_token", r"npm_", r"[A-Za-z0-9]{36,}", ("npm_",)),
    (  # pypi.org and test.pypi.org (detect-secrets' pypi_token plugin)
        "pypi_token",
        r"pypi-AgEIcHlwaS5vcmc|pypi-AgENdGVzdC5weXBpLm9yZw",
        r"[A-Za-z0-9_\-]{50,}",
        ("pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"),
    ),
    ("sendgrid_key", r"SG\.", r"[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ("sg.",)),
    ("sendinblue_key", r"xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}", ("xkeysib-",)),
    # detect-secrets' twilio plugin: ``SK`` (API key) and ``AC`` (account SID), 32 of [a-z0-9].
    ("twilio_key", r"SK|AC", r"[0-9a-z]{32}", ("sk", "ac")),
    ("mailgun_key", r"(?:pub)?key-", r"[a-f0-9]{32}(?![A-Za-z0-9_\-])", ("key-",)),
    ("databricks_token", r"dapi", r"[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    ("digitalocean_token", r"do[opr]_v1_", r"[a-f0-9]{64}", ("_v1_",)),
    ("doppler_token", r"dp\.pt\.", r"[A-Za-z0-9]{40,}", ("dp.pt.",)),
    ("dynatrace_token", r"dt0c01\.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    (
        "age_secret_key",
        r"AGE-SECRET-KEY-1",
        r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        ("age-secret-key-1",),
    ),
    ("alibaba_key_id", r"LTAI", r"[A-Za-z0-9]{20}", ("ltai",)),
    ("artifactory_key", r"AKCp", r"[A-Za-z0-9]{69}", ("akcp",)),
    ("clojars_token", r"CLOJARS_", r"[A-Za-z0-9]{60}", ("clojars_",)),
    ("duffel_token", r"duffel_(?:test|live)_", r"[A-Za-z0-9_=\-]{43}", ("duffel_",)),
    ("easypost_token", r"EZ[AT]K", r"[A-Za-z0-9]{54}", ("ezak", "eztk")),
    (
        "flutterwave_key",
        r"FLW(?:SEC|PUB)K_TEST-",
        r"[A-Ha-h0-9]{12,}(?:-X)?",
        ("flwseck_test", "flwpubk_test"),
    ),
    ("frameio_token", r"fio-u-", r"[A-Za-z0-9_=\-]{64}", ("fio-u-",)),
    ("flyio_token", r"fo1_|fm1[ar]_|fm2_", r"[A-Za-z0-9_+/=\-]{43,}", ("fo1_", "fm1", "fm2_")),
    (
        "grafana_token",
        r"glc_|glsa_|eyJrIjoi",
        r"[A-Za-z0-9_+/=]{32,}",
        ("glc_", "glsa_", "eyjrijoi"),
    ),
    (
        "harness_token",
        r"(?:pat|sat)\.",
        r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
        ("pat.", "sat."),
    ),
    ("heroku_key", r"HRKU-AA", r"[A-Za-z0-9_\-]{58}", ("hrku-aa",)),
    ("infracost_token", r"ico-", r"[A-Za-z0-9]{32}", ("ico-",)),
    ("linear_key", r"lin_api_", r"[A-Za-z0-9]{40}", ("lin_api_",)),
    ("new_relic_key", r"NR(?:AK|II|JS)-", r"[A-Za-z0-9\-]{19,}", ("nrak-", "nrii-", "nrjs-")),
    ("notion_token", r"ntn_", r"[0-9]{11}[A-Za-z0-9]{35}", ("ntn_",)),
    ("octopus_key", r"API-", r"[A-Z0-9]{26}", ("api-",)),
    ("openshift_token", r"sha256~", r"[A-Za-z0-9_\-]{43}", ("sha256~",)),
    ("perplexity_key", r"pplx-", r"[A-Za-z0-9]{48}", ("pplx-",)),
    ("planetscale_token", r"pscale_(?:tkn|oauth|pw)_", r"[A-Za-z0-9_=.\-]{32,}", ("pscale_",)),
    ("postman_key", r"PMAK-", r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ("pmak-",)),
    ("prefect_key", r"pnu_", r"[A-Za-z0-9]{36}", ("pnu_",)),
    ("pulumi_token", r"pul-", r"[a-f0-9]{40}", ("pul-",)),
    ("readme_key", r"rdme_", r"[a-z0-9]{70}", ("rdme_",)),
    ("rubygems_key", r"rubygems_", r"[a-f0-9]{48}", ("rubygems_",)),
    ("scalingo_token", r"tk-us-", r"[A-Za-z0-9_\-]{48}", ("tk-us-",)),
    ("sentry_token", r"sntry[us]_", r"[A-Za-z0-9+/=_]{64,}", ("sntryu_", "sntrys_")),
    ("settlemint_token", r"sm_[aps]at_", r"[A-Za-z0-9]{16}", ("sm_aat_", "sm_pat_", "sm_sat_")),
    ("shippo_token", r"shippo_(?:live|test)_", r"[a-fA-F0-9]{40}", ("shippo_",)),
    (
        "shopify_token",
        r"shp(?:at|ca|pa|ss)_",
        r"[a-fA-F0-9]{32}",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    (
        "square_token",
        r"sq0(?:atp|csp)-|EAAA",
        r"[A-Za-z0-9_\\\-]{22,}",  # detect-secrets' square_oauth fixture holds a backslash
        ("sq0atp-", "sq0csp-", "eaaa"),
    ),
    ("facebook_page_token", r"EAA[MC]", r"[A-Za-z0-9]{100,}", ("eaam", "eaac")),
    ("vault_token", r"hv[sb]\.", r"[A-Za-z0-9_\-]{90,}", ("hvs.", "hvb.")),
    ("onepassword_token", r"ops_eyJ", r"[A-Za-z0-9+/]{250,}={0,3}", ("ops_eyj",)),
    ("atlassian_token", r"ATATT3", r"[A-Za-z0-9_=\-]{186,}", ("atatt3",)),
    ("cloudflare_origin_ca_key", r"v1\.0-", r"[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
    ("sourcegraph_token", r"sgp_", r"[A-Za-z0-9_]{40,}", ("sgp_",)),
    (
        "azure_ad_client_secret",
        r"",
        r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        ("q~",),
    ),
)
