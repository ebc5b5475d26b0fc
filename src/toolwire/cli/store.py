"""Opening the run store from the command line: one choice, one line on where it is.

Every command opens the store :func:`toolwire.store.engine.choose_store` picks. A store that
was asked for (``--db``, the demo's ``--data-dir``, ``$TOOLWIRE_DB``) and cannot be opened is
an error: one line on stderr and exit status 1, before anything runs. Only the implicit default
may degrade: a command that can work without it says so in a warning line and goes on, and
nothing is recorded. A command that writes says once where its runs are kept: ``serve`` and
``demo`` as they start (``announce``, on stderr), ``run`` as it ends (``location``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import error, safe
from toolwire.core.errors import StoreError

if TYPE_CHECKING:
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.store import RunStore
    from toolwire.store.engine import StoreChoice

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="STORE",
        help="Run store: a SQLite file (NAME.db), sqlite:///PATH or postgresql+psycopg://... "
        "(default: $TOOLWIRE_DB, else runs.db in the user data directory).",
    ),
]


DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        help="The folder of a `toolwire demo --data-dir DIR`: its store (DIR/runs.db) and its "
        "state key.",
    ),
]


def notices() -> Console:
    """Where errors, warnings and the store line go: stderr, so stdout stays the output."""
    return Console(stderr=True, highlight=False)


def location(store: RunStore) -> str:
    """Where ``store`` is, as a person reads it: a file's path, or its URL without password."""
    from toolwire.store.engine import where

    return safe(where(store.url), None)


def open_or_exit(console: Console, db: str | None, folder: Path | None = None) -> RunStore:
    """The store (``--db``, else ``runs.db`` in ``folder``, a ``--data-dir``, else the
    default), or a one-line error on stderr and exit status 1."""
    from toolwire.store.engine import choose_store

    store = open_store(choose_store(db, folder=folder), degrade=False)
    assert store is not None  # degrade=False exits instead of returning None
    return store


def open_or_warn(
    console: Console, db: str | None, privacy: PrivacyLevel, *, announce: bool = False
) -> RunStore | None:
    """The store, or, for the implicit default only, a warning and None; see the module.

    ``run`` says where its run was kept when it ends (``location``), so it does not announce.
    """
    from toolwire.store.engine import choose_store

    return open_store(choose_store(db), privacy, announce=announce)


def open_store(
    choice: StoreChoice,
    privacy: PrivacyLevel | None = None,
    *,
    degrade: bool = True,
    announce: bool = False,
) -> RunStore | None:
    """Open ``choice``; ``degrade`` lets the implicit default fail with a warning and None.

    ``announce`` prints where runs are kept.
    """
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.store import RunStore

    try:
        store = RunStore.open(choice.target, privacy=privacy or PrivacyLevel.METADATA)
    except StoreError as exc:
        _refused(choice, str(exc), degrade=degrade)
        return None
    if announce:
        notices().print(Text(f"runs are kept in {location(store)}", style="dim"), soft_wrap=True)
    return store


def _refused(choice: StoreChoice, why: str, *, degrade: bool) -> None:
    if choice.asked_for or not degrade:
        error(notices(), f"{choice.origin}: {safe(why, None)}")
        raise typer.Exit(1)
    notices().print(
        Text(f"warning: {choice.origin}: {safe(why, None)}; nothing is recorded", style="yellow"),
        soft_wrap=True,
    )
