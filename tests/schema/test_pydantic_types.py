"""pydantic types as parameters: discriminated unions, pydantic dataclasses, ``Field`` in stdlib types.

Each type either works end to end (the schema is accepted and a valid call converts into the
type) or is refused when the tool is defined with a `ToolDefinitionError` that says why.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
import warnings
from collections.abc import Callable
from typing import Annotated, Any, Generic, Literal, TypeVar

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, RootModel, SecretStr, conint, constr, field_validator
from typing_extensions import TypedDict

from tinytools import Dispatcher, ToolCall, ToolDefinitionError, ToolDefinitionWarning, tool


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: int


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


def walk(schema: Any) -> list[str]:
    """Every key anywhere in ``schema`` (property names included)."""
    if isinstance(schema, dict):
        return [key for key, value in schema.items() for key in [key, *walk(value)]]
    if isinstance(schema, list):
        return [key for item in schema for key in walk(item)]
    return []


def one(hint: Any, *, output: bool = False) -> Any:
    """A tool taking (and returning) one parameter ``v`` of type ``hint``."""

    def echo(v: Any) -> Any:
        """Echo."""
        return v

    echo.__annotations__ = {"v": hint, "return": hint if output else Any}
    return tool(echo)


def test_a_model_with_a_discriminated_union_is_a_parameter_and_enforces_it() -> None:
    pets = one(Pet)
    assert "discriminator" not in walk(pets.input_schema)
    cat = pets.invoke({"v": {"pet": {"kind": "cat", "meows": 2}}})
    assert cat.status == "succeeded" and cat.output == {"pet": {"kind": "cat", "meows": 2}}
    assert pets.invoke({"v": {"pet": {"kind": "dog", "barks": 1}}}).status == "succeeded"
    for wrong in ({"kind": "dog", "meows": 1}, {"kind": "cat", "barks": 1}, {"kind": "bird", "meows": 1}):
        result = pets.invoke({"v": {"pet": wrong}})
        assert result.error is not None and result.error.code == "invalid_arguments", wrong


def test_the_discriminated_model_converts_into_its_branch() -> None:
    seen: list[Any] = []

    @tool
    def adopt_pet(p: Pet) -> str:
        """Adopt."""
        seen.append(p)
        return type(p.pet).__name__

    assert adopt_pet.invoke({"p": {"pet": {"kind": "dog", "barks": 3}}}).output == "Dog"
    assert isinstance(seen[0].pet, Dog) and seen[0].pet.barks == 3


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    a: int


T = TypeVar("T")


class Boxed(BaseModel, Generic[T]):
    item: T


class Ints(RootModel[list[int]]):
    pass


FIELD_TYPES: dict[str, tuple[Any, Any, Any]] = {
    "datetime": (
        datetime.datetime,
        "2024-01-02T03:04:05Z",
        datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    ),
    "date": (datetime.date, "2024-01-02", datetime.date(2024, 1, 2)),
    "timedelta": (datetime.timedelta, "PT1H", datetime.timedelta(hours=1)),
    "uuid": (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    "decimal text": (decimal.Decimal, "1.50", decimal.Decimal("1.50")),
    "decimal number": (decimal.Decimal, 2, decimal.Decimal(2)),
    "decimal places": (
        Annotated[decimal.Decimal, Field(max_digits=5, decimal_places=2)],
        "1.25",
        decimal.Decimal("1.25"),
    ),
    "conint": (conint(ge=0, lt=10), 3, 3),
    "constr": (constr(pattern=r"^a+$", min_length=1), "aa", "aa"),
    "enum": (Color, "blue", Color.BLUE),
    "literal": (Literal["x", "y"], "y", "y"),
    "const": (Literal["only"], "only", "only"),
    "optional model": (Inner | None, {"a": 1}, Inner(a=1)),
    "optional model, null": (Inner | None, None, None),
    "generic": (Boxed[int], {"item": 4}, Boxed[int](item=4)),
    "root model": (Ints, [1, 2], Ints([1, 2])),
    "examples": (Annotated[int, Field(examples=[1, 2])], 1, 1),
    "deprecated": (Annotated[int, Field(deprecated=True)], 1, 1),
    "read only": (Annotated[int, Field(json_schema_extra={"readOnly": True})], 1, 1),
    "frozenset": (frozenset[int], [1, 2], frozenset({1, 2})),
    "tuple": (tuple[int, str], [1, "a"], (1, "a")),
    "mapping": (dict[str, int], {"a": 1}, {"a": 1}),
    "discriminated": (
        Annotated[Cat | Dog, Field(discriminator="kind")],
        {"kind": "cat", "meows": 1},
        Cat(kind="cat", meows=1),
    ),
}


@pytest.mark.parametrize("label", list(FIELD_TYPES))
def test_a_model_field_of_each_type_works_end_to_end(label: str) -> None:
    hint, sent, expected = FIELD_TYPES[label]
    model = pydantic.create_model("Holder", v=(hint, ...))
    seen: list[Any] = []

    def take(m: Any) -> str:
        """Take."""
        seen.append(m)
        return "ok"

    take.__annotations__ = {"m": model, "return": str}
    made = tool(take)
    result = made.invoke({"m": {"v": sent}})
    assert result.status == "succeeded", result.text()
    assert isinstance(seen[0], model) and seen[0].__dict__["v"] == expected  # (a deprecated field warns when read)


def test_a_secret_str_field_converts_and_the_schema_says_write_only() -> None:
    model = pydantic.create_model("Login", password=(SecretStr, ...))
    made = one(model)
    assert "writeOnly" in walk(made.input_schema)
    seen = made.invoke({"v": {"password": "hunter2"}})
    assert seen.status == "succeeded"


def test_email_str() -> None:  # email-validator is in the test extra
    model = pydantic.create_model("Contact", email=(pydantic.EmailStr, ...))
    made = one(model)
    assert made.invoke({"v": {"email": "a@example.org"}}).status == "succeeded"
    assert made.invoke({"v": {"email": "not an address"}}).error.code == "invalid_arguments"  # type: ignore[union-attr]


def test_a_vendor_keyword_is_an_annotation_and_any_other_keyword_is_refused_by_name() -> None:
    model = pydantic.create_model("Extra", v=(Annotated[int, Field(json_schema_extra={"x-unit": "cm"})], ...))
    made = one(model)
    assert "x-unit" in walk(made.input_schema)  # shown as written, not enforced
    assert made.invoke({"v": {"v": 3}}).status == "succeeded"
    assert made.invoke({"v": {"v": "3"}}).error.code == "invalid_arguments"  # type: ignore[union-attr]
    typo = pydantic.create_model("Typo", v=(Annotated[int, Field(json_schema_extra={"unit": "cm"})], ...))
    with pytest.raises(ToolDefinitionError, match="'unit'"):
        one(typo)


def test_a_model_pydantic_has_no_schema_for_is_a_definition_error() -> None:
    model = pydantic.create_model("Hooks", hook=(Callable[[], int] | None, None))
    with pytest.raises(ToolDefinitionError, match="pydantic has no JSON Schema for Hooks"):
        one(model)


@pydantic.dataclasses.dataclass
class Order:
    """An order."""

    item: Annotated[str, Field(alias="Item", description="what to buy")]
    count: Annotated[int, Field(ge=1)] = 1
    discount: int = Field(default=0, le=50)
    tags: list[str] = Field(default_factory=list)

    @field_validator("item")
    @classmethod
    def known(cls, value: str) -> str:
        if value == "unicorn":
            raise ValueError("we do not sell unicorns")
        return value


def test_a_pydantic_dataclass_takes_its_schema_and_validation_from_pydantic() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDefinitionWarning)
        made = one(Order, output=True)
    definition = made.input_schema["$defs"]["Order"]
    assert set(definition["properties"]) == {"Item", "count", "discount", "tags"}
    assert definition["required"] == ["Item"] and definition["additionalProperties"] is False
    assert definition["properties"]["discount"] == {"default": 0, "maximum": 50, "type": "integer"}
    assert definition["properties"]["Item"]["description"] == "what to buy"
    result = made.invoke({"v": {"Item": "pen"}})
    assert result.status == "succeeded" and result.output == {"item": "pen", "count": 1, "discount": 0, "tags": []}
    assert set(made.output_schema["$defs"]["Order"]["properties"]) == set(result.output)  # a result goes by name


def test_a_pydantic_dataclass_validators_message_reaches_the_model() -> None:
    made = one(Order)
    result = made.invoke({"v": {"Item": "unicorn"}})
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert "we do not sell unicorns" in result.text() and "/v/Item" in result.text()
    assert made.invoke({"v": {"Item": "pen", "discount": 51}}).error.code == "invalid_arguments"  # type: ignore[union-attr]
    assert made.invoke({"v": {"item": "pen"}}).error.code == "invalid_arguments"  # type: ignore[union-attr]


@given(discount=st.integers(-100, 100), count=st.integers(-3, 3))
def test_a_pydantic_dataclass_accepts_what_pydantic_accepts(discount: int, count: int) -> None:
    made = ORDER_TOOL
    result = made.invoke({"v": {"Item": "pen", "discount": discount, "count": count}})
    try:
        pydantic.TypeAdapter(Order).validate_python({"Item": "pen", "discount": discount, "count": count})
    except pydantic.ValidationError:
        assert result.error is not None and result.error.code == "invalid_arguments"
    else:
        assert result.status == "succeeded" and result.output["discount"] == discount


ORDER_TOOL = one(Order)


@dataclasses.dataclass
class Plain:
    size: Annotated[int, Field(ge=0, description="the size", alias="Size")]
    scale: int = Field(default=5, le=10, description="how much")
    marks: list[int] = Field(default_factory=list)  # noqa: RUF009 - what is tested


class Options(TypedDict):
    depth: Annotated[int, Field(ge=0, description="how deep", alias="Depth")]
    label: Annotated[str, Field(max_length=3)]


def test_field_metadata_in_stdlib_dataclasses_and_typeddicts_reaches_the_schema() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDefinitionWarning)

        @tool
        def configure(p: Plain, o: Options) -> str:
            """Configure."""
            return repr((p, o))

    plain = configure.input_schema["$defs"]["Plain"]
    assert plain["properties"]["Size"] == {"type": "integer", "minimum": 0, "description": "the size"}
    assert plain["properties"]["scale"] == {"type": "integer", "maximum": 10, "description": "how much", "default": 5}
    assert plain["required"] == ["Size"]
    options = configure.input_schema["$defs"]["Options"]
    assert options["properties"]["Depth"]["minimum"] == 0 and options["properties"]["label"]["maxLength"] == 3
    assert options["required"] == ["Depth", "label"]


def test_a_stdlib_dataclass_field_left_out_gets_its_fields_default() -> None:
    seen: list[Any] = []

    @tool
    def configure(p: Plain, o: Options) -> str:
        """Configure."""
        seen.append((p, o))
        return "ok"

    assert configure.invoke({"p": {"Size": 1}, "o": {"Depth": 2, "label": "ab"}}).status == "succeeded"
    assert seen[0] == (Plain(size=1, scale=5, marks=[]), {"depth": 2, "label": "ab"})
    assert configure.invoke({"p": {"Size": 1}, "o": {"Depth": 2, "label": "ab"}}).status == "succeeded"
    assert seen[1][0].marks is not seen[0][0].marks  # the factory runs for each call
    for bad in ({"Size": -1}, {"Size": 1, "scale": 11}, {"size": 1}):
        result = configure.invoke({"p": bad, "o": {"Depth": 2, "label": "ab"}})
        assert result.error is not None and result.error.code == "invalid_arguments", bad


def test_an_alias_that_is_not_one_name_is_a_definition_error() -> None:
    @dataclasses.dataclass
    class Choosy:
        x: Annotated[int, Field(validation_alias=pydantic.AliasChoices("a", "b"))]

    with pytest.raises(ToolDefinitionError, match="'x'"):
        one(Choosy)


@dataclasses.dataclass
class Crossed:
    a: int = Field(alias="b")
    b: str = "x"


class CrossedDict(TypedDict):
    a: Annotated[int, Field(alias="b")]
    b: str


@pydantic.dataclasses.dataclass
class CrossedPydantic:
    a: int = Field(alias="b")
    b: str = "x"


class CrossedModel(BaseModel):
    a: int = Field(alias="b")
    b: str = "x"


class TwiceAliased(BaseModel):
    first: int = Field(validation_alias="same")
    second: int = Field(alias="same")


@pytest.mark.parametrize("kind", [Crossed, CrossedDict, CrossedPydantic, CrossedModel, TwiceAliased])
def test_an_alias_equal_to_another_fields_key_is_refused_at_definition(kind: type) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        one(kind)
    first, second = ("first", "second") if kind is TwiceAliased else ("a", "b")
    assert caught.value.tool == "echo" and f"fields {first!r} and {second!r} are both sent as" in caught.value.reason
    assert "give one of them another alias" in caught.value.reason


def test_a_result_encoded_by_field_name_may_alias_another_fields_name() -> None:
    @tool
    def make(size: int) -> CrossedPydantic:  # a pydantic dataclass result is described by field name
        """Make."""
        return CrossedPydantic(b=size)

    assert set(make.output_schema["$defs"]["CrossedPydantic"]["properties"]) == {"a", "b"}


def test_a_stdlib_dataclass_result_is_described_by_field_name_as_it_is_encoded() -> None:
    @tool
    def make(size: int) -> Plain:
        """Make."""
        return Plain(size=size, scale=5, marks=[])  # a stdlib dataclass itself keeps a FieldInfo as the default

    result = make.invoke({"size": 2})
    assert result.output == {"size": 2, "scale": 5, "marks": []}
    assert set(make.output_schema["$defs"]["Plain"]["properties"]) == set(result.output)


def test_a_discriminated_union_is_enforced_in_strict_mode_too() -> None:
    pets = one(Pet)
    dispatcher = Dispatcher([pets], strict=True)
    assert "oneOf" not in walk(pets.strict().schema)
    cat = dispatcher.dispatch(ToolCall("c", pets.name, {"v": {"pet": {"kind": "cat", "meows": 1}}}))
    assert cat.status == "succeeded", cat.text()
    wrong = dispatcher.dispatch(ToolCall("c", pets.name, {"v": {"pet": {"kind": "dog", "meows": 1}}}))
    assert wrong.error is not None and wrong.error.code == "invalid_arguments"


class Tagged(BaseModel):
    kind: Literal["tagged"] = "tagged"
    n: int


class Other(BaseModel):
    kind: Literal["other"]
    n: int


def test_a_value_without_the_tag_is_refused_even_where_a_branch_defaults_it() -> None:
    model = pydantic.create_model("Holder", v=(Annotated[Tagged | Other, Field(discriminator="kind")], ...))
    made = one(model)
    assert made.invoke({"v": {"v": {"kind": "tagged", "n": 1}}}).status == "succeeded"
    untagged = made.invoke({"v": {"v": {"n": 1}}})
    assert untagged.error is not None and untagged.error.code == "invalid_arguments"
    with pytest.raises(pydantic.ValidationError):  # what pydantic itself says
        model.model_validate({"v": {"n": 1}})


def test_an_alias_choice_equal_to_another_fields_key_is_refused_at_definition() -> None:
    from pydantic import AliasChoices, AliasPath, BaseModel, Field

    class Choices(BaseModel):
        a: int = Field(validation_alias=AliasChoices("b", "c"))
        b: int = 0

    class Path(BaseModel):
        a: int = Field(validation_alias=AliasChoices(AliasPath("b", 0), "z"))
        b: int = 0

    for model in (Choices, Path):

        def takes(value: model) -> int:  # type: ignore[valid-type]
            """Take one."""
            return 1

        with pytest.raises(ToolDefinitionError, match="both sent as 'b'"):
            tool(takes)
