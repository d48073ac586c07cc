"""pydantic-ai's, LangChain's and FastMCP's cases that need pydantic.

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from tests.schema.peers import (
    DIFFERS,
    ENFORCED,
    FIELD,
    FIXED,
    FMP,
    FMT,
    LC,
    NO_FLATTENING,
    PA,
    Case,
    got,
)


async def pa_no_summary(foo: int, bar: Annotated[str, Field(description="from fields")]) -> str:
    """
    Args:
        foo: The foo value.
        bar: The bar value.
    """
    # test_docstring_google_no_body
    return bar


class Thing(BaseModel):  # Foo
    x: int
    y: str


def pa_just_model(model: Thing) -> str:  # test_takes_just_model
    got(locals())
    return model.y


def pa_model_and_int(model: Thing, z: int) -> str:  # test_takes_model_and_int
    got(locals())
    return model.y


def pa_returns_model(x: int) -> Thing:  # test_return_pydantic_model
    return Thing(x=x, y="a")


def pa_with_json_schema(
    x: Annotated[str | None, WithJsonSchema({"type": "string"})] = None,
) -> None:  # test_schema_generator
    got(locals())


# --- LangChain core: libs/core/tests/unit_tests/test_tools.py ---


class Basket(BaseModel):  # test_structured_tool_types_parsed: SomeBaseModel
    fruit: str


def lc_model_argument(basket: Basket) -> None:  # test_structured_tool_types_parsed
    got(locals())


def lc_field_descriptions(
    topic: Annotated[str, Field(description="The research topic")],
    depth: Annotated[int, Field(description="Search depth level")] = 3,
) -> str:
    """A tool for research."""
    # test_tool_field_description_preserved
    got(locals())
    return topic


class Schedule(BaseModel):  # test_convert_from_runnable_dict: GSchema
    """Apply a function to an integer and a list of integers."""

    a: int = Field(..., description="Integer")
    b: list[int] = Field(..., description="List of ints")


def lc_described_model(schedule: Schedule) -> None:  # test_convert_from_runnable_dict
    got(locals())


# --- FastMCP ---


class UserInput(BaseModel):  # tests/tools/tool/test_tool.py::test_pydantic_model_function
    name: str
    age: int


def fm_create_user(user: UserInput, flag: bool) -> dict:  # type: ignore[type-arg]  # test_pydantic_model_function
    """Create a new user."""
    got(locals())
    return {"id": 1, **user.model_dump()}


def fm_greet_annotated(
    name: Annotated[str, Field(description="The name to greet")],
    title: Annotated[str, Field(description="Optional title", default="")],
) -> str:
    """A greeting tool"""
    # test_parameters.py::test_parameter_descriptions_with_field_annotations
    got(locals())
    return name


def fm_greet_defaults(
    name: str = Field(description="The name to greet"),
    title: str = Field(description="Optional title", default=""),
) -> str:
    """A greeting tool"""
    # test_parameters.py::test_parameter_descriptions_with_field_defaults
    got(locals())
    return name


def fm_annotated_ge(x: Annotated[int, Field(ge=1)]) -> None:  # test_parameters.py::test_annotated_field_validation
    got(locals())


def fm_default_ge(x: int = Field(ge=1)) -> None:  # test_parameters.py::test_default_field_validation
    got(locals())


def fm_default_field_required(
    x: int = Field(),
) -> None:  # test_parameters.py::test_default_field_is_still_required_if_no_default_specified
    got(locals())


class Profile(BaseModel):  # test_parameters.py (a model parameter)
    name: str
    age: int


def fm_profile(person: Profile) -> str:  # test_parameters.py (a model parameter)
    got(locals())
    return person.name


CASES = [
    Case(
        "pa_no_summary",
        PA + "test_docstring_google_no_body",
        FIXED,
        "items 1 and 7: Field, and a docstring with no summary",
        facts={"/properties/foo/description": "The foo value.", "/properties/bar/description": "from fields"},
        description="",
    ),
    Case(
        "pa_just_model",
        PA + "test_takes_just_model",
        DIFFERS,
        NO_FLATTENING,
        facts={"/properties/model/$ref": "#/$defs/Thing", "/required": ["model"]},
        call={"model": {"x": 0, "y": "a"}},
        receives=lambda d: {"model": d.Thing(x=0, y="a")},
        result="a",
    ),
    Case(
        "pa_model_and_int",
        PA + "test_takes_model_and_int",
        facts={
            "/properties/model/$ref": "#/$defs/Thing",
            "/$defs/Thing/required": ["x", "y"],
            "/required": ["model", "z"],
        },
        call={"model": {"x": 0, "y": "a"}, "z": 0},
        receives=lambda d: {"model": d.Thing(x=0, y="a"), "z": 0},
    ),
    Case(
        "pa_returns_model",
        PA + "test_return_pydantic_model",
        FIXED,
        "item 5: returning a pydantic model encodes it",
        output={"/$defs/Thing/required": ["x", "y"]},
        call={"x": 1},
        result={"x": 1, "y": "a"},
    ),
    Case(
        "pa_with_json_schema",
        PA + "test_schema_generator",
        DIFFERS,
        ENFORCED,
        facts={"/properties/x": {"type": ["string", "null"], "default": None}},
    ),
    Case(
        "lc_model_argument",
        LC + "test_structured_tool_types_parsed (model)",
        call={"basket": {"fruit": "bar"}},
        receives=lambda d: {"basket": d.Basket(fruit="bar")},
    ),
    Case(
        "lc_field_descriptions",
        LC + "test_tool_field_description_preserved",
        FIXED,
        FIELD,
        facts={
            "/properties/topic/description": "The research topic",
            "/properties/depth": {"type": "integer", "description": "Search depth level", "default": 3},
            "/required": ["topic"],
        },
        description="A tool for research.",
    ),
    Case(
        "lc_described_model",
        LC + "test_convert_from_runnable_dict (GSchema)",
        facts={
            "/$defs/Schedule/description": "Apply a function to an integer and a list of integers.",
            "/$defs/Schedule/properties/a/description": "Integer",
        },
        call={"schedule": {"a": 3, "b": [1, 2]}},
        receives=lambda d: {"schedule": d.Schedule(a=3, b=[1, 2])},
    ),
    Case(
        "fm_create_user",
        FMT + "test_pydantic_model_function",
        facts={"/$defs/UserInput/required": ["name", "age"], "/required": ["user", "flag"]},
        description="Create a new user.",
        call={"user": {"name": "Ann", "age": 3}, "flag": True},
        result={"id": 1, "name": "Ann", "age": 3},
    ),
    Case(
        "fm_greet_annotated",
        FMP + "test_parameter_descriptions_with_field_annotations",
        FIXED,
        FIELD,
        facts={
            "/properties/name/description": "The name to greet",
            "/properties/title/default": "",
            "/required": ["name"],
        },
    ),
    Case(
        "fm_greet_defaults",
        FMP + "test_parameter_descriptions_with_field_defaults",
        FIXED,
        FIELD,
        facts={
            "/properties/title/description": "Optional title",
            "/properties/title/default": "",
            "/required": ["name"],
        },
        call={"name": "Ann"},
        receives={"name": "Ann", "title": ""},
    ),
    Case(
        "fm_annotated_ge",
        FMP + "test_annotated_field_validation",
        FIXED,
        FIELD,
        call={"x": 0},
        refused="invalid_arguments",
    ),
    Case(
        "fm_default_ge", FMP + "test_default_field_validation", FIXED, FIELD, call={"x": 0}, refused="invalid_arguments"
    ),
    Case(
        "fm_default_field_required",
        FMP + "test_default_field_is_still_required_if_no_default_specified",
        FIXED,
        FIELD,
        facts={"/required": ["x"]},
        call={},
        refused="invalid_arguments",
    ),
    Case(
        "fm_profile",
        FMP + "PersonModel parameter",
        call={"person": {"name": "Ann", "age": 3}},
        receives=lambda d: {"person": d.Profile(name="Ann", age=3)},
        result="Ann",
    ),
    Case(
        "fm_profile",
        FMP + "PersonModel parameter (a string for an int)",
        DIFFERS,
        "no lax coercion inside models either",
        call={"person": {"name": "Ann", "age": "3"}},
        refused="invalid_arguments",
    ),
]
