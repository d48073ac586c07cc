"""The OpenAI Agents SDK's cases that need pydantic: `Field` and models.

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

from typing import Annotated

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from tests.schema.peers import (
    CLOSED,
    DIFFERS,
    EXPLICIT_WINS,
    FIELD,
    FIXED,
    OA,
    OAT,
    Case,
    got,
)


class Cell(TypedDict):  # test_nested_data_function: Foo
    a: int
    b: str


class Inner(BaseModel):  # test_nested_data_function: InnerModel
    a: int
    b: str


class Outer(BaseModel):  # test_nested_data_function: OuterModel
    inner: Inner
    cell: Cell


def oa_nested(model: Outer) -> str:  # test_nested_data_function
    got(locals())
    return f"{model.inner.a}, {model.cell['b']}"


def oa_nested_documented(model: Outer, some_flag: int = 0) -> str:  # test_complex_args_and_docs_function
    """
    Take a model and a flag, and describe them.

    Args:
        model: A model with an inner and a cell field
        some_flag: An optional flag, 0 by default

    Returns:
        A line of text
    """
    got(locals())
    return "ok"


def oa_field_required(
    my_number: int = Field(..., gt=10, le=100),
) -> int:  # test_function_with_field_required_constraints
    got(locals())
    return my_number * 2


def oa_field_optional(required_param: str, optional_param: float = Field(default=5.0, ge=0.0)) -> str:
    # test_function_with_field_optional_with_default
    got(locals())
    return required_param


def oa_field_and_docstring(
    with_field: int = Field(..., description="Field description"),
    with_both: str = Field(default="hello", description="Field description"),
) -> str:
    """
    Both a Field and a docstring describe these.

    Args:
        with_field: Docstring description
        with_both: Docstring description
    """
    # test_function_with_field_description_merge
    return with_both


def oa_field_description_only(
    described: int = Field(..., description="Field description only"),
    undescribed: str = Field(default="hello"),
) -> str:  # test_function_with_field_description_only
    got(locals())
    return undescribed


def oa_field_string(name: str = Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")) -> str:
    # test_function_with_field_string_constraints
    got(locals())
    return name


def oa_field_many(
    score: int = Field(..., ge=0, le=100, description="Score from 0 to 100"),
    name: str = Field(default="Unknown", min_length=1, max_length=50),
    factor: float = Field(default=1.0, gt=0.0, description="Positive multiplier"),
) -> str:  # test_function_with_field_multiple_constraints
    got(locals())
    return name


def oa_annotated_field_required(my_number: Annotated[int, Field(..., gt=10, le=100)]) -> int:
    # test_function_with_annotated_field_required_constraints
    got(locals())
    return my_number


def oa_annotated_field_optional(
    required_param: str, optional_param: Annotated[float, Field(default=5.0, ge=0.0)]
) -> str:
    # test_function_with_annotated_field_optional_with_default
    got(locals())
    return required_param


def oa_annotated_field_string(
    name: Annotated[str, Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")],
) -> str:
    # test_function_with_annotated_field_string_constraints
    got(locals())
    return name


def oa_annotated_field_many(
    score: Annotated[int, Field(..., ge=0, le=100, description="Score from 0 to 100")],
    name: Annotated[str, Field(default="Unknown", min_length=1, max_length=50)],
    factor: Annotated[float, Field(default=1.0, gt=0.0, description="Positive multiplier")],
) -> str:  # test_function_with_annotated_field_multiple_constraints
    got(locals())
    return name


# --- OpenAI Agents SDK: tests/test_function_tool.py ---


class Order(BaseModel):  # test_complex_args_function: Foo
    a: int
    b: int = 5


class Note(BaseModel):  # test_complex_args_function: Bar
    x: str
    y: int = 10


def oa_two_models(order: Order, note: Note, baz: str = "hello") -> str:  # test_complex_args_function
    got(locals())
    return baz


CASES = [
    Case(
        "oa_nested",
        OA + "test_nested_data_function",
        facts={"/properties/model/$ref": "#/$defs/Outer"},
        call={"model": {"inner": {"a": 1, "b": "hello"}, "cell": {"a": 2, "b": "world"}}},
        receives=lambda d: {"model": d.Outer(inner=d.Inner(a=1, b="hello"), cell={"a": 2, "b": "world"})},
        result="1, world",
    ),
    Case(
        "oa_nested",
        OA + "test_nested_data_function (an extra key)",
        DIFFERS,
        CLOSED,
        call={"model": {"inner": {"a": 1, "b": "x", "c": 0}, "cell": {"a": 2, "b": "y"}}},
        refused="invalid_arguments",
    ),
    Case(
        "oa_nested_documented",
        OA + "test_complex_args_and_docs_function",
        facts={
            "/properties/model/description": "A model with an inner and a cell field",
            "/properties/some_flag/description": "An optional flag, 0 by default",
            "/required": ["model"],
        },
        description="Take a model and a flag, and describe them.",
    ),
    Case(
        "oa_nested_documented",
        OA + "test_complex_args_and_docs_function (some_flag not an int)",
        call={"model": {"inner": {"a": 1, "b": "x"}, "cell": {"a": 2, "b": "y"}}, "some_flag": "not an int"},
        refused="invalid_arguments",
    ),
    Case(
        "oa_field_required",
        OA + "test_function_with_field_required_constraints",
        FIXED,
        FIELD,
        facts={
            "/properties/my_number": {"type": "integer", "exclusiveMinimum": 10, "maximum": 100},
            "/required": ["my_number"],
        },
        call={"my_number": 50},
        receives={"my_number": 50},
        result=100,
    ),
    Case(
        "oa_field_required",
        OA + "test_function_with_field_required_constraints (too small)",
        FIXED,
        FIELD,
        call={"my_number": 5},
        refused="invalid_arguments",
    ),
    Case(
        "oa_field_optional",
        OA + "test_function_with_field_optional_with_default",
        FIXED,
        FIELD,
        facts={"/properties/optional_param": {"type": "number", "minimum": 0.0, "default": 5.0}},
        call={"required_param": "test"},
        receives={"required_param": "test", "optional_param": 5.0},
    ),
    Case(
        "oa_field_optional",
        OA + "test_function_with_field_optional_with_default (negative)",
        FIXED,
        FIELD,
        call={"required_param": "test", "optional_param": -1.0},
        refused="invalid_arguments",
    ),
    Case(
        "oa_field_and_docstring",
        OA + "test_function_with_field_description_merge",
        DIFFERS,
        EXPLICIT_WINS,
        facts={
            "/properties/with_field/description": "Field description",
            "/properties/with_both/description": "Field description",
            "/required": ["with_field"],
        },
    ),
    Case(
        "oa_field_description_only",
        OA + "test_function_with_field_description_only",
        FIXED,
        FIELD,
        facts={
            "/properties/described/description": "Field description only",
            "/properties/undescribed": {"type": "string", "default": "hello"},
        },
        call={"described": 1},
        receives={"described": 1, "undescribed": "hello"},
    ),
    Case(
        "oa_field_string",
        OA + "test_function_with_field_string_constraints",
        FIXED,
        FIELD,
        facts={"/properties/name": {"type": "string", "minLength": 3, "maxLength": 20, "pattern": "^[A-Za-z]+$"}},
        call={"name": "Alice"},
        receives={"name": "Alice"},
    ),
    Case(
        "oa_field_string",
        OA + "test_function_with_field_string_constraints (pattern)",
        FIXED,
        FIELD,
        call={"name": "Alice123"},
        refused="invalid_arguments",
    ),
    Case(
        "oa_field_many",
        OA + "test_function_with_field_multiple_constraints",
        FIXED,
        FIELD,
        facts={
            "/properties/score/maximum": 100,
            "/properties/name/default": "Unknown",
            "/properties/factor/exclusiveMinimum": 0.0,
            "/properties/factor/description": "Positive multiplier",
        },
        call={"score": 85},
        receives={"score": 85, "name": "Unknown", "factor": 1.0},
    ),
    Case(
        "oa_field_many",
        OA + "test_function_with_field_multiple_constraints (empty name)",
        FIXED,
        FIELD,
        call={"score": 50, "name": ""},
        refused="invalid_arguments",
    ),
    Case(
        "oa_annotated_field_required",
        OA + "test_function_with_annotated_field_required_constraints",
        FIXED,
        FIELD,
        facts={"/properties/my_number": {"type": "integer", "exclusiveMinimum": 10, "maximum": 100}},
        call={"my_number": 150},
        refused="invalid_arguments",
    ),
    Case(
        "oa_annotated_field_optional",
        OA + "test_function_with_annotated_field_optional_with_default",
        FIXED,
        FIELD,
        facts={"/properties/optional_param/default": 5.0, "/required": ["required_param"]},
        call={"required_param": "test"},
        receives={"required_param": "test", "optional_param": 5.0},
    ),
    Case(
        "oa_annotated_field_string",
        OA + "test_function_with_annotated_field_string_constraints",
        FIXED,
        FIELD,
        facts={"/properties/name/minLength": 3},
        call={"name": "Al"},
        refused="invalid_arguments",
    ),
    Case(
        "oa_annotated_field_many",
        OA + "test_function_with_annotated_field_multiple_constraints",
        FIXED,
        FIELD,
        facts={"/properties/score/description": "Score from 0 to 100", "/required": ["score"]},
        call={"score": 90, "name": "Alice", "factor": 1.5},
        receives={"score": 90, "name": "Alice", "factor": 1.5},
    ),
    Case(
        "oa_two_models",
        OAT + "test_complex_args_function",
        facts={"/required": ["order", "note"], "/properties/baz/default": "hello"},
        call={"order": {"a": 1}, "note": {"x": "t"}},
        receives=lambda d: {"order": d.Order(a=1), "note": d.Note(x="t"), "baz": "hello"},
        result="hello",
    ),
]
