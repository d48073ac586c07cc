"""LangChain core's cases (libs/core/tests/unit_tests/test_tools.py).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import datetime
import enum
import functools
from typing import Annotated, Any, TypedDict

from tests.schema.peers import (
    ABSENT,
    ALWAYS_PARSED,
    CLOSED,
    DIFFERS,
    FIXED,
    LC,
    LENIENT,
    NO_FLATTENING,
    PARAGRAPHS,
    Case,
    got,
)
from tinytools import Injected


def lc_search(query: str) -> str:  # test_unnamed_decorator
    """Search the catalogue for the query."""
    got(locals())
    return "found"


def lc_keyword_only(
    *,
    arg1: int,
    arg2: bool,
    arg3: dict | None = None,  # type: ignore[type-arg]
) -> str:  # test_decorated_function_schema_equivalent
    """Echo the arguments."""
    got(locals())
    return "ok"


def lc_docstring(bar: int, baz: str) -> str:  # test_structured_tool_from_function_docstring
    """Docstring.

    Args:
        bar: the bar value
        baz: the baz value
    """
    return baz


def lc_docstring_types(bar: int, baz: list[str]) -> str:  # test_structured_tool_from_function_docstring_complex_args
    """Docstring.

    Args:
        bar: int
        baz: list[str]
    """
    got(locals())
    return "ok"


def lc_optional_defaults(bar: str, baz: int | None = 3, buzz: str | None = "buzz") -> dict:  # type: ignore[type-arg]  # test_tool_invoke_optional_args
    """The foo."""
    got(locals())
    return {"bar": bar, "baz": baz, "buzz": buzz}


def lc_summary_and_body(bar: str, baz: int) -> str:  # test_docstring_parsing: multi-line description
    """The foo.

    Additional description here.

    Args:
        bar: The bar.
        baz: The baz.

    Returns:
        description of returned value.
    """
    return bar


def lc_single_arg(bar: str) -> str:  # test_docstring_parsing: single argument
    """The foo.

    Args:
        bar: The bar.
    """
    return bar


def lc_no_params() -> str:  # test_tool_arg_descriptions: parameterless tool
    """The foo."""
    return "bar"


def lc_with_callbacks(bar: str, baz: int, callbacks: Annotated[object | None, Injected] = None) -> str:
    """The foo.

    Args:
        bar: The bar.
        baz: The baz.
    """
    # test_tool_arg_descriptions: a run_manager parameter does not disturb parsing
    got(locals())
    return bar


def lc_no_blank_line(bar: str, baz: int) -> str:  # test_tool_invalid_docstrings: foo4
    """The foo.
    Args:
        bar: The bar.
        baz: The baz.
    """
    return bar


def lc_summary_only(bar: str, baz: int) -> str:  # test_tool_invalid_docstrings: foo3
    """The foo."""
    return bar


def lc_unknown_docstring_args(bar: str, baz: int) -> str:  # test_tool_invalid_docstrings: foo5
    """The foo.

    Args:
        banana: The bar.
        monkey: The baz.
    """
    return bar


def lc_annotated_descriptions(bar: Annotated[str, "this is the bar"], baz: Annotated[int, "this is the baz"]) -> str:
    """The foo.

    Returns:
        The bar only.
    """
    # test_tool_annotated_descriptions
    return bar


def lc_injected(x: int, y: Annotated[str, Injected]) -> str:  # test_tool_injected_arg
    """Foo.

    Args:
        x: abc
        y: 123
    """
    got(locals())
    return y


class Pair(TypedDict):  # test_convert_from_runnable_dict
    a: int
    b: list[int]


def lc_typed_dict_argument(x: Pair) -> str:  # test_convert_from_runnable_dict
    got(locals())
    return str(x["a"] * max(x["b"]))


class Flavour(enum.Enum):  # test_structured_tool_types_parsed
    A = "a"
    B = "b"


def lc_enum_argument(flavour: Flavour) -> None:  # test_structured_tool_types_parsed
    got(locals())


def _lc_greet(greeting: str, name: str, punctuation: str = "!") -> str:
    got(locals())
    return f"{greeting}, {name}{punctuation}"


lc_partial_positional = functools.partial(_lc_greet, "Hello")  # test_tool_from_function_with_partial (shape)


def lc_any_argument(bar: Any) -> Any:  # test_tool_pass_config: `bar: Any`
    got(locals())
    return bar


def lc_datetime_union(arg1: int, arg2: float | datetime.datetime, opt_arg: dict | None = None) -> str:  # type: ignore[type-arg]
    # test_structured_args_decorator_no_infer_schema (the signature, with a schema inferred)
    got(locals())
    return "ok"


CASES = [
    Case(
        "lc_search",
        LC + "test_unnamed_decorator",
        description="Search the catalogue for the query.",
        call={"query": "test"},
        receives={"query": "test"},
        result="found",
    ),
    Case(
        "lc_keyword_only",
        LC + "test_decorated_function_schema_equivalent",
        facts={"/required": ["arg1", "arg2"], "/properties/arg3/default": None},
        call={"arg1": 1, "arg2": True, "arg3": {"foo": "bar"}},
        receives={"arg1": 1, "arg2": True, "arg3": {"foo": "bar"}},
    ),
    Case(
        "lc_docstring",
        LC + "test_structured_tool_from_function_docstring",
        DIFFERS,
        ALWAYS_PARSED,
        facts={"/properties/bar/description": "the bar value"},
        description="Docstring.",
    ),
    Case(
        "lc_docstring_types",
        LC + "test_structured_tool_from_function_docstring_complex_args",
        facts={"/properties/baz/type": "array", "/properties/baz/items": {"type": "string"}},
        call={"bar": 1, "baz": ["a"]},
        receives={"bar": 1, "baz": ["a"]},
    ),
    Case(
        "lc_optional_defaults",
        LC + "test_tool_invoke_optional_args (not required)",
        call={"bar": "bar"},
        receives={"bar": "bar", "baz": 3, "buzz": "buzz"},
        result={"bar": "bar", "baz": 3, "buzz": "buzz"},
    ),
    Case(
        "lc_optional_defaults",
        LC + "test_tool_invoke_optional_args (overwritten)",
        call={"bar": "bar", "baz": 4, "buzz": "not-buzz"},
        receives={"bar": "bar", "baz": 4, "buzz": "not-buzz"},
    ),
    Case("lc_optional_defaults", LC + "test_tool_invoke_optional_args (missing)", call={}, refused="invalid_arguments"),
    Case(
        "lc_optional_defaults",
        LC + "test_tool_invoke_optional_args (wrong type)",
        call={"bar": "bar", "baz": "not-an-int"},
        refused="invalid_arguments",
    ),
    Case(
        "lc_optional_defaults",
        LC + "test_tool_invoke_optional_args (None passed)",
        call={"bar": "bar", "baz": None},
        receives={"bar": "bar", "baz": None, "buzz": "buzz"},
    ),
    Case(
        "lc_summary_and_body",
        LC + "test_docstring_parsing (multi-line description)",
        DIFFERS,
        PARAGRAPHS,
        facts={"/properties/bar/description": "The bar.", "/properties/baz/description": "The baz."},
        description="The foo.\n\nAdditional description here.",
    ),
    Case(
        "lc_single_arg",
        LC + "test_docstring_parsing (single argument)",
        facts={"/properties": {"bar": {"type": "string", "description": "The bar."}}},
        description="The foo.",
    ),
    Case(
        "lc_no_params",
        LC + "test_tool_arg_descriptions (parameterless)",
        description="The foo.",
        facts={"/properties": {}},
    ),
    Case(
        "lc_with_callbacks",
        LC + "test_tool_arg_descriptions (run_manager)",
        facts={"/properties/callbacks": ABSENT, "/properties/bar/description": "The bar."},
        call={"bar": "b", "baz": 1},
        receives={"bar": "b", "baz": 1, "callbacks": None},
    ),
    Case(
        "lc_no_blank_line",
        LC + "test_tool_invalid_docstrings (foo4)",
        DIFFERS,
        LENIENT,
        facts={"/properties/bar/description": "The bar."},
        description="The foo.",
    ),
    Case(
        "lc_summary_only",
        LC + "test_tool_invalid_docstrings (foo3)",
        DIFFERS,
        LENIENT,
        facts={"/properties/bar": {"type": "string"}},
        description="The foo.",
    ),
    Case(
        "lc_unknown_docstring_args",
        LC + "test_tool_invalid_docstrings (foo5)",
        DIFFERS,
        LENIENT,
        facts={"/properties/bar": {"type": "string"}, "/properties/banana": ABSENT},
    ),
    Case(
        "lc_annotated_descriptions",
        LC + "test_tool_annotated_descriptions",
        facts={"/properties/bar/description": "this is the bar", "/properties/baz/description": "this is the baz"},
    ),
    Case(
        "lc_injected",
        LC + "test_tool_injected_arg",
        facts={"/properties": {"x": {"type": "integer", "description": "abc"}}},
        call={"x": 5},
        inject={"y": "bar"},
        receives={"x": 5, "y": "bar"},
        result="bar",
    ),
    Case(
        "lc_injected",
        LC + "test_tool_injected_arg (the caller sends y)",
        DIFFERS,
        CLOSED,
        call={"x": 5, "y": "bar"},
        inject={"y": "bar"},
        refused="invalid_arguments",
    ),
    Case(
        "lc_typed_dict_argument",
        LC + "test_convert_from_runnable_dict",
        DIFFERS,
        NO_FLATTENING,
        facts={"/properties/x/$ref": "#/$defs/Pair", "/$defs/Pair/required": ["a", "b"]},
        call={"x": {"a": 3, "b": [1, 2]}},
        receives={"x": {"a": 3, "b": [1, 2]}},
        result="6",
    ),
    Case(
        "lc_enum_argument",
        LC + "test_structured_tool_types_parsed (enum)",
        call={"flavour": "a"},
        receives=lambda d: {"flavour": d.Flavour.A},
    ),
    Case(
        "lc_partial_positional",
        LC + "partial (a positional argument bound)",
        FIXED,
        "item 2: a partial's bound arguments are hidden from the schema",
        facts={"/properties/greeting": ABSENT, "/required": ["name"]},
        call={"name": "Ada"},
        receives={"greeting": "Hello", "name": "Ada", "punctuation": "!"},
        result="Hello, Ada!",
    ),
    Case(
        "lc_any_argument",
        LC + "test_tool_pass_config (bar: Any)",
        facts={"/properties/bar": {}},
        call={"bar": "baz"},
        receives={"bar": "baz"},
        result="baz",
    ),
    Case(
        "lc_datetime_union",
        LC + "test_structured_args_decorator_no_infer_schema",
        facts={"/properties/arg2/anyOf": [{"type": "number"}, {"type": "string", "format": "date-time"}]},
        call={"arg1": 1, "arg2": 0.001, "opt_arg": {"foo": "bar"}},
        receives={"arg1": 1, "arg2": 0.001, "opt_arg": {"foo": "bar"}},
    ),
    Case(
        "lc_datetime_union",
        LC + "test_structured_args_decorator_no_infer_schema (a date-time)",
        call={"arg1": 1, "arg2": "2024-01-02T03:04:05"},
        receives={"arg1": 1, "arg2": datetime.datetime(2024, 1, 2, 3, 4, 5), "opt_arg": None},
    ),
]
