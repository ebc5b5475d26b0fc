"""The package's layers: every import inside toolwire goes to its own layer or a lower one.

The layers, bottom to top, are the packages at the root of ``src/toolwire``; the root holds
nothing else but the façade (``__init__.py``), ``__main__.py`` and ``py.typed``. Each layer's
``__init__.py`` says what it is and what it may import; this test holds the order once.

The import graph is read from the source (``ast``), so it counts every import, those inside
functions (the lazy ones) included; only those under ``if TYPE_CHECKING:`` are left out, as
they never run. The façade and ``__main__`` sit above every layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import toolwire

LAYERS = (
    "core",  # typed values and bounds: errors, text, messages, results, trust, statuses, seals
    "providers",  # model adapters
    "workspace",  # what the built-in tools work on
    "tools",  # the tool contract, registry, policy gate and built-in tools
    "policy",  # a run's options, prices, trace, privacy levels and charter
    "loop",  # the loop, its seam and its resumable state
    "telemetry",  # spans and metrics of runs
    "runs",  # a run's lifecycle: runtime, recorder, resume, held calls
    "store",  # the audit store
    "mcp",  # the Model Context Protocol, both ways
    "queue",  # queued runs and their workers
    "inspector",  # the web playground
    "demo",  # the demo workspace
    "cli",  # the command line
)
ROOT_FILES = {"__init__.py", "__main__.py", "py.typed"}
PACKAGE = Path(toolwire.__file__).parent


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """Every toolwire module ``tree`` imports, with its line, except under TYPE_CHECKING."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and type_checking(child):
                for other in child.orelse:
                    visit_node(other)
                continue
            visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "toolwire":  # from toolwire import x: x may be a subpackage
                found.extend((f"toolwire.{alias.name}", node.lineno) for alias in node.names)
            else:
                found.append((target, node.lineno))
        visit(node)

    visit(tree)
    return [(name, line) for name, line in found if name.split(".")[0] == "toolwire"]


def layer_of(module: str) -> str | None:
    """The layer ``module`` belongs to; None for the façade and ``__main__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def upward_imports(package: Path) -> list[str]:
    """Each import from a layer to a higher one, as ``module:line -> module``."""
    rank = {layer: index for index, layer in enumerate(LAYERS)}
    upward: list[str] = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        source = layer_of(module)
        if source is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, line in imports_of(tree, module, path.name == "__init__.py"):
            reached = layer_of(target)
            if reached is None and target not in {"toolwire"}:
                upward.append(f"{module}:{line} -> {target} (no layer)")
            elif reached is not None and rank[reached] > rank[source]:
                upward.append(f"{module}:{line} -> {target}")
    return upward


def test_no_import_goes_up_a_layer() -> None:
    assert upward_imports(PACKAGE) == []


def test_the_root_holds_only_the_facade_and_the_layers() -> None:
    entries = {entry.name for entry in PACKAGE.iterdir() if entry.name != "__pycache__"}
    assert entries == ROOT_FILES | set(LAYERS)
    for layer in LAYERS:
        assert (PACKAGE / layer / "__init__.py").is_file(), layer


def test_every_layer_says_what_it_may_import() -> None:
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text()))
        assert doc is not None and "May import" in doc, layer


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from toolwire.runs.runtime import Runtime\n",
            ["toolwire.loop.seam:1 -> toolwire.runs.runtime"],
        ),
        (
            "def late():\n    import toolwire.cli\n",
            ["toolwire.loop.seam:2 -> toolwire.cli"],
        ),
        ("from toolwire import store\n", ["toolwire.loop.seam:1 -> toolwire.store"]),
        ("from ..runs import held\n", ["toolwire.loop.seam:1 -> toolwire.runs"]),
        ("from toolwire.core import errors\nfrom . import turn\n", []),
        (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from toolwire.runs import x\n",
            [],
        ),
    ],
)
def test_an_upward_import_is_found(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The check can fail: one upward import in a copy of a layer is reported, with its line."""
    package = tmp_path / "toolwire"
    (package / "loop").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "loop" / "__init__.py").write_text("")
    (package / "loop" / "seam.py").write_text(source)
    assert upward_imports(package) == expected
