"""The redactor: the one catalogue of secret shapes, and the masking of one string by it.

Best effort, not a PII scrubber. The catalogue (``PATTERNS``) holds private-key blocks,
credentials in URLs, token-like query parameters and assignments (``DB_PASS=``,
``PGPASSWORD=``, ``AccountKey=``), command-line flags (``--password=``, ``--token x``),
``Authorization`` headers, e-mail addresses, and the
self-identifying provider tokens of gitleaks' rule set (``config/gitleaks.toml``: GitHub,
GitLab, Slack, AWS, Stripe, Hugging Face, npm, SendGrid, Twilio, ...), ported as
prefix-plus-body shapes. gitleaks' keyword-context rules (``twitter ... = <32 chars>``) are
covered by the generic assignment shape instead. Each match keeps a short recognisable prefix
(``sk-***``, ``token=***``) so a reader can tell what was there without learning it.

Everything that masks secrets uses this module: stored steps at ``redacted``, the built-in
tools' output, the search worker (through :func:`catalogue_spec`) and provider error excerpts.

Invariants:
- Linear time. Python's ``re`` backtracks, so every pattern is built not to: a token pattern
  may only start where the previous character cannot belong to the token (a negative
  look-behind), so each run of token characters is tried once; repeated classes that a later
  literal must follow are possessive (``++``) so a failed attempt never re-scans. A pattern
  with ``keywords`` runs only when one of them occurs in the text.
- Replacements are ``re`` templates (no callables), so the catalogue can be handed as data to
  a process that cannot import this package.
- Secrets are masked over the whole string before it is cut, so a secret straddling the cut
  can never leave a recognisable tail or head behind.
- The result of :func:`redact` is at most ``LEAF_CHAR_CAP`` characters plus ``TRUNCATION_MARKER``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A stored string leaf is for an audit reader, not for replay; 2,000 characters shows what
# happened while keeping one step's payload small.
LEAF_CHAR_CAP = 2000
TRUNCATION_MARKER = "… [truncated]"
MASK = "***"
_KEEP_PREFIX = r"\g<prefix>***"

# Characters a token is made of; a token pattern never starts right after one of them.
_TOKEN = r"A-Za-z0-9_\-"  # noqa: S105 (a character class, not a password)
_NOT_AFTER_TOKEN = rf"(?<![{_TOKEN}])"

# Names of query parameters and assignments whose value is a credential.
_QUERY_NAMES = (
    r"access_token|refresh_token|id_token|auth_token|token|api_key|apikey|api-key|key"
    r"|client_secret|secret|password|passwd|pwd|signature|sig"
)
_ASSIGNED_NAMES = (
    r"secret_access_key|session_token|client_secret|api[_\-]?key|access_token|auth_token"
    r"|secret_key|private_key|password|passwd|passphrase|pgpassword|pwd|pass|token|secret"
    r"|credentials?|accountkey|sharedaccesskey|sharedaccesssignature"
)

# Names of command-line flags whose value is a credential (``--password=``, ``--api-key``).
_FLAG_NAMES = (
    r"password|passwd|pass|pwd|passphrase|token|secret|api[_\-]?key|access[_\-]?key"
    r"|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?"
)

# Self-identifying provider tokens, ported from gitleaks' rule set (``config/gitleaks.toml``):
# name, literal prefix (a regex), body, and the lower-case keywords that pre-test the text.
# Bodies are the rule's alphabet with its minimum length; an open upper bound masks more, never
# less. Rules that need a keyword nearby (``twitter ... = <32 chars>``) are the assignment
# shape's job; a rule without a prefix of its own (Mailchimp, Azure AD) is written out below.
_PROVIDER_TOKENS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
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
    ("pypi_token", r"pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_\-]{50,}", ("pypi-ageichlwas5vcmc",)),
    ("sendgrid_key", r"SG\.", r"[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ("sg.",)),
    ("sendinblue_key", r"xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}", ("xkeysib-",)),
    ("twilio_key", r"SK", r"[0-9a-fA-F]{32,}", ("sk",)),
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
        r"[A-Za-z0-9_\-]{22,}",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretPattern:
    """One named secret shape and the ``re`` template its matches become.

    ``keywords`` (lower case) are a cheap pre-test: the regex runs only when one of them
    occurs in the lower-cased text. Empty means always run.
    """

    name: str
    regex: re.Pattern[str]
    replacement: str
    keywords: tuple[str, ...] = ()

    def apply(self, text: str, lowered: str | None = None) -> str:
        if self.keywords:
            haystack = text.lower() if lowered is None else lowered
            if not any(word in haystack for word in self.keywords):
                return text
        return self.regex.sub(self.replacement, text)


def _initials(names: str) -> str:
    """The first letters of ``names`` in both cases: a cheap test before the alternation."""
    letters = {name[0] for name in names.split("|")}
    return "".join(sorted(letters | {c.upper() for c in letters}))


def _pattern(
    name: str, regex: str, flags: int = 0, keywords: tuple[str, ...] = ()
) -> SecretPattern:
    """A pattern whose ``prefix`` group survives and whose remainder becomes the mask."""
    return SecretPattern(
        name=name, regex=re.compile(regex, flags), replacement=_KEEP_PREFIX, keywords=keywords
    )


def _token(name: str, prefix: str, body: str, keywords: tuple[str, ...]) -> SecretPattern:
    """A self-identifying token: a literal ``prefix`` at a token start, then its body."""
    regex = rf"{_NOT_AFTER_TOKEN}(?P<prefix>{prefix}){body}(?![{_TOKEN}])"
    return _pattern(name, regex, keywords=keywords)


_PRIVATE_KEY_LABEL = r"-----(?:BEGIN|END)[ A-Z0-9_\-]{0,100}?PRIVATE KEY(?: BLOCK)?-----"

# Order matters: whole key blocks first, URL parts next (they hold other shapes), specific
# prefixes before general ones (``sk-ant-`` before ``sk-``), JWTs before ``Bearer``, e-mail last.
_STRUCTURED: tuple[SecretPattern, ...] = (
    _pattern(
        "private_key_block",
        # The body never holds "-----", so it ends at the END line or, cut short, at the next
        # dashes or the end of the text: the whole body is masked either way.
        r"(?P<prefix>-----BEGIN[ A-Z0-9_\-]{0,100}?PRIVATE KEY(?: BLOCK)?-----)"
        rf"(?:[^-]|-(?!----))*+(?:{_PRIVATE_KEY_LABEL})?",
        keywords=("private key",),
    ),
    _pattern(
        "url_credentials",
        # The user may be empty (redis://:pw@host); the password may hold "/" but not ":",
        # "?" or "#", which keeps ports and query strings out and each attempt short.
        r"(?<![A-Za-z0-9+.\-])(?P<prefix>[A-Za-z][A-Za-z0-9+.\-]*+://[^\s:/@]*+:)"
        r"[^\s:@?#]++(?=@)",
        keywords=("://",),
    ),
    _pattern(
        "query_parameter",
        rf"(?<![A-Za-z0-9_\-])(?=[{_initials(_QUERY_NAMES)}])(?P<prefix>(?:{_QUERY_NAMES})=)"
        r"[^&\s#\"'<>]++",
        re.IGNORECASE,
    ),
    _pattern(
        "secret_assignment",
        # An optional identifier prefix (DB_PASSWORD, STRIPE_SECRET_KEY, app.api-key): each
        # segment ends at a separator outside its class, so a split is found in one pass, and
        # a match may only start where no identifier character precedes it.
        rf"(?<![A-Za-z0-9_.\-])(?P<prefix>(?:[A-Za-z0-9]+[_.\-])*(?:{_ASSIGNED_NAMES})"
        r"[\"']?\s*+[:=]\s*+[\"']?)[^\s\"'&,;]++",
        re.IGNORECASE,
    ),
    _pattern(
        "command_line_flag",
        # --password=x, --db-password x, -token x: a flag named for a credential and its value.
        # Segments end at a separator outside their class, as in the assignment shape; a value
        # that starts with "-" is the next flag, not a secret.
        rf"(?<![A-Za-z0-9_.\-])(?P<prefix>--?(?:[A-Za-z0-9]+[_\-])*(?:{_FLAG_NAMES})"
        r"(?:=|[ \t]++))(?!-)[^\s\"'&,;]++",
        re.IGNORECASE,
        keywords=("pass", "pwd", "token", "secret", "key", "credential"),
    ),
    _pattern(
        "basic_authorization",
        r"(?<![A-Za-z0-9_\-])(?P<prefix>(?:proxy-)?authorization[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        r"(?:basic|digest|negotiate|token|apikey)[ \t]++)[A-Za-z0-9._~+/=\-]++",
        re.IGNORECASE,
        keywords=("authorization",),
    ),
    *(_token(*shape) for shape in _PROVIDER_TOKENS),
    _pattern(
        "mailchimp_key",
        rf"{_NOT_AFTER_TOKEN}(?P<prefix>)[a-f0-9]{{32}}-us\d{{1,2}}(?![{_TOKEN}])",
        keywords=("-us",),
    ),
    _pattern("jwt", rf"{_NOT_AFTER_TOKEN}(?P<prefix>eyJ)[{_TOKEN}]++\.[{_TOKEN}]++\.[{_TOKEN}]++"),
    _pattern(
        "authorization_header",
        r"(?<![A-Za-z0-9_])(?P<prefix>Bearer\s++)[A-Za-z0-9._~+/=\-]{8,}",
        re.IGNORECASE,
        keywords=("bearer",),
    ),
    SecretPattern(
        name="email",
        regex=re.compile(
            r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"
        ),
        replacement=f"{MASK}@{MASK}",
        keywords=("@",),
    ),
)
PATTERNS: tuple[SecretPattern, ...] = _STRUCTURED


def mask_secrets(text: str) -> str:
    """Every catalogued secret shape in ``text`` masked; no length bound."""
    lowered = text.lower()  # keyword pre-tests only: masking never adds a keyword
    for pattern in PATTERNS:
        text = pattern.apply(text, lowered)
    return text


def redact(text: str) -> str:
    """``text`` with secrets masked, then cut to ``LEAF_CHAR_CAP`` characters plus a marker."""
    masked = mask_secrets(text)
    if len(masked) <= LEAF_CHAR_CAP:
        return masked
    return masked[:LEAF_CHAR_CAP] + TRUNCATION_MARKER


# Error excerpts (logged, never stored) also mask any long unbroken run of key alphabet: an
# echoed secret of a shape no rule knows. Too broad for stored content, where hashes and ids
# are the data a reader came for. Starts only at a run's start, so it is linear too.
OPAQUE_RUN = re.compile(r"(?<![A-Za-z0-9_+/=\-])[A-Za-z0-9_+/=\-]{32,}")


def mask_opaque_runs(text: str, mask: str = MASK) -> str:
    """``text`` with every run of 32 or more key-alphabet characters replaced by ``mask``."""
    return OPAQUE_RUN.sub(mask.replace("\\", "\\\\"), text)


def catalogue_spec() -> list[tuple[str, int, str, list[str]]]:
    """The catalogue as plain data (source, flags, template, keywords) for a worker process
    that applies it with the standard library alone, in the same order."""
    return [
        (p.regex.pattern, int(p.regex.flags), p.replacement, list(p.keywords)) for p in PATTERNS
    ]
