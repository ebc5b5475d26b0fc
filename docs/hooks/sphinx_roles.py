"""A Griffe extension for the API pages: the docstrings' Sphinx roles read as code.

The code's docstrings name other objects the Sphinx way (``:func:`bound_content```,
``:class:`toolwire.core.errors.ToolRefusal```); Markdown has no roles, so each becomes plain
inline code (the name as written, without a leading ``~``). Nothing else in a docstring changes.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|exc|obj|const):`~?([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role turned into inline code."""
    return _ROLE.sub(lambda m: f"`{m.group(1)}`", text)


class SphinxRoles(Extension):
    """Rewrites each object's docstring as it is loaded."""

    def on_object(self, *, obj: Any, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
