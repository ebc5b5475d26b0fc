"""A workspace's ``prompts`` section: checked when the workspace is loaded, each problem one
``ConfigError`` naming the prompt; a host's arguments checked when it asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.core.errors import ConfigError
from toolwire.workspace.config import load_workspace
from toolwire.workspace.prompts import PromptArgumentsError

from .documented import blocks, page, section


def loaded(tmp_path: Path, text: str) -> object:
    path = tmp_path / "workspace.toml"
    path.write_text(text)
    return load_workspace(path)


def test_prompts_load_in_file_order_with_their_arguments(tmp_path: Path) -> None:
    workspace = loaded(
        tmp_path,
        """
[prompts.second]
description = "b"
template = "{who} and {{literal}}"
arguments.who = { description = "someone", required = true, choices = ["me", "you"] }

[prompts.first]
description = "a"
template = "plain"
""",
    )
    second, first = workspace.prompts  # type: ignore[attr-defined]
    assert (second.name, first.name) == ("second", "first")
    (who,) = second.arguments
    assert (who.name, who.required, who.choices) == ("who", True, ("me", "you"))
    assert second.render({"who": "you"}) == "you and {literal}"
    with pytest.raises(PromptArgumentsError, match="one of me, you, not 'them'"):
        second.render({"who": "them"})


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('description = "d"\ntemplate = "{missing}"', "{missing} is not one of its arguments"),
        ('description = "d"\ntemplate = "{x!r}"\narguments.x = {}', "takes no format"),
        ('description = "d"\ntemplate = "{x:>4}"\narguments.x = {}', "takes no format"),
        ('description = "d"\ntemplate = "{}"', "{} is not one of its arguments"),
        ('description = "d"\ntemplate = "a } b"', "write {{ and }} for braces"),
        ('template = "t"', "description"),
        ('description = "d"\ntemplate = "t"\narguments.x = { choices = [] }', "choices"),
        ('description = "d"\ntemplate = "t"\nextra = 1', "extra"),
    ],
)
def test_a_bad_prompt_is_one_error_naming_it(tmp_path: Path, table: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        loaded(tmp_path, f"[prompts.p]\n{table}\n")
    assert said in str(raised.value) and "prompts" in str(raised.value)


def test_a_bad_prompt_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prompts\.9lives: a prompt's name"):
        loaded(tmp_path, '[prompts.9lives]\ndescription = "d"\ntemplate = "t"\n')


def test_the_documented_prompt_loads_and_renders(tmp_path: Path) -> None:
    text = section(page("workspace.md"), "Prompts for MCP hosts")
    (block,) = [b for b in blocks("toml") if b.code in text]
    workspace = loaded(tmp_path, block.code)
    (prompt,) = workspace.prompts  # type: ignore[attr-defined]
    assert prompt.render({"order_id": "3", "style": "briefly"}) == (
        "Look at order 3 and report anything unusual, briefly."
    )
