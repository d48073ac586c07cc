"""The MCP Python SDK's cases that need pydantic, and issue 17's pydantic shapes.

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

from typing import Annotated, Any

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tests.schema.peers import (
    ABSENT,
    AGREES,
    DIFFERS,
    FIELD,
    FIXED,
    ISSUE,
    MCP,
    PA,
    UNWRAPPED,
    Case,
    got,
)


class Empty(BaseModel):  # SomeInputModelA
    pass


class Shrimp(BaseModel):  # SomeInputModelB
    class Tank(BaseModel):
        x: int

    how_many: Annotated[int, Field(description="How many shrimp in the tank")]
    tank: Tank
    nothing: None


def mcp_models(a: Empty, a_forward: "Empty", b: Shrimp, a_default: Empty = Empty()) -> str:  # noqa: B008  # complex_arguments_fn
    got(locals())
    return "ok"


def mcp_field_and_others(
    x: Annotated[int, str, Field(description="An int with a field"), annotated_types.Gt(1)],
) -> str:
    # complex_arguments_fn: an_int_annotated_with_field_and_others
    got(locals())
    return "ok"


def mcp_field_default_first(a: Annotated[int, Field(1)], b: int) -> str:
    # complex_arguments_fn: field_with_default_via_field_annotation_before_nondefault_arg
    got(locals())
    return "ok"


def mcp_equals_field(n: int = Field(1, ge=0)) -> str:  # complex_arguments_fn: an_int_with_equals_field
    got(locals())
    return "ok"


def mcp_annotated_field_with_default(n: Annotated[int, Field(description="hey")] = 5) -> str:
    # complex_arguments_fn: int_annotated_with_default
    got(locals())
    return "ok"


class Employee(BaseModel):  # test_structured_output_basemodel: PersonModel
    name: str
    age: int
    email: str | None = None


def mcp_returns_model() -> Employee:  # test_structured_output_basemodel
    return Employee(name="Alice", age=30)


class Described(BaseModel):  # test_structured_output_with_field_descriptions
    name: Annotated[str, Field(description="The person's full name")]
    age: Annotated[int, Field(description="Age in years", ge=0, le=150)]


def mcp_returns_described_model() -> Described:  # test_structured_output_with_field_descriptions
    return Described(name="Ian", age=60)


class Street(BaseModel):  # test_structured_output_nested_models
    street: str
    city: str


class Resident(BaseModel):  # test_structured_output_nested_models
    name: str
    address: Street


def mcp_returns_nested_models() -> Resident:  # test_structured_output_nested_models
    return Resident(name="Jack", address=Street(street="1 Main St", city="Anytown"))


class Aliased(BaseModel):  # test_structured_output_aliases
    field_first: str | None = Field(default=None, alias="first", description="The first field.")


def mcp_returns_aliased() -> Aliased:  # test_structured_output_aliases
    return Aliased(first="hello")


def mcp_returns_field_metadata() -> Annotated[int, Field(gt=1)]:  # test_preserves_pydantic_metadata
    return 2


# --- Shapes the issue names beside the ports ---


class TreeNode(BaseModel):  # issue 17, item 4
    value: int
    children: list["TreeNode"] = []


def rec_model(root: TreeNode) -> int:  # issue 17, item 4
    got(locals())
    return root.value


def rec_model_return() -> TreeNode:  # issue 17, item 4
    return TreeNode(value=1, children=[TreeNode(value=2)])


class Loose(BaseModel):  # issue 17, item 9
    model_config = ConfigDict(extra="allow")
    a: int


def open_model(loose: Loose) -> None:  # issue 17, item 9
    got(locals())


class Parcel(BaseModel):  # issue 17, item 9
    """A parcel to send."""

    weight: int = Field(description="In grams")
    """Attribute docstrings lose to the Field."""

    @field_validator("weight")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("weight must be positive")
        return value


def validated_model(parcel: Parcel) -> None:  # issue 17, items 8 and 9
    got(locals())


def field_alias(user_name: Annotated[str, Field(alias="userName")]) -> None:  # issue 17, item 1: aliases
    got(locals())


def field_default_factory(tags: list[str] = Field(default_factory=list)) -> None:  # noqa: B008  # issue 17, item 1
    got(locals())


def any_dict(payload: dict[str, Any]) -> None:  # test_schema_generator (the **kwargs-free part)
    got(locals())


CASES = [
    Case(
        "mcp_models",
        MCP + "test_complex_function_json_schema (models)",
        facts={
            "/properties/a/$ref": "#/$defs/Empty",
            "/properties/a_forward/$ref": "#/$defs/Empty",
            "/properties/a_default/default": {},
            "/$defs/Shrimp/properties/how_many/description": "How many shrimp in the tank",
            "/required": ["a", "a_forward", "b"],
        },
        call={"a": {}, "a_forward": {}, "b": {"how_many": 5, "tank": {"x": 1}, "nothing": None}},
        receives=lambda d: {
            "a": d.Empty(),
            "a_forward": d.Empty(),
            "b": d.Shrimp(how_many=5, tank=d.Shrimp.Tank(x=1), nothing=None),
            "a_default": d.Empty(),
        },
    ),
    Case(
        "mcp_field_and_others",
        MCP + "test_complex_function_json_schema (an_int_annotated_with_field_and_others)",
        FIXED,
        FIELD,
        facts={"/properties/x": {"type": "integer", "description": "An int with a field", "exclusiveMinimum": 1}},
    ),
    Case(
        "mcp_field_default_first",
        MCP + "test_complex_function_json_schema (Field default before a required one)",
        FIXED,
        FIELD,
        facts={"/properties/a/default": 1, "/required": ["b"]},
        call={"b": 2},
        receives={"a": 1, "b": 2},
    ),
    Case(
        "mcp_equals_field",
        MCP + "test_complex_function_json_schema (an_int_with_equals_field)",
        FIXED,
        FIELD,
        facts={"/properties/n": {"type": "integer", "minimum": 0, "default": 1}},
        call={},
        receives={"n": 1},
    ),
    Case(
        "mcp_annotated_field_with_default",
        MCP + "test_complex_function_json_schema (int_annotated_with_default)",
        FIXED,
        FIELD,
        facts={"/properties/n": {"type": "integer", "description": "hey", "default": 5}},
    ),
    Case(
        "mcp_returns_model",
        MCP + "test_structured_output_basemodel",
        FIXED,
        "item 5: returning a pydantic model encodes it",
        output={"/$defs/Employee/required": ["name", "age"]},
        call={},
        result={"name": "Alice", "age": 30, "email": None},
    ),
    Case(
        "mcp_returns_described_model",
        MCP + "test_structured_output_with_field_descriptions",
        output={
            "/$defs/Described/properties/age/maximum": 150,
            "/$defs/Described/properties/name/description": "The person's full name",
        },
    ),
    Case(
        "mcp_returns_nested_models",
        MCP + "test_structured_output_nested_models",
        FIXED,
        "item 5: returning a pydantic model encodes it",
        output={"/$defs/Resident/properties/address": {"$ref": "#/$defs/Street"}},
        call={},
        result={"name": "Jack", "address": {"street": "1 Main St", "city": "Anytown"}},
    ),
    Case(
        "mcp_returns_aliased",
        MCP + "test_structured_output_aliases",
        FIXED,
        "item 5: a returned model encodes by alias",
        output={
            "/$defs/Aliased/properties/first/description": "The first field.",
            "/$defs/Aliased/properties/field_first": ABSENT,
        },
        call={},
        result={"first": "hello"},
    ),
    Case(
        "mcp_returns_field_metadata",
        MCP + "test_preserves_pydantic_metadata",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "integer", "exclusiveMinimum": 1}},
    ),
    Case(
        "rec_model",
        ISSUE + "item 4 (recursive pydantic model as a parameter)",
        FIXED,
        "item 4: recursive pydantic models",
        facts={"/$defs/TreeNode/properties/children/items": {"$ref": "#/$defs/TreeNode"}},
        call={"root": {"value": 1, "children": [{"value": 2}]}},
        receives=lambda d: {"root": d.TreeNode(value=1, children=[d.TreeNode(value=2)])},
        result=1,
    ),
    Case(
        "rec_model_return",
        ISSUE + "item 4 (recursive pydantic model returned)",
        FIXED,
        "item 4: recursive pydantic models",
        output={"/$ref": "#/$defs/TreeNode"},
        call={},
        result={"value": 1, "children": [{"value": 2, "children": []}]},
    ),
    Case(
        "open_model",
        ISSUE + "item 9 (extra='allow' is still a closed object)",
        FIXED,
        "item 9: pydantic models are closed objects",
        facts={"/$defs/Loose/additionalProperties": False},
        call={"loose": {"a": 1, "b": 2}},
        refused="invalid_arguments",
    ),
    Case(
        "validated_model",
        ISSUE + "item 9 (a field_validator's message reaches the model)",
        FIXED,
        "item 9: the validator's message, not just 'ValidationError'",
        facts={
            "/$defs/Parcel/description": "A parcel to send.",
            "/$defs/Parcel/properties/weight/description": "In grams",
        },
        call={"parcel": {"weight": -1}},
        refused="invalid_arguments",
        says="weight must be positive",
    ),
    Case(
        "field_alias",
        ISSUE + "item 1 (a Field alias is the model-visible name)",
        FIXED,
        FIELD,
        facts={"/properties/userName": {"type": "string"}, "/properties/user_name": ABSENT},
        call={"userName": "ada"},
        receives={"user_name": "ada"},
    ),
    Case(
        "field_default_factory",
        ISSUE + "item 1 (Field default_factory)",
        FIXED,
        FIELD,
        facts={"/required": ABSENT},
        call={},
        receives={"tags": []},
    ),
    Case(
        "any_dict",
        PA + "test_schema_generator (a free-form dict)",
        AGREES,
        facts={"/properties/payload": {"type": "object"}},
        call={"payload": {"a": [1]}},
        receives={"payload": {"a": [1]}},
    ),
]
