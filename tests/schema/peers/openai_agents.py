"""The OpenAI Agents SDK's cases (tests/test_function_schema.py, tests/test_function_tool.py).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import enum
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from tests.schema.peers import (
    ABSENT,
    ANYWHERE,
    CANONICAL,
    CLOSED,
    DIFFERS,
    ENUM_INLINE,
    EXPLICIT_WINS,
    FIXED,
    NO_VARARGS,
    OA,
    Case,
    Session,
    got,
)
from tinytools import Injected


def oa_no_args() -> str:  # test_no_args_function
    """Takes nothing at all."""
    return "done"


def oa_sum(a: int, b: int = 5) -> int:  # test_simple_function: no summary, `Args:` first
    """
    Args:
        a: The first addend
        b: The second addend

    Returns:
        The total
    """
    got(locals())
    return a + b


def oa_varargs(x: int, *numbers: float, flag: bool = False, **options: Any) -> None:  # test_varargs_function
    got(locals())


def oa_with_session(session: Annotated[Session, Injected], a: int, b: int = 5) -> int:  # test_function_with_context
    got(locals())
    return a + b


def oa_session_after(a: int, session: Annotated[Session, Injected]) -> None:  # test_run_context_in_non_first_position
    got(locals())


class Shade(str, enum.Enum):  # test_enum_and_literal_function
    PALE = "pale"
    DEEP = "deep"
    VIVID = "vivid"


def oa_enum_and_literal(shade: Shade, letter: Literal["a", "b", "c"]) -> str:  # test_enum_and_literal_function
    got(locals())
    return letter


def oa_star_tuple(*groups: tuple[int, ...]) -> None:  # test_var_positional_tuple_annotation
    got(locals())


def oa_star_star_dict(**weights: dict[str, int]) -> None:  # test_var_keyword_dict_annotation
    got(locals())


def oa_mapping(scores: Mapping[str, int]) -> None:  # test_schema_with_mapping_raises_strict_mode_error
    got(locals())


def oa_annotated_text(a: Annotated[int, "Left operand"], b: Annotated[int, "Right operand"]) -> int:
    # test_function_uses_annotated_descriptions_without_docstring
    got(locals())
    return a + b


def oa_docstring_and_annotated(a: Annotated[int, "From Annotated, a"], b: Annotated[int, "From Annotated, b"]) -> int:
    """Adds two integers.

    Args:
        a: From the docstring.
    """
    # test_function_prefers_docstring_descriptions_over_annotated_metadata
    return a + b


def oa_summary_then_args(city: str, units: str) -> str:  # test_google_docstring_missing_blank_line_before_args
    """Look up a forecast.
    Args:
        city: Where to look.
        units: Metric or imperial.
    """
    return city


def oa_note_then_args(city: str, units: str) -> str:  # test_google_docstring_missing_blank_line_after_section_body
    """Look up a forecast.

    Note:
        Answers are cached.
    Args:
        city: Where to look.
        units: Metric or imperial.
    """
    return city


def oa_starred_google(x: int, *more: float, **extra: str) -> None:  # test_variadic_param_descriptions_preserved
    """Add to a base.

    Args:
        x: The base.
        *more: What to add.
        **extra: Options.
    """


def oa_starred_numpy(x: int, *more: float, **extra: str) -> None:  # test_variadic_param_descriptions_preserved
    """Add to a base.

    Parameters
    ----------
    x : int
        The base.
    *more : float
        What to add.
    """


def oa_starred_sphinx(x: int, *more: float, **extra: str) -> None:  # test_variadic_param_descriptions_preserved
    """Add to a base.

    :param x: The base.
    :param more: What to add.
    """


class Ledger:  # test_class_based_functions
    """Methods in every flavour, as the peer tests them."""

    def add(self, a: int, b: int = 5) -> int:
        """Add two numbers."""
        got(locals())
        return a + b

    def add_in(self, session: Annotated[Session, Injected], a: int, b: int = 5) -> int:
        got(locals())
        return a + b

    @classmethod
    def scaled(cls, a: int, b: int = 5) -> int:
        got(locals())
        return a * b

    @staticmethod
    def plain(a: int, b: int = 5) -> int:
        got(locals())
        return a - b


LEDGER = Ledger()
oa_bound_method = LEDGER.add
oa_bound_method_with_session = LEDGER.add_in
oa_classmethod = Ledger.scaled
oa_staticmethod = Ledger.plain
oa_unbound_method = Ledger.add


CASES = [
    Case(
        "oa_no_args",
        OA + "test_no_args_function",
        facts={"/properties": {}, "/required": ABSENT},
        description="Takes nothing at all.",
        call={},
        receives=None,
    ),
    Case(
        "oa_sum",
        OA + "test_simple_function",
        FIXED,
        "item 7: a docstring that opens with Args: loses every description",
        facts={
            "/properties/a/description": "The first addend",
            "/properties/b/description": "The second addend",
            "/required": ["a"],
        },
        description="",
        call={"a": 3},
        receives={"a": 3, "b": 5},
        result=8,
    ),
    Case(
        "oa_sum", OA + "test_simple_function (b given)", call={"a": 3, "b": 10}, receives={"a": 3, "b": 10}, result=13
    ),
    Case(
        "oa_sum",
        OA + "test_simple_function (not an integer)",
        call={"a": "not an integer"},
        refused="invalid_arguments",
    ),
    Case("oa_varargs", OA + "test_varargs_function", DIFFERS, NO_VARARGS, undefinable=True),
    Case(
        "oa_with_session",
        OA + "test_function_with_context",
        facts={"/properties/session": ABSENT, "/required": ["a"]},
        call={"a": 1, "b": 2},
        inject={"session": "the session"},
        receives={"session": "the session", "a": 1, "b": 2},
    ),
    Case(
        "oa_with_session",
        OA + "test_function_with_context (the model sends the context)",
        DIFFERS,
        CLOSED,
        call={"a": 1, "session": {}},
        inject={"session": "the session"},
        refused="invalid_arguments",
    ),
    Case(
        "oa_session_after",
        OA + "test_run_context_in_non_first_position_raises_value_error",
        DIFFERS,
        ANYWHERE,
        facts={"/properties/session": ABSENT},
        call={"a": 1},
        inject={"session": "s"},
        receives={"a": 1, "session": "s"},
    ),
    Case(
        "oa_enum_and_literal",
        OA + "test_enum_and_literal_function",
        DIFFERS,
        ENUM_INLINE,
        facts={
            "/properties/shade/enum": ["pale", "deep", "vivid"],
            "/properties/shade/$ref": ABSENT,
            "/properties/letter/enum": ["a", "b", "c"],
        },
        call={"shade": "pale", "letter": "a"},
        receives=lambda d: {"shade": d.Shade.PALE, "letter": "a"},
    ),
    Case(
        "oa_enum_and_literal",
        OA + "test_enum_and_literal_function (not an enum value)",
        call={"shade": "not an enum value", "letter": "a"},
        refused="invalid_arguments",
    ),
    Case(
        "oa_enum_and_literal",
        OA + "test_enum_and_literal_function (not a literal value)",
        call={"shade": "pale", "letter": "z"},
        refused="invalid_arguments",
    ),
    Case("oa_star_tuple", OA + "test_var_positional_tuple_annotation", DIFFERS, NO_VARARGS, undefinable=True),
    Case("oa_star_star_dict", OA + "test_var_keyword_dict_annotation", DIFFERS, NO_VARARGS, undefinable=True),
    Case(
        "oa_mapping",
        OA + "test_schema_with_mapping_raises_strict_mode_error",
        DIFFERS,
        CANONICAL,
        facts={"/properties/scores": {"type": "object", "additionalProperties": {"type": "integer"}}},
        call={"scores": {"x": 1}},
        receives={"scores": {"x": 1}},
    ),
    Case(
        "oa_annotated_text",
        OA + "test_function_uses_annotated_descriptions_without_docstring",
        facts={"/properties/a/description": "Left operand", "/properties/b/description": "Right operand"},
    ),
    Case(
        "oa_docstring_and_annotated",
        OA + "test_function_prefers_docstring_descriptions_over_annotated_metadata",
        DIFFERS,
        EXPLICIT_WINS,
        facts={"/properties/a/description": "From Annotated, a", "/properties/b/description": "From Annotated, b"},
        description="Adds two integers.",
    ),
    Case(
        "oa_summary_then_args",
        OA + "test_google_docstring_missing_blank_line_before_args",
        facts={
            "/properties/city/description": "Where to look.",
            "/properties/units/description": "Metric or imperial.",
        },
        description="Look up a forecast.",
    ),
    Case(
        "oa_note_then_args",
        OA + "test_google_docstring_missing_blank_line_after_section_body",
        facts={
            "/properties/city/description": "Where to look.",
            "/properties/units/description": "Metric or imperial.",
        },
    ),
    Case(
        "oa_starred_google",
        OA + "test_variadic_param_descriptions_preserved[google]",
        DIFFERS,
        NO_VARARGS,
        undefinable=True,
    ),
    Case(
        "oa_starred_numpy",
        OA + "test_variadic_param_descriptions_preserved[numpy]",
        DIFFERS,
        NO_VARARGS,
        undefinable=True,
    ),
    Case(
        "oa_starred_sphinx",
        OA + "test_variadic_param_descriptions_preserved[sphinx]",
        DIFFERS,
        NO_VARARGS,
        undefinable=True,
    ),
    Case(
        "oa_bound_method",
        OA + "test_class_based_functions (instance method)",
        facts={"/properties/self": ABSENT},
        call={"a": 1, "b": 2},
        receives={"a": 1, "b": 2},
        result=3,
    ),
    Case(
        "oa_bound_method_with_session",
        OA + "test_class_based_functions (instance method with context)",
        facts={"/properties/self": ABSENT, "/properties/session": ABSENT, "/required": ["a"]},
        call={"a": 1, "b": 2},
        inject={"session": "s"},
        receives={"session": "s", "a": 1, "b": 2},
    ),
    Case(
        "oa_classmethod",
        OA + "test_class_based_functions (class method)",
        facts={"/properties/cls": ABSENT},
        call={"a": 2, "b": 3},
        receives={"a": 2, "b": 3},
        result=6,
    ),
    Case(
        "oa_staticmethod",
        OA + "test_class_based_functions (static method)",
        call={"a": 5},
        receives={"a": 5, "b": 5},
        result=0,
    ),
    Case(
        "oa_unbound_method",
        OA + "test_class_based_functions (the function found on the class)",
        FIXED,
        "item 6: tool(D.m) showed `self` to the model as a required parameter",
        facts={"/properties/self": ABSENT, "/required": ["a"]},
    ),
]
