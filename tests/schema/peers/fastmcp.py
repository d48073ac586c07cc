"""FastMCP's cases (tests/tools/, tests/server/providers/local_provider_tools/).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import dataclasses
import datetime
import enum
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from tests.schema.peers import (
    ABSENT,
    CLOSED,
    DIFFERS,
    FIXED,
    FMC,
    FMF,
    FMP,
    FMT,
    ISSUE,
    NO_LAX,
    NO_SCHEMA,
    UNWRAPPED,
    Case,
    got,
)
from tinytools import Invocation


def fm_add(a: int, b: int) -> int:  # test_tool.py::test_basic_function
    """Add two numbers."""
    got(locals())
    return a + b


async def fm_fetch(url: str) -> str:  # test_tool.py::test_async_function
    """Fetch data from URL."""
    got(locals())
    return url


def fm_bytes(data: bytes) -> str:  # test_tool.py::test_tool_with_image_return (bytes input)
    got(locals())
    return "ok"


fm_lambda = lambda x: x  # noqa: E731  # test_tool.py::test_lambda


def fm_private(_a: int, _b: int) -> int:  # test_tool.py::test_private_arguments
    got(locals())
    return _a + _b


def fm_varargs(a: int, b: int, *rest: int) -> int:  # test_tool.py::test_tool_with_varargs_not_allowed
    return a


def fm_varkwargs(a: int, b: int, **rest: int) -> int:  # test_tool.py::test_tool_with_varkwargs_not_allowed
    return a


class Adder:  # test_tool.py::test_instance_method, test_classmethod
    def add(self, x: int, y: int) -> int:
        """Add two numbers."""
        got(locals())
        return x + y

    def add_many(self, x: int, y: int, *more: int) -> int:  # test_instance_method_with_varargs_not_allowed
        return x

    @classmethod
    def call(cls, x: int, y: int) -> int:
        """Add two numbers."""
        got(locals())
        return x + y


fm_instance_method = Adder().add
fm_instance_method_varargs = Adder().add_many
fm_classmethod = Adder.call


def fm_int(x: int) -> int:  # test_parameters.py::test_tool_with_invalid_input, test_tool_int_coercion
    got(locals())
    return x + 1


def fm_bool(flag: bool) -> bool:  # test_parameters.py::test_tool_bool_coercion
    got(locals())
    return not flag


def fm_literal(x: Literal["a", "b"]) -> str:  # test_parameters.py::test_literal_type_validation_*
    got(locals())
    return x


class Colour(enum.Enum):  # test_parameters.py::test_enum_type_validation_*
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


def fm_enum(x: Colour) -> str:  # test_parameters.py::test_enum_type_validation_*
    got(locals())
    return x.value


def fm_int_or_float(x: int | float) -> str:  # test_parameters.py::test_union_type_validation
    got(locals())
    return str(x)


def fm_path(path: Path) -> str:  # test_parameters.py::test_path_type
    got(locals())
    return str(path)


def fm_uuid(x: uuid.UUID) -> str:  # test_parameters.py::test_uuid_type
    got(locals())
    return str(x)


def fm_datetime(x: datetime.datetime) -> str:  # test_parameters.py::test_datetime_type_parse_string
    got(locals())
    return x.isoformat()


def fm_date(x: datetime.date) -> str:  # test_parameters.py::test_date_type_parse_string
    got(locals())
    return x.isoformat()


def fm_timedelta(x: datetime.timedelta) -> str:  # test_parameters.py::test_timedelta_type_parse_int
    got(locals())
    return str(x)


def fm_annotated_text(x: Annotated[int, "A number"]) -> int:  # test_parameters.py::test_annotated_string_description
    return x


class Person(TypedDict):  # test_parameters.py: PersonTypedDict
    name: str
    age: int


@dataclasses.dataclass
class PersonRecord:  # test_parameters.py: PersonDataclass
    name: str
    age: int


def fm_typed_dict(person: Person) -> str:  # test_parameters.py (TypedDict parameter)
    got(locals())
    return person["name"]


def fm_dataclass(person: PersonRecord) -> str:  # test_parameters.py (dataclass parameter)
    got(locals())
    return person.name


def fm_context_and_types(data: dict[str, Any], items: list[int], invocation: Invocation) -> dict[str, str | int]:
    """Tool with complex type annotations."""
    # test_tool_future_annotations.py::test_complex_types
    got({"data": data, "items": items})
    return {"count": len(items)}


def fm_optional_context(
    name: str, invocation: Invocation | None = None
) -> str:  # test_tool_future_annotations.py::test_optional_context
    got({"name": name})
    return name


def fm_union_and_context(
    value: int | str, invocation: Invocation
) -> str:  # test_tool_future_annotations.py::test_union_with_context
    got({"value": value})
    return str(value)


def fm_set_of_dicts(rows: set[dict[str, int]]) -> int:  # issue 17, item 3 (a shape FastMCP accepts at definition)
    return len(rows)


class AsyncMultiplier:  # FastMCP tests/tools/tool/test_callable.py::test_callable_object_async
    """Multiply by a fixed factor, asynchronously."""

    def __init__(self, factor: int):
        self.factor = factor

    async def __call__(self, x: int) -> int:
        got(locals())
        return x * self.factor


fm_async_callable_object = AsyncMultiplier(4)


CASES = [
    Case(
        "fm_add",
        FMT + "test_basic_function",
        DIFFERS,
        UNWRAPPED,
        facts={
            "": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            }
        },
        output={"": {"type": "integer"}},
        description="Add two numbers.",
        call={"a": 1, "b": 2},
        result=3,
    ),
    Case(
        "fm_fetch",
        FMT + "test_async_function",
        description="Fetch data from URL.",
        call={"url": "https://x"},
        receives={"url": "https://x"},
        result="https://x",
    ),
    Case(
        "fm_async_callable_object",
        FMC + "test_callable_object_async",
        FIXED,
        "item 2: a callable object becomes a tool",
        facts={"/required": ["x"]},
        call={"x": 5},
        receives={"x": 5},
        result=20,
    ),
    Case("fm_bytes", FMT + "test_tool_with_image_return (bytes input)", DIFFERS, NO_SCHEMA, undefinable=True),
    Case("fm_lambda", FMT + "test_lambda_with_no_name", undefinable=True),
    Case(
        "fm_lambda",
        FMT + "test_lambda",
        options={"name": "my_tool"},
        facts={"": {"type": "object", "properties": {"x": {}}, "required": ["x"], "additionalProperties": False}},
        call={"x": 1},
        result=1,
    ),
    Case(
        "fm_private",
        FMT + "test_private_arguments",
        facts={"/required": ["_a", "_b"]},
        call={"_a": 1, "_b": 2},
        result=3,
    ),
    Case("fm_varargs", FMT + "test_tool_with_varargs_not_allowed", undefinable=True),
    Case("fm_varkwargs", FMT + "test_tool_with_varkwargs_not_allowed", undefinable=True),
    Case(
        "fm_instance_method",
        FMT + "test_instance_method",
        facts={"/properties/self": ABSENT, "/required": ["x", "y"]},
        description="Add two numbers.",
        call={"x": 1, "y": 2},
        receives={"x": 1, "y": 2},
        result=3,
    ),
    Case("fm_instance_method_varargs", FMT + "test_instance_method_with_varargs_not_allowed", undefinable=True),
    Case(
        "fm_classmethod",
        FMT + "test_classmethod",
        facts={"/properties/cls": ABSENT, "/required": ["x", "y"]},
        description="Add two numbers.",
        call={"x": 1, "y": 2},
        result=3,
    ),
    Case("fm_int", FMP + "test_tool_with_invalid_input", call={"x": "not an int"}, refused="invalid_arguments"),
    Case("fm_int", FMP + "test_tool_int_coercion", DIFFERS, NO_LAX, call={"x": "42"}, refused="invalid_arguments"),
    Case("fm_int", FMP + "test_tool_int_coercion (an integer)", call={"x": 42}, receives={"x": 42}, result=43),
    Case(
        "fm_bool", FMP + "test_tool_bool_coercion", DIFFERS, NO_LAX, call={"flag": "true"}, refused="invalid_arguments"
    ),
    Case(
        "fm_bool",
        FMP + "test_tool_bool_coercion (a boolean)",
        call={"flag": False},
        receives={"flag": False},
        result=True,
    ),
    Case("fm_literal", FMP + "test_literal_type_validation_error", call={"x": "c"}, refused="invalid_arguments"),
    Case("fm_literal", FMP + "test_literal_type_validation_success", call={"x": "a"}, receives={"x": "a"}, result="a"),
    Case("fm_enum", FMP + "test_enum_type_validation_error", call={"x": "some-color"}, refused="invalid_arguments"),
    Case(
        "fm_enum",
        FMP + "test_enum_type_validation_success",
        call={"x": "red"},
        receives=lambda d: {"x": d.Colour.RED},
        result="red",
    ),
    Case("fm_int_or_float", FMP + "test_union_type_validation (1)", call={"x": 1}, receives={"x": 1}, result="1"),
    Case(
        "fm_int_or_float", FMP + "test_union_type_validation (1.0)", call={"x": 1.0}, receives={"x": 1.0}, result="1.0"
    ),
    Case(
        "fm_int_or_float",
        FMP + "test_union_type_validation (not a number)",
        call={"x": "not a number"},
        refused="invalid_arguments",
    ),
    Case("fm_path", FMP + "test_path_type", DIFFERS, NO_SCHEMA, undefinable=True),
    Case(
        "fm_uuid",
        FMP + "test_uuid_type",
        facts={"/properties/x/format": "uuid"},
        call={"x": "12345678-1234-5678-1234-567812345678"},
        receives={"x": uuid.UUID("12345678-1234-5678-1234-567812345678")},
    ),
    Case("fm_uuid", FMP + "test_uuid_type_error", call={"x": "not a uuid"}, refused="invalid_arguments"),
    Case(
        "fm_datetime",
        FMP + "test_datetime_type_parse_string",
        call={"x": "2021-01-01T00:00:00"},
        receives={"x": datetime.datetime(2021, 1, 1)},
        result="2021-01-01T00:00:00",
    ),
    Case("fm_datetime", FMP + "test_datetime_type_error", call={"x": "not a datetime"}, refused="invalid_arguments"),
    Case(
        "fm_date",
        FMP + "test_date_type_parse_string",
        call={"x": "2021-01-01"},
        receives={"x": datetime.date(2021, 1, 1)},
        result="2021-01-01",
    ),
    Case(
        "fm_timedelta",
        FMP + "test_timedelta_type_parse_int",
        DIFFERS,
        NO_LAX + " (a duration is an ISO 8601 string)",
        call={"x": 1000},
        refused="invalid_arguments",
    ),
    Case(
        "fm_timedelta",
        FMP + "test_timedelta_type (an ISO 8601 duration)",
        call={"x": "P1D"},
        receives={"x": datetime.timedelta(days=1)},
        result="1 day, 0:00:00",
    ),
    Case(
        "fm_annotated_text", FMP + "test_annotated_string_description", facts={"/properties/x/description": "A number"}
    ),
    Case(
        "fm_typed_dict",
        FMP + "PersonTypedDict parameter",
        facts={"/$defs/Person/additionalProperties": False},
        call={"person": {"name": "Ann", "age": 3}},
        receives={"person": {"name": "Ann", "age": 3}},
        result="Ann",
    ),
    Case(
        "fm_typed_dict",
        FMP + "PersonTypedDict parameter (an extra key)",
        DIFFERS,
        CLOSED,
        call={"person": {"name": "Ann", "age": 3, "x": 1}},
        refused="invalid_arguments",
    ),
    Case(
        "fm_dataclass",
        FMP + "PersonDataclass parameter",
        call={"person": {"name": "Ann", "age": 3}},
        receives=lambda d: {"person": d.PersonRecord("Ann", 3)},
        result="Ann",
    ),
    Case(
        "fm_context_and_types",
        FMF + "test_complex_types",
        facts={"/properties/invocation": ABSENT},
        call={"data": {"key": "value"}, "items": [1, 2, 3]},
        receives={"data": {"key": "value"}, "items": [1, 2, 3]},
        result={"count": 3},
    ),
    Case(
        "fm_optional_context",
        FMF + "test_optional_context",
        FIXED,
        "found by this port (the issue's 'fix the rest'): `Invocation | None = None` was shown to the model",
        facts={"/properties/invocation": ABSENT, "/required": ["name"]},
        call={"name": "World"},
        result="World",
    ),
    Case(
        "fm_union_and_context",
        FMF + "test_union_with_context",
        facts={"/properties/invocation": ABSENT},
        call={"value": 42},
        receives={"value": 42},
        result="42",
    ),
    Case(
        "fm_set_of_dicts",
        ISSUE + "item 3 (set of dicts)",
        FIXED,
        "item 3: unhashable set items are refused at definition",
        undefinable=True,
    ),
]
