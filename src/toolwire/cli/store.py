"""Opening the run store from the command line: one option, one clear message on failure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import error, safe
from toolwire.errors import StoreError

if TYPE_CHECKING:
    from toolwire.privacy import PrivacyLevel
    from toolwire.store import RunStore

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Run store: a SQLite file, sqlite:///PATH or postgresql+psycopg://... "
        "(default: $TOOLWIRE_DB, else a file in the user data directory).",
    ),
]


def open_or_exit(console: Console, db: str | None) -> RunStore:
    """The store, or a one-line error and exit status 1."""
    from toolwire.store import RunStore

    try:
        return RunStore.open(db)
    except StoreError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


def open_or_warn(console: Console, db: str | None, privacy: PrivacyLevel) -> RunStore | None:
    """The store, or a warning and None: a command that can work without it goes on."""
    from toolwire.store import RunStore

    try:
        return RunStore.open(db, privacy=privacy)
    except StoreError as exc:
        console.print(
            Text(f"warning: {safe(str(exc), None)}; nothing is recorded", style="yellow"),
            soft_wrap=True,
        )
        return None
