"""pydantic-ai's cases (tests/test_tools.py, tests/test_function_schema.py).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import functools
from typing import TypedDict

from tests.schema.peers import (
    ABSENT,
    DIFFERS,
    FIXED,
    NO_VARARGS,
    PA,
    PAF,
    RETURNS_ELSEWHERE,
    Case,
    got,
)
from tinytools import Invocation


def pa_google(foo: int, bar: str) -> str:  # test_docstring_google
    """Do a good deal of foobar.

    Args:
        foo: The foo value.
        bar: The bar value.
    """
    return bar


def pa_sphinx(foo: int, /) -> str:  # test_docstring_sphinx: positional-only
    """Sphinx flavoured.

    :param foo: The foo value.
    """
    got(locals())
    return str(foo)


def pa_numpy(*, foo: int, bar: str) -> str:  # test_docstring_numpy: keyword-only
    """NumPy flavoured.

    Parameters
    ----------
    foo : int
        The foo value.
    bar : str
        The bar value.
    """
    got(locals())
    return bar


def pa_google_returns(x: int) -> str:  # test_google_style_with_returns
    """Turn a number into text.

    Args:
        x: The number.

    Returns:
        str: The number as text.
    """
    return str(x)


def pa_sphinx_returns(x: int) -> str:  # test_sphinx_style_with_returns
    """Turn a number into text.

    :param x: The number.
    :rtype: str
    :return: The number as text.
    """
    return str(x)


def pa_numpy_returns(x: int) -> str:  # test_numpy_style_with_returns
    """Turn a number into text.

    Parameters
    ----------
    x : int
        The number.

    Returns
    -------
    str
        The number as text.
    """
    return str(x)


def pa_only_returns() -> str:  # test_only_returns_type
    """
    Returns:
        str: Some text.
    """
    return "text"


def pa_kwargs_only(**counts: int) -> None:  # test_docstring_unknown
    """Count things."""


def pa_required_keyword(*, a: int = 1, b: int) -> int:  # test_json_schema_required_parameters
    got(locals())
    return a * b


def pa_context_then_defaults(
    invocation: Invocation, a: int, b: int = 2
) -> int:  # test_call_tool_without_unrequired_parameters
    got({"a": a, "b": b})
    return a + b


def pa_nothing() -> None:  # test_call_tool_without_unrequired_parameters: no_args_tool
    got(locals())


class Scores(TypedDict):  # test_tool_parameters_with_attribute_docstrings
    first: int
    """The first score"""
    second: int
    """The second score"""


def pa_attribute_docstrings(data: Scores) -> int:  # test_tool_parameters_with_attribute_docstrings
    got(locals())
    return data["first"]


def pa_var_positional(r0: int, *values: int) -> None:  # test_positional_or_keyword_with_var_args
    got(locals())


def _pa_three(x: int, y: str, z: float) -> str:
    got(locals())
    return y


pa_partial_keyword = functools.partial(_pa_three, z=3.5)  # test_function_schema.py::test_partial_function_without_ctx


class Multiplier:  # test_function_schema.py::test_callable_class_without_ctx (and FastMCP test_callable_object_sync)
    """Multiply by a fixed factor."""

    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, x: int) -> int:
        got(locals())
        return x * self.factor


pa_callable_object = Multiplier(3)


def pa_unannotated(first, second):  # type: ignore[no-untyped-def]  # test_function_no_annotations
    got(locals())


pa_lambda = lambda a, b: a  # noqa: E731  # test_lambda_with_ctx


def pa_wrong_context_type(ctx: str, x: int) -> None:  # test_function_wrong_annotation_type
    got(locals())


CASES = [
    Case(
        "pa_google",
        PA + "test_docstring_google",
        facts={
            "/properties/foo": {"type": "integer", "description": "The foo value."},
            "/properties/bar": {"type": "string", "description": "The bar value."},
            "/required": ["foo", "bar"],
            "/additionalProperties": False,
        },
        description="Do a good deal of foobar.",
    ),
    Case(
        "pa_sphinx",
        PA + "test_docstring_sphinx",
        facts={"/properties/foo/description": "The foo value."},
        description="Sphinx flavoured.",
        call={"foo": 4},
        receives={"foo": 4},
        result="4",
    ),
    Case(
        "pa_numpy",
        PA + "test_docstring_numpy",
        facts={"/properties/foo/description": "The foo value.", "/properties/bar/description": "The bar value."},
        description="NumPy flavoured.",
        call={"foo": 1, "bar": "x"},
        receives={"foo": 1, "bar": "x"},
    ),
    Case(
        "pa_google_returns",
        PA + "test_google_style_with_returns",
        DIFFERS,
        RETURNS_ELSEWHERE,
        facts={"/properties/x/description": "The number."},
        description="Turn a number into text.",
        output={"": {"type": "string"}},
    ),
    Case(
        "pa_sphinx_returns",
        PA + "test_sphinx_style_with_returns",
        DIFFERS,
        RETURNS_ELSEWHERE,
        facts={"/properties/x/description": "The number."},
        description="Turn a number into text.",
    ),
    Case(
        "pa_numpy_returns",
        PA + "test_numpy_style_with_returns",
        DIFFERS,
        RETURNS_ELSEWHERE,
        facts={"/properties/x/description": "The number."},
        description="Turn a number into text.",
    ),
    Case(
        "pa_only_returns",
        PA + "test_only_returns_type",
        DIFFERS,
        RETURNS_ELSEWHERE,
        facts={"/properties": {}, "/additionalProperties": False},
        description="",
    ),
    Case("pa_kwargs_only", PA + "test_docstring_unknown", DIFFERS, NO_VARARGS, undefinable=True),
    Case(
        "pa_required_keyword",
        PA + "test_json_schema_required_parameters",
        facts={"/properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "integer"}}, "/required": ["b"]},
        call={"b": 17},
        receives={"a": 1, "b": 17},
        result=17,
    ),
    Case(
        "pa_required_keyword",
        PA + "test_call_tool_without_unrequired_parameters (both given)",
        call={"a": 4, "b": 17},
        receives={"a": 4, "b": 17},
        result=68,
    ),
    Case(
        "pa_context_then_defaults",
        PA + "test_call_tool_without_unrequired_parameters",
        facts={"/properties/invocation": ABSENT},
        call={"a": 13},
        receives={"a": 13, "b": 2},
        result=15,
    ),
    Case(
        "pa_context_then_defaults",
        PA + "test_call_tool_without_unrequired_parameters (b given)",
        call={"a": 13, "b": 4},
        receives={"a": 13, "b": 4},
        result=17,
    ),
    Case(
        "pa_nothing",
        PA + "test_call_tool_without_unrequired_parameters (no_args_tool, empty text)",
        DIFFERS,
        "arguments are one JSON object; empty text is malformed, never guessed to be {}",
        call="",
        refused="malformed_arguments",
    ),
    Case("pa_nothing", PA + "test_call_tool_without_unrequired_parameters (no_args_tool, {})", call={}, receives={}),
    Case(
        "pa_attribute_docstrings",
        PA + "test_tool_parameters_with_attribute_docstrings",
        FIXED,
        "item 8: attribute docstrings become property descriptions",
        facts={
            "/$defs/Scores/properties/first/description": "The first score",
            "/$defs/Scores/properties/second/description": "The second score",
            "/properties/data/$ref": "#/$defs/Scores",
        },
        call={"data": {"first": 1, "second": 2}},
        receives={"data": {"first": 1, "second": 2}},
        result=1,
    ),
    Case("pa_var_positional", PA + "test_positional_or_keyword_with_var_args", DIFFERS, NO_VARARGS, undefinable=True),
    Case(
        "pa_partial_keyword",
        PAF + "test_partial_function_without_ctx",
        FIXED,
        "item 2: a partial's bound arguments are hidden from the schema",
        facts={"/properties/z": ABSENT, "/required": ["x", "y"]},
        call={"x": 1, "y": "b"},
        receives={"x": 1, "y": "b", "z": 3.5},
        result="b",
    ),
    Case(
        "pa_callable_object",
        PAF + "test_callable_class_without_ctx",
        FIXED,
        "item 2: a callable object becomes a tool",
        facts={"/properties/self": ABSENT, "/required": ["x"]},
        description="Multiply by a fixed factor.",
        call={"x": 5},
        receives={"x": 5},
        result=15,
    ),
    Case(
        "pa_unannotated",
        PAF + "test_function_no_annotations",
        facts={"/properties": {"first": {}, "second": {}}},
        call={"first": [1], "second": None},
        receives={"first": [1], "second": None},
    ),
    Case(
        "pa_lambda",
        PAF + "test_lambda_with_ctx",
        options={"name": "pa_lambda"},
        facts={"/properties": {"a": {}, "b": {}}},
        call={"a": 1, "b": 2},
        result=1,
    ),
    Case(
        "pa_wrong_context_type",
        PAF + "test_function_wrong_annotation_type",
        facts={"/properties/ctx": {"type": "string"}, "/required": ["ctx", "x"]},
    ),
]
