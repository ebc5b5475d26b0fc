"""Secret files: the one place that decides which workspace files no file tool may expose.

A file is a secrets file when any of these holds:
- **Name.** Its name, or the tail of its path, matches ``SECRET_NAMES`` / ``SECRET_PATHS``
  (case-insensitive globs), also once an editor's backup or swap decoration is removed
  (``.env~``, ``.env.bak``, ``#.env#``, ``.id_rsa.swp``). Public keys (``*.pub``) are not
  secret. ``id_*`` counts only without an extension (``id_rsa``, ``id_work``), so
  ``id_mapping.json`` stays readable.
- **Content.** Its bytes hold a private key (PEM, OpenSSH, PuTTY, PGP blocks) or kubeconfig
  ``client-key-data`` (``SECRET_CONTENT``).
- **Identity.** It is a hard link (``st_nlink > 1``) sharing device and inode with a secrets
  file found by its path in any folder the workspace names (every file root, the documents
  and configuration folders, ...: :class:`SecretIdentities`), whatever its own name or folder:
  another name for the same bytes is the same file. A hard link to a file outside every such
  folder cannot be traced by name; its content is still checked.

Reading, searching and writing tools refuse or skip such files; listings show their names
with their details withheld.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

# Kept broad on purpose: a false positive costs one readable file, a miss costs a credential.
SECRET_NAMES = (
    # environment and tool credential files
    ".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".pgpass", ".htpasswd",
    ".git-credentials", ".npmrc", ".pypirc", ".yarnrc.yml", ".dockercfg", ".s3cfg", ".boto",
    ".my.cnf", ".vault-token", "master.key", "credentials", "credentials.*",
    "*credentials*.json", "service-account*.json", "*serviceaccount*.json", "secrets.*",
    "*.secret", "*.secrets", "*.tfstate", "*.tfstate.*",
    # keys, certificates with keys, key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.kdbx", "*.p8",
    "*.ovpn", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "id_xmss*", "deploy_key",
    "deploy_key.*", "*_deploy_key", "ssh_host_*_key",
    # cluster access
    "kubeconfig", "kubeconfig.*", "*.kubeconfig",
)  # fmt: skip
ID_KEY = re.compile(r"id_[A-Za-z0-9_\-]+")  # id_work: an ssh key under a name of its own
# Secret by where they live: matched against the last parts of the relative path.
SECRET_PATHS = (
    ".kube/config", ".aws/credentials", ".aws/config", ".docker/config.json", ".ssh/*",
    ".gnupg/*", "gcloud/*credentials*", ".config/gh/hosts.yml", ".azure/*",
)  # fmt: skip
PUBLIC = ("*.pub",)
BACKUP_SUFFIXES = ("~", ".bak", ".backup", ".orig", ".old", ".save", ".sav", ".tmp", ".copy")
SWAP_SUFFIXES = (".swp", ".swo", ".swn")  # vim: .<name>.swp
SECRET_CONTENT = re.compile(
    rb"-----BEGIN[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    rb"|PuTTY-User-Key-File-\d|client-key-data[\"']?\s*:"
)
SNIFF_BYTES = 2_000_000  # the most any file tool reads of one file
LISTING_SNIFF_BYTES = 65_536  # listings touch many files: the head, where key files start


def _undecorated(name: str) -> set[str]:
    """``name`` and what it was before backup or swap decorations were added."""
    names = {name}
    for _ in range(3):  # .env.bak~ is two decorations deep; three is plenty
        for current in list(names):
            if current.startswith("#") and current.endswith("#") and len(current) > 2:
                names.add(current[1:-1])
            for suffix in (*BACKUP_SUFFIXES, *SWAP_SUFFIXES):
                if current.endswith(suffix) and len(current) > len(suffix):
                    stem = current[: -len(suffix)]
                    names.add(stem)
                    if suffix in SWAP_SUFFIXES and stem.startswith(".") and len(stem) > 1:
                        names.add(stem[1:])
    return names


def _matches(name: str) -> bool:
    if any(fnmatch.fnmatchcase(name, p) for p in PUBLIC):
        return False
    return ID_KEY.fullmatch(name) is not None or any(
        fnmatch.fnmatchcase(name, p) for p in SECRET_NAMES
    )


def is_secret_name(name: str) -> bool:
    """True when a file called ``name`` is a secrets file by its name alone."""
    return any(_matches(candidate) for candidate in _undecorated(name.lower()))


def is_secret_path(relative: PurePosixPath | str) -> bool:
    """True when the name, or the tail of the path, marks a secrets file."""
    parts = PurePosixPath(str(relative).lower()).parts
    if not parts or any(fnmatch.fnmatchcase(parts[-1], p) for p in PUBLIC):
        return False
    if is_secret_name(parts[-1]):
        return True
    for pattern in SECRET_PATHS:
        depth = len(PurePosixPath(pattern).parts)
        if len(parts) < depth:
            continue
        head = parts[-depth:-1]
        if any(fnmatch.fnmatchcase("/".join((*head, n)), pattern) for n in _undecorated(parts[-1])):
            return True
    return False


def has_secret_content(data: bytes) -> bool:
    return SECRET_CONTENT.search(data) is not None


def secret_inodes(*folders: Path) -> frozenset[tuple[int, int]]:
    """(device, inode) of every secrets file found by its path under any of ``folders``."""
    found: set[tuple[int, int]] = set()
    for base in folders:
        for current, _dirs, files in os.walk(base, followlinks=False):
            here = PurePosixPath(Path(current).relative_to(base).as_posix())
            for name in files:
                if is_secret_path(here / name):
                    try:
                        info = os.stat(os.path.join(current, name), follow_symlinks=False)
                    except OSError:
                        continue
                    found.add((info.st_dev, info.st_ino))
    return frozenset(found)


class SecretIdentities:
    """The secrets files of some folders by identity (device, inode): one per call of a tool.

    The folders are walked at most once, and only when a file with more than one name asks
    (a file with one link cannot be another name of a secrets file), so a call that meets no
    hard link walks nothing."""

    __slots__ = ("_folders", "_known")

    def __init__(self, folders: Iterable[Path]) -> None:
        self._folders = tuple(dict.fromkeys(folder.resolve() for folder in folders))
        self._known: frozenset[tuple[int, int]] | None = None

    def holds(self, info: os.stat_result) -> bool:
        """Whether the file ``info`` describes is one of the secrets files, by another name."""
        if info.st_nlink <= 1:
            return False
        if self._known is None:
            self._known = secret_inodes(*self._folders)
        return (info.st_dev, info.st_ino) in self._known


def _relative(base: Path, candidate: Path) -> PurePosixPath:
    try:
        return PurePosixPath(candidate.relative_to(base).as_posix())
    except ValueError:
        return PurePosixPath(candidate.name)


def is_secret_file(
    base: Path,
    path: Path,
    sniff_bytes: int = SNIFF_BYTES,
    *,
    known: SecretIdentities,
) -> bool:
    """True when ``path`` (under the resolved root ``base``) is a secrets file by its name, by
    the name its symlinks resolve to, by identity with one of ``known`` (the workspace's, see
    :func:`toolwire.tools.builtin._common.secret_identities`) or by its first ``sniff_bytes``
    (0: not read). Only regular files are opened (a FIFO would block)."""
    resolved = path.resolve()
    if any(is_secret_path(_relative(base, c)) for c in (path, resolved)):
        return True
    try:
        info = resolved.stat()
        if not stat.S_ISREG(info.st_mode):
            return False
        if known.holds(info):
            return True
        if sniff_bytes <= 0:
            return False
        with resolved.open("rb") as handle:
            return has_secret_content(handle.read(sniff_bytes))
    except (FileNotFoundError, NotADirectoryError):
        return False  # a file yet to be written: judged by its name alone
    except OSError:
        return True  # unreadable: nothing to show, and nothing to risk


def is_secret_named_file(path: Path, known: SecretIdentities) -> bool:
    """A file the operator names (a log, a crontab): secret by its name, by the name its
    symlinks resolve to, or as another name of one of the workspace's secrets files
    (``known``)."""
    if is_secret_name(path.name) or is_secret_name(path.resolve().name):
        return True
    return known.holds(path.stat())


def read_named_file(path: Path, max_bytes: int, known: SecretIdentities) -> str | None:
    """The first ``max_bytes`` of a file the operator names (a crontab, a routes file), as
    text; None when it is missing, unreadable, or secret by :func:`is_secret_named_file` or by
    a private key inside."""
    try:
        if not path.is_file() or is_secret_named_file(path, known):
            return None
        with path.open("rb") as handle:
            data = handle.read(max_bytes)
    except OSError:
        return None
    return None if has_secret_content(data) else data.decode("utf-8", "replace")
