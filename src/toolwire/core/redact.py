"""The redactor: the one catalogue of secret shapes, and the masking of one string by it.

Secrets and personal data are different things. A *secret shape* (a credential, key or token)
is masked wherever a tool's output or a stored copy holds it: ``PATTERNS``, applied by
:func:`mask_secrets`. *Personal data* (e-mail addresses, phone numbers, IBANs, card numbers) is
not a secret: its shapes live in :mod:`toolwire.core.personal`, tool output masks them by the
run's trust zone under the workspace's policy (:mod:`toolwire.tools.disclosure`), and a stored
copy at ``redacted`` masks both (:func:`redact`).

The catalogue holds private-key blocks, credentials in URLs, token-like query parameters,
assignments (``DB_PASS=``, ``SECRET_KEY_BASE: ...``, ``"password": "a b; c"``, ``password =
value with spaces``, ``apikey == "..."``), command-line flags (``--password=``, ``--token x``,
``curl -u user:pass``, ``mysqldump -pPASS``, ``sshpass -p``, ``docker login -p``), session
cookies, ``.npmrc`` and Docker ``config.json`` credentials, ``Authorization`` headers, chat-bot
tokens (Telegram, Discord) and the self-identifying provider tokens of
:mod:`toolwire.core._provider_tokens`. Sources: gitleaks' ``config/gitleaks.toml`` at
v8.30.0-27 (commit b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b) and detect-secrets'
``detect_secrets/plugins/`` at v1.5.0-50 (commit 5e141933554a0b74e7341841f318be21e895339c),
whose keyword lists (``contraseña``, ``db_pass``, suffixed names such as
``password_super_secure``) and test fixtures (``tests/data/detect_secrets_fixtures.txt``) the
shapes here are checked against. Rules that only an entropy score can tell (gitleaks'
``generic-api-key``, detect-secrets' high-entropy strings) are covered by the assignment shape,
by name, instead. Each match keeps a short recognisable prefix (``sk-***``, ``token=***``) so a
reader can tell what was there without learning any of it.

Everything that masks secrets uses this module: stored steps at ``redacted``, the built-in
tools' output, the search worker (through :func:`catalogue_spec`) and provider error excerpts.

Invariants:
- Linear time. Python's ``re`` backtracks, so every pattern is built not to: a pattern may only
  start where the previous character cannot belong to what it matches (a negative
  look-behind), so each run is tried once; repeated classes that a later literal must follow
  are possessive (``++``); an identifier is first checked, in one possessive pass, to be
  followed by an assignment before its parts are looked at; scans after a command name are
  bounded in tokens. A pattern with ``keywords`` runs only when one of them occurs in the text.
- A quoted value is masked to its closing quote (or the end of the line), whatever it holds;
  an unquoted one to the next space (or, after a spaced ``=`` or ``:``, to the end of the
  line's words), so a value with ``;``, ``,`` or ``&`` inside is masked whole.
- Replacements are ``re`` templates (no callables), so the catalogue can be handed as data to
  a process that cannot import this package.
- Secrets are masked over the whole string before it is cut, so a secret straddling the cut
  can never leave a recognisable tail or head behind.
- The result of :func:`redact` is at most ``LEAF_CHAR_CAP`` characters plus ``TRUNCATION_MARKER``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolwire.core._provider_tokens import PROVIDER_TOKENS
from toolwire.core.personal import mask_personal

# A stored string leaf is for an audit reader, not for replay; 2,000 characters shows what
# happened while keeping one step's payload small.
LEAF_CHAR_CAP = 2000
TRUNCATION_MARKER = "… [truncated]"
MASK = "***"
_KEEP_PREFIX = r"\g<prefix>***"
# The opening quote of a quoted value is kept (its closing quote is never matched).
_KEEP_QUOTED = r"\g<prefix>\g<dq>\g<sq>\g<bq>***"

# Characters a token is made of; a token pattern never starts right after one of them.
_TOKEN = r"A-Za-z0-9_\-"  # noqa: S105 (a character class, not a password)
_NOT_AFTER_TOKEN = rf"(?<![{_TOKEN}])"
_IDENTIFIER = r"A-Za-z0-9_.\-"
_NOT_AFTER_IDENTIFIER = rf"(?<![{_IDENTIFIER}])"

# Names of query parameters whose value is a credential (a session id is one).
_QUERY_NAMES = (
    r"access_token|refresh_token|id_token|auth_token|token|api_key|apikey|api-key|key"
    r"|client_secret|secret|password|passwd|pwd|signature|sig"
    r"|phpsessid|jsessionid|sessionid|session_id|session|sid"
)
# The last word of an assigned name whose value is a credential (detect-secrets' keyword list
# and gitleaks' generic keywords). ``key`` alone is too common a word: only its qualified forms.
_KEY_QUALIFIERS = (
    r"api|auth|service|account|db|database|priv|private|client|secret|app|encryption|encrypt"
    r"|decryption|master|signing|sign|hmac|jwt|aes|cipher|crypt|license|storage|shared|webhook"
    r"|bot|consumer|access|session|subscription|admin"
)
_ASSIGNED_NAMES = (
    rf"secret[_.\-]?access[_.\-]?key|(?:{_KEY_QUALIFIERS})[_.\-]?key"
    r"|session[_.\-]?token|client[_.\-]?secret|access[_.\-]?token|refresh[_.\-]?token"
    r"|auth[_.\-]?token|bearer[_.\-]?token|key[_.\-]?pass|passphrase|pgpassword|sshpass"
    r"|password|passwd|pwd|pass|contrase(?:ñ|n)a|token|secret|credentials?|creds|apikey"
    r"|accountkey|sharedaccesskey|sharedaccesssignature"
)
# Parts of a name after its credential word that say the value is *about* the credential, not
# it (``TOKEN_URL``, ``PASSWORD_MIN_LENGTH``): such a name is not masked.
_ABOUT_SUFFIXES = (
    r"url|uri|endpoint|file|path|dir|length|len|size|ttl|expiry|expires|timeout|count|type"
    r"|name|enabled|required|min|max|policy|header|field|prefix|format|id|hint|reset|rotation"
)
# Leading parts of a name: ``DB_``, ``app.``, ``my-``, or a camelCase word (``db`` in
# ``dbPassword``). Each ends where its class ends, so a split is found in one pass.
_LEADING_PARTS = r"(?:[A-Za-z0-9]++[_.\-]|(?-i:[A-Z]?[a-z0-9]++(?=[A-Z])))*"
_TRAILING_PARTS = (
    rf"(?:[_.\-](?!(?:{_ABOUT_SUFFIXES})(?![A-Za-z0-9]))[A-Za-z0-9]++"
    r"|(?-i:(?<=[a-z0-9])[A-Z][a-z0-9]*+))*+"
)
_NAMED = rf"_*+{_LEADING_PARTS}(?:{_ASSIGNED_NAMES}){_TRAILING_PARTS}"

# A value: quoted (masked to its closing quote, escapes included, or to the end of the line),
# else unquoted, where ``;``, ``,`` and ``&`` end it only before a space, the end or another
# ``name=``.
_QUOTED = r"(?P<dq>\")(?:[^\"\\\n]|\\.)*+|(?P<sq>')(?:[^'\\\n]|\\.)*+|(?P<bq>`)[^`\n]*+"
_NEXT_PAIR = rf"[{_IDENTIFIER}]++[ \t]*+="
_UNQUOTED = rf"(?:[^\s\"'`&,;]|[&,;](?!\s|$|{_NEXT_PAIR}))++"
# After a spaced ``=`` or ``:`` (INI, YAML), the value runs over the line's words until a
# comment or the next ``name:``/``name=``.
_WORDS = rf"{_UNQUOTED}(?:[ \t]++(?!#|;|//)(?![{_IDENTIFIER}]++[ \t]*+[:=])[^\s]++)*+"

# Names of command-line flags whose value is a credential (``--password=``, ``--api-key``).
_FLAG_NAMES = (
    r"password|passwd|pass|pwd|passphrase|token|secret|api[_\-]?key|access[_\-]?key"
    r"|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?"
)
# Commands whose short flag takes a password: (name, command, flag, attached only, keywords).
# A mysql ``-p`` followed by a space prompts, so only an attached value is one there.
_COMMAND_FLAGS: tuple[tuple[str, str, str, bool, tuple[str, ...]], ...] = (
    ("mysql_password_flag", r"(?:mysql|mariadb)[a-z\-]*+", "-p", True, ("mysql", "mariadb")),
    ("sshpass_flag", r"sshpass", "-p", False, ("sshpass",)),
    (
        "registry_login_flag",
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]++registry)[ \t]++login",
        "-p",
        False,
        ("login",),
    ),
    ("redis_password_flag", r"redis-cli", "-a", False, ("redis-cli",)),
    ("mongo_password_flag", r"mongo(?:sh|dump|restore|export|import)?", "-p", False, ("mongo",)),
    ("sqlcmd_password_flag", r"sqlcmd|bcp", "-P", False, ("sqlcmd", "bcp")),
    (
        "ldap_password_flag",
        r"ldap(?:search|add|modify|delete|passwd|compare|whoami)",
        "-w",
        False,
        ("ldap",),
    ),
    ("archive_password_flag", r"zip|7za?|7zz|unrar|rar", "-[pP]", False, ("zip", "7z", "rar")),
)
_COMMAND_TOKENS = 24  # how far after a command name its flag is looked for, in words

# Cookie names that carry a session or a login (PHPSESSID, JSESSIONID, connect.sid,
# laravel_session, remember_web_*, XSRF-TOKEN, next-auth.session-token, ...).
_SESSION_WORDS = r"sess|sid|token|auth|jwt|remember|logged|login|csrf|xsrf"


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
    name: str,
    regex: str,
    flags: int = 0,
    keywords: tuple[str, ...] = (),
    replacement: str = _KEEP_PREFIX,
) -> SecretPattern:
    """A pattern whose ``prefix`` group survives and whose remainder becomes the mask."""
    return SecretPattern(
        name=name, regex=re.compile(regex, flags), replacement=replacement, keywords=keywords
    )


def _token(name: str, prefix: str, body: str, keywords: tuple[str, ...]) -> SecretPattern:
    """A self-identifying token: a literal ``prefix`` at a token start, then its body."""
    regex = rf"{_NOT_AFTER_TOKEN}(?P<prefix>{prefix}){body}(?![{_TOKEN}])"
    return _pattern(name, regex, keywords=keywords)


def _command_flag(
    name: str, command: str, flag: str, attached: bool, keywords: tuple[str, ...]
) -> SecretPattern:
    """``command ... flag VALUE``: the value of a password flag within a few words of it."""
    gap = r"(?=[^\s])" if attached else r"[ \t]*+"
    regex = (
        rf"{_NOT_AFTER_IDENTIFIER}(?P<prefix>(?:{command})"
        rf"(?:[ \t]++(?!{flag})[^\s|;&]++){{0,{_COMMAND_TOKENS}}}+[ \t]++{flag}{gap})"
        rf"(?:{_QUOTED}|[^\s\"'`]++)"
    )
    return _pattern(name, regex, keywords=keywords, replacement=_KEEP_QUOTED)


_PRIVATE_KEY_LABEL = r"-----(?:BEGIN|END)[ A-Z0-9_\-]{0,100}?PRIVATE KEY(?: BLOCK)?-----"

_KEY_BLOCKS_AND_URLS: tuple[SecretPattern, ...] = (
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
        r"[^&\s#;\"'<>]++",
        re.IGNORECASE,
    ),
)

_ASSIGNMENTS: tuple[SecretPattern, ...] = (
    _pattern(
        "npmrc_auth",
        # .npmrc: //registry/:_authToken=..., _auth=<base64 user:pass>, _password=...
        r"(?<![A-Za-z0-9_])(?P<prefix>_(?:authToken|auth|password)[ \t]*+=[ \t]*+)[^\s]++",
        keywords=("_auth", "_password"),
    ),
    _pattern(
        "docker_config_auth",
        # ~/.docker/config.json and DOCKER_AUTH_CONFIG: "auth", "identitytoken", ...
        r"(?P<prefix>\"(?:auth|identitytoken|registrytoken)\"[ \t]*+:[ \t]*+\")[^\"\n]*+",
        re.IGNORECASE,
        keywords=('"auth"', "identitytoken", "registrytoken"),
    ),
    _pattern(
        "secret_assignment",
        # A credential's name (DB_PASSWORD, SECRET_KEY_BASE, app.api-key, dbPassword,
        # password_super_secure), an assignment or comparison, then the value. The look-ahead
        # first checks, in one possessive pass, that the identifier is followed by an operator.
        rf"{_NOT_AFTER_IDENTIFIER}(?<!//)"
        r"(?=[\w.\-]++[\"'\]]{0,2}[ \t]*+[:=!?|\"])"
        rf"(?P<prefix>{_NAMED}[\"'\]]{{0,2}}"
        r"(?:[ \t]*+(?:===?|!==?|=>|:=|\?=|\|\|=)[ \t]*+"
        r"|(?P<spaced>[ \t]++=[ \t]++|[ \t]*+:[ \t]++)"
        r"|[ \t]*+[:=]|[ \t]++(?=\"))(?:@(?=[\"']))?)"
        rf"(?:{_QUOTED}|(?(spaced){_WORDS}|{_UNQUOTED}))",
        re.IGNORECASE,
        replacement=_KEEP_QUOTED,
    ),
    _pattern(
        "compared_secret",
        # if ("<secret>" == password): the quoted side of a comparison with a credential's name.
        rf"(?P<prefix>\")(?:[^\"\\\n]|\\.)++(?=\"[ \t]*+[!=]==?[ \t]*+{_NAMED}(?![A-Za-z0-9]))",
        re.IGNORECASE,
        keywords=("==", "!="),
    ),
    _pattern(
        "session_cookie",
        # Cookie: a=b; sessionid=...; Set-Cookie: laravel_session=...; Path=/ — a pair right
        # after the header name or a ";" whose name says it holds a session or a login.
        r"(?:(?<=cookie:)|(?<=cookie: )|(?<=;)|(?<=; ))"
        rf"(?P<prefix>(?=[^=;\s]*?(?:{_SESSION_WORDS}))[^=;\s]++=)[^;\s]++",
        re.IGNORECASE,
        keywords=("cookie",),
    ),
)

_FLAGS: tuple[SecretPattern, ...] = (
    _pattern(
        "command_line_flag",
        # --password=x, --db-password "a b", -token x: a flag named for a credential and its
        # value. Segments end at a separator outside their class, as in the assignment shape;
        # a value that starts with "-" is the next flag, not a secret.
        rf"{_NOT_AFTER_IDENTIFIER}(?P<prefix>--?(?:[A-Za-z0-9]+[_\-])*(?:{_FLAG_NAMES})"
        rf"(?:=|[ \t]++))(?!-)(?:{_QUOTED}|{_UNQUOTED})",
        re.IGNORECASE,
        keywords=("pass", "pwd", "token", "secret", "key", "credential"),
        replacement=_KEEP_QUOTED,
    ),
    _pattern(
        "curl_user",
        # curl -u user:pass, --user 'user:pa ss' (gitleaks curl-auth-user): the part after ":".
        rf"{_NOT_AFTER_IDENTIFIER}(?P<prefix>curl(?:[ \t]++(?!-u|--user)[^\s|;&]++)"
        rf"{{0,{_COMMAND_TOKENS}}}+[ \t]++(?:-u|--user)(?:[ \t]*+|=)"
        r"(?:(?P<dq>\")[^\":\n]*+:|(?P<sq>')[^':\n]*+:|[^\s\"':]*+:))"
        r"(?(dq)[^\"\n]*+|(?(sq)[^'\n]*+|[^\s\"']++))",
        keywords=("curl",),
    ),
    *(_command_flag(*shape) for shape in _COMMAND_FLAGS),
    _pattern(
        "openssl_pass_argument",
        r"(?<![A-Za-z0-9_\-])(?P<prefix>-pass(?:in|out)?[ \t]++pass:)[^\s]++",
        keywords=("pass:",),
    ),
    _pattern(
        "basic_authorization",
        r"(?<![A-Za-z0-9_\-])(?P<prefix>(?:proxy-)?authorization[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        r"(?:basic|digest|negotiate|token|apikey)[ \t]++)[A-Za-z0-9._~+/=\-]++",
        re.IGNORECASE,
        keywords=("authorization",),
    ),
)

_TOKENS: tuple[SecretPattern, ...] = (
    *(_token(*shape) for shape in PROVIDER_TOKENS),
    _pattern(
        "mailchimp_key",
        rf"{_NOT_AFTER_TOKEN}(?P<prefix>)[a-f0-9]{{32}}-us\d{{1,2}}(?![{_TOKEN}])",
        keywords=("-us",),
    ),
    _pattern(
        "telegram_bot_token",
        # <bot id>:<35 characters starting with "A"> (gitleaks, detect-secrets), also inside
        # an API URL (.../bot123456:AA.../sendMessage): the id is public, the rest is not.
        rf"(?<![0-9:])(?P<prefix>[0-9]{{5,16}}:)A[{_TOKEN}]{{34}}(?![{_TOKEN}])",
        keywords=(":a",),
    ),
    _pattern(
        "discord_bot_token",
        # detect-secrets' discord plugin: three base64url parts, 24-28 . 6 . 27-38.
        rf"{_NOT_AFTER_TOKEN}(?P<prefix>)[{_TOKEN}]{{23,28}}\.[{_TOKEN}]{{6}}\.[{_TOKEN}]{{27,38}}"
        rf"(?![{_TOKEN}])",
        keywords=(".",),
    ),
    _pattern(
        "discord_webhook",
        r"(?P<prefix>discord(?:app)?\.com/api/webhooks/[0-9]++/)[A-Za-z0-9_\-]++",
        keywords=("/api/webhooks/",),
    ),
    _pattern(
        "jwt",
        # Two parts (an unsigned token) or three; the second of two is a JSON object too.
        rf"{_NOT_AFTER_TOKEN}(?P<prefix>eyJ)[{_TOKEN}]++\.(?=eyJ|[{_TOKEN}]++\.[{_TOKEN}])"
        rf"[{_TOKEN}]++(?:\.[{_TOKEN}]++)?",
        keywords=("eyj",),
    ),
    _pattern(
        "authorization_header",
        r"(?<![A-Za-z0-9_])(?P<prefix>Bearer\s++)[A-Za-z0-9._~+/=\-]{8,}",
        re.IGNORECASE,
        keywords=("bearer",),
    ),
)

# Order matters: whole key blocks first, URL parts next (they hold other shapes), named
# assignments and flags before bare tokens (a token's prefix would survive inside them),
# specific prefixes before general ones (``sk-ant-`` before ``sk-``), JWTs before ``Bearer``.
PATTERNS: tuple[SecretPattern, ...] = (*_KEY_BLOCKS_AND_URLS, *_ASSIGNMENTS, *_FLAGS, *_TOKENS)


def mask_secrets(text: str) -> str:
    """Every catalogued secret shape in ``text`` masked; no length bound. Personal data is
    left as it is (see :mod:`toolwire.core.personal`)."""
    lowered = text.lower()  # keyword pre-tests only: masking never adds a keyword
    for pattern in PATTERNS:
        text = pattern.apply(text, lowered)
    return text


def redact(text: str) -> str:
    """``text`` as a stored copy at ``redacted`` keeps it: secrets and personal data masked,
    then cut to ``LEAF_CHAR_CAP`` characters plus a marker."""
    masked = mask_personal(mask_secrets(text))
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
