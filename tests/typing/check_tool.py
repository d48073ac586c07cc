"""Checked by mypy in tests/test_typing.py: @tool keeps the function's signature."""

from typing_extensions import assert_type, reveal_type

from tinytools import tool


@tool
def add(a: int, b: int = 1) -> int:
    return a + b


@tool(name="sub")
def subtract(a: int, b: int) -> int:
    return a - b


@tool
async def fetch(url: str) -> bytes:
    return url.encode()


assert_type(add(1, 2), int)
assert_type(subtract(3, b=1), int)
reveal_type(subtract)  # N: Revealed type is "tinytools.tool.Tool[[a: builtins.int, b: builtins.int], builtins.int]"
add("x")  # E: Argument 1 to "__call__" of "Tool" has incompatible type "str"; expected "int"  [arg-type]
