"""The MCP Python SDK's cases (tests/server/mcpserver/test_func_metadata.py).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

from typing import Annotated, Any

import annotated_types

from tests.schema.peers import (
    ABSENT,
    DIFFERS,
    MCP,
    TEXT_IS_TEXT,
    UNANNOTATED_IS_ANY,
    Case,
    got,
)
from tinytools import Injected


def mcp_nones(
    must_be_none: None, dumb: Annotated[None, "blah"], with_default: None = None
) -> str:  # complex_arguments_fn
    got(locals())
    return "ok"


def mcp_list_or_str(value: list[str] | str) -> str:  # complex_arguments_fn: list_str_or_str
    got(locals())
    return "ok"


def mcp_list_of_ints(values: list[int]) -> str:  # test_complex_function_runtime_arg_validation_with_json
    got(locals())
    return "ok"


def mcp_junk_metadata(x: Annotated[int, "123", 456]) -> str:  # complex_arguments_fn: an_int_annotated_with_junk
    got(locals())
    return "ok"


def mcp_gt_metadata(
    x: Annotated[int, annotated_types.Gt(1)],
) -> str:  # complex_arguments_fn: annotated_types beside Field
    got(locals())
    return "ok"


def mcp_unannotated(x, y=5):  # type: ignore[no-untyped-def]  # complex_arguments_fn: unannotated, unannotated_with_default
    got(locals())
    return "ok"


def mcp_str_or_list(str_or_list: str | list[str]) -> str:  # test_str_vs_list_str
    got(locals())
    return "ok"


def mcp_skip_names(
    keep_this: int, skip_this: Annotated[str, Injected], also_keep: float, also_skip: Annotated[bool, Injected]
) -> str:
    # test_skip_names
    got(locals())
    return "ok"


def mcp_str_and_int(a: str, b: int) -> str:  # test_str_vs_int
    got(locals())
    return a


def mcp_json_text(config: str, enabled: bool = True) -> str:  # test_str_annotation_preserves_json_string
    """Take a JSON document as text."""
    got(locals())
    return config


def mcp_reserved_names(
    model_dump: str, model_validate: int, dict: list[str], json: dict[str, Any], validate: bool, copy: float
) -> str:
    # test_basemodel_reserved_names_validation
    got(locals())
    return "ok"


mcp_lambda = lambda x, y=5: x  # noqa: E731  # test_lambda_function


CASES = [
    Case(
        "mcp_nones",
        MCP + "test_complex_function_json_schema (None parameters)",
        facts={
            "/properties/must_be_none/type": "null",
            "/properties/dumb/type": "null",
            "/properties/with_default": {"type": "null", "default": None},
            "/required": ["must_be_none", "dumb"],
        },
        call={"must_be_none": None, "dumb": None},
        receives={"must_be_none": None, "dumb": None, "with_default": None},
    ),
    Case(
        "mcp_list_or_str",
        MCP + "test_complex_function_runtime_arg_validation_non_json",
        facts={"/properties/value/anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
        call={"value": "hello"},
        receives={"value": "hello"},
    ),
    Case(
        "mcp_list_or_str",
        MCP + "test_complex_function_runtime_arg_validation_with_json",
        DIFFERS,
        TEXT_IS_TEXT,
        call={"value": '["a", "b", "c"]'},
        receives={"value": '["a", "b", "c"]'},
    ),
    Case(
        "mcp_list_of_ints",
        MCP + "test_complex_function_runtime_arg_validation_with_json (list_of_ints)",
        DIFFERS,
        TEXT_IS_TEXT,
        call={"values": "[1, 2, 3]"},
        refused="invalid_arguments",
    ),
    Case(
        "mcp_list_of_ints",
        MCP + "test_complex_function_runtime_arg_validation_non_json (list_of_ints)",
        call={"values": [1, 2, 3]},
        receives={"values": [1, 2, 3]},
    ),
    Case(
        "mcp_junk_metadata",
        MCP + "test_complex_function_json_schema (an_int_annotated_with_junk)",
        DIFFERS,
        "a plain string inside Annotated is the description; other metadata is left alone",
        facts={"/properties/x": {"type": "integer", "description": "123"}},
        call={"x": 100},
        receives={"x": 100},
    ),
    Case(
        "mcp_gt_metadata",
        MCP + "test_complex_function_json_schema (annotated_types.Gt)",
        facts={"/properties/x/exclusiveMinimum": 1},
        call={"x": 1},
        refused="invalid_arguments",
    ),
    Case(
        "mcp_unannotated",
        MCP + "test_complex_function_json_schema (unannotated)",
        DIFFERS,
        UNANNOTATED_IS_ANY,
        facts={"/properties/x": {}, "/properties/y": {"default": 5}, "/required": ["x"]},
        call={"x": "test"},
        receives={"x": "test", "y": 5},
    ),
    Case(
        "mcp_str_or_list",
        MCP + "test_str_vs_list_str",
        call={"str_or_list": '"hello"'},
        receives={"str_or_list": '"hello"'},
    ),
    Case(
        "mcp_str_or_list",
        MCP + "test_str_vs_list_str (a list)",
        call={"str_or_list": ["hello", "world"]},
        receives={"str_or_list": ["hello", "world"]},
    ),
    Case(
        "mcp_skip_names",
        MCP + "test_skip_names",
        facts={"/required": ["keep_this", "also_keep"], "/properties/skip_this": ABSENT},
        call={"keep_this": 1, "also_keep": 2.5},
        inject={"skip_this": "s", "also_skip": True},
        receives={"keep_this": 1, "skip_this": "s", "also_keep": 2.5, "also_skip": True},
    ),
    Case("mcp_str_and_int", MCP + "test_str_vs_int", call={"a": "123", "b": 123}, receives={"a": "123", "b": 123}),
    Case(
        "mcp_json_text",
        MCP + "test_str_annotation_preserves_json_string",
        call={"config": '{"database": "postgres", "port": 5432}', "enabled": True},
        receives={"config": '{"database": "postgres", "port": 5432}', "enabled": True},
    ),
    Case(
        "mcp_reserved_names",
        MCP + "test_basemodel_reserved_names_validation",
        call={
            "model_dump": "d",
            "model_validate": 42,
            "dict": ["a"],
            "json": {"k": "v"},
            "validate": True,
            "copy": 1.5,
        },
        receives={
            "model_dump": "d",
            "model_validate": 42,
            "dict": ["a"],
            "json": {"k": "v"},
            "validate": True,
            "copy": 1.5,
        },
    ),
    Case(
        "mcp_lambda",
        MCP + "test_lambda_function",
        DIFFERS,
        UNANNOTATED_IS_ANY,
        options={"name": "lam"},
        facts={"/properties": {"x": {}, "y": {"default": 5}}, "/required": ["x"]},
        call={"x": "hello"},
        result="hello",
    ),
    Case(
        "mcp_lambda",
        MCP + "test_lambda_function (missing required)",
        options={"name": "lam"},
        call={"y": "world"},
        refused="invalid_arguments",
    ),
]
