from __future__ import annotations

import pytest

from tinytools import Tool, Toolbox, ToolDefinitionError, tool


def first(x: int) -> int:
    """The first tool."""
    return x


def second(y: str) -> str:
    return y


def test_holds_tools_by_name_and_exports_schemas() -> None:
    box = Toolbox([tool(first), second])
    assert box.names == ["first", "second"]
    assert isinstance(box["second"], Tool)
    assert "first" in box and "third" not in box
    assert len(box) == 2 and [t.name for t in box] == ["first", "second"]
    assert box.schemas() == [
        {
            "name": "first",
            "description": "The first tool.",
            "input_schema": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "additionalProperties": False,
            },
        },
        {
            "name": "second",
            "description": "",
            "input_schema": {
                "type": "object",
                "properties": {"y": {"type": "string"}},
                "required": ["y"],
                "additionalProperties": False,
            },
        },
    ]


@pytest.mark.parametrize("other_name", ["first", "FIRST", "First"])
def test_duplicate_names_are_refused_naming_both(other_name: str) -> None:
    box = Toolbox([first])
    with pytest.raises(ToolDefinitionError) as info:
        box.add(tool(name=other_name)(second))
    assert "'first'" in str(info.value) and repr(other_name) in str(info.value)
