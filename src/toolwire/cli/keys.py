"""Where the command line keeps the state key, so that every command agrees.

The key that seals suspended runs lives in ``state.key`` in the user data directory (the
folder the default store lives in), or in the demo's ``--data-dir``. ``TOOLWIRE_STATE_KEY``
wins over the file. ``demo`` and ``serve`` create the file (mode 0600, in a 0700 folder) when
there is no key; ``run`` and ``runs`` only read it: without a key a run that must wait fails
with a clear message instead of waiting unsealed.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
import typer
from rich.console import Console

from toolwire.cli.show import error, safe
from toolwire.core.errors import ConfigError
from toolwire.core.private import private_dir
from toolwire.core.sealing import KEY_FILE_NAME, StateKey, ensure_key, load_key


def data_dir() -> Path:
    """The user data directory: the default store and the state key live here."""
    return Path(platformdirs.user_data_dir("toolwire"))


def key_file(folder: Path | None = None) -> Path:
    """The state key file in ``folder``, by default the user data directory."""
    return (folder or data_dir()) / KEY_FILE_NAME


def read_key(console: Console, folder: Path | None = None) -> StateKey | None:
    """The configured key, or None; an unusable key is a one-line error and exit 1."""
    try:
        return load_key(key_file(folder))
    except ConfigError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


def make_key(folder: Path | None = None) -> StateKey:
    """The configured key, or a new key file; ``ConfigError`` when neither can be had.

    The key's folder is created 0700 when missing; toolwire's own data folder is tightened to
    0700 even when it exists.
    """
    target = key_file(folder)
    try:
        private_dir(target.parent, tighten=folder is None or folder == data_dir())
    except OSError as exc:
        raise ConfigError(f"cannot create the folder {target.parent}: {exc.strerror}") from None
    return ensure_key(target)
