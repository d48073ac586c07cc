"""Signatures as people write them: pydantic ``Field``, callables, partials, methods, unions.

Every case runs twice: on `tests.schema.signature_defs` as written and compiled with
``from __future__ import annotations``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import types
import warnings
from typing import Annotated, Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import AliasChoices, Field
from typing_extensions import Self

from tests.schema.twice import both
from tinytools import (
    Dispatcher,
    Injected,
    Tool,
    Toolbox,
    ToolCall,
    ToolDefinitionError,
    ToolDefinitionWarning,
    dispatch,
    tool,
)
from tinytools._schema import callables


@pytest.fixture(params=both("tests.schema.signature_defs"), ids=["as-written", "future-annotations"])
def defs(request: pytest.FixtureRequest) -> types.ModuleType:
    return request.param  # type: ignore[no-any-return]


def run(made: Tool[..., Any], arguments: dict[str, Any], **options: Any) -> Any:
    return dispatch(ToolCall(id="c1", name=made.name, arguments=arguments), Toolbox([made]), **options)


# -- pydantic Field ------------------------------------------------------------------------------


def test_field_as_default_and_in_annotated_is_read_like_param(defs: types.ModuleType) -> None:
    schema = tool(defs.counted).input_schema
    assert schema["required"] == ["m"]  # Field(...) is required, not a default
    assert schema["properties"]["m"] == {"type": "integer", "maximum": 5, "description": "How many"}
    assert schema["properties"]["labelText"] == {
        "type": "string",
        "minLength": 2,
        "description": "A label",
        "default": "ab",
    }
    assert "label" not in schema["properties"]  # the alias is the model-visible name
    assert "default" not in schema["properties"]["tags"]  # a factory's value is made per call
    assert schema["properties"]["size"]["minimum"] == 1


def test_field_defaults_reach_the_function_not_the_field(defs: types.ModuleType) -> None:
    made = tool(defs.counted)
    first = run(made, {"m": 2})
    second = run(made, {"m": 3, "labelText": "xyz"})
    assert first.output == [2, "ab", ["seen"], 3]
    assert second.output == [3, "xyz", ["seen"], 3]  # a fresh list: the factory ran again


def test_field_bounds_and_aliases_are_enforced(defs: types.ModuleType) -> None:
    made = tool(defs.counted)
    over = run(made, {"m": 6})
    assert over.status == "failed" and "/m" in over.error.message
    by_name = run(made, {"m": 1, "label": "xy"})  # the Python name is not the one the model sends
    assert by_name.status == "failed" and "label" in by_name.error.message
    short = run(made, {"m": 1, "labelText": "x"})
    assert short.status == "failed" and "/labelText" in short.error.message


def test_field_default_inside_annotated_is_passed_when_omitted(defs: types.ModuleType) -> None:
    made = tool(defs.field_in_annotated)
    assert made.input_schema["properties"]["limit"] == {
        "type": "integer",
        "exclusiveMinimum": 0,
        "exclusiveMaximum": 100,
        "description": "Page size",
        "default": 10,
    }
    assert "required" not in made.input_schema
    assert run(made, {}).output == 10
    assert run(made, {"limit": 100}).status == "failed"


def test_field_pattern_and_examples(defs: types.ModuleType) -> None:
    made = tool(defs.field_pattern)
    assert made.input_schema["properties"]["code"]["pattern"] == "^[A-Z]{3}$"
    assert made.input_schema["properties"]["code"]["examples"] == ["EUR"]
    assert run(made, {"code": "EUR"}).output == "EUR"
    assert run(made, {"code": "eur"}).status == "failed"


@pytest.mark.parametrize("strict", [False, True])
def test_field_defaults_under_every_dispatcher_mode(defs: types.ModuleType, strict: bool) -> None:
    made = tool(defs.field_in_annotated)
    dispatcher = Dispatcher(Toolbox([made]), strict=strict)
    arguments: dict[str, Any] = {"limit": None} if strict else {}
    assert dispatcher.dispatch(ToolCall(id="c", name=made.name, arguments=arguments)).output == 10
    assert asyncio.run(made.ainvoke({"limit": 7})).output == 7


# -- callables and partials ----------------------------------------------------------------------


def test_a_callable_object_is_a_tool(defs: types.ModuleType) -> None:
    made = tool(defs.Multiplier(3))
    assert made.name == "Multiplier"
    assert made.input_schema["properties"] == {"x": {"type": "integer", "description": "The number to multiply."}}
    assert made.description == "Multiply ``x``."  # __call__'s docstring, not the class's
    assert made.invoke({"x": 4}).output == 12


def test_a_callable_objects_class_speaks_where_its_call_is_silent(defs: types.ModuleType) -> None:
    made = tool(defs.Scaler(2))
    assert made.description == "Scale numbers by a fixed factor."  # __call__ documents no description
    assert made.input_schema["properties"] == {
        "x": {"type": "integer", "description": "The number to scale."},
        "round_to": {"type": "integer", "default": 0, "description": "Decimal places to keep."},
    }


def test_a_dataclass_generated_docstring_is_no_description(defs: types.ModuleType) -> None:
    with pytest.warns(ToolDefinitionWarning, match="no description"):
        made = tool(defs.Undocumented(2))
    assert made.description == ""  # not "Undocumented(factor: int)"


def test_a_partial_hides_what_it_sets(defs: types.ModuleType) -> None:
    square = tool(defs.square)
    assert square.name == "power"
    assert set(square.input_schema["properties"]) == {"base", "modulo"}
    assert square.invoke({"base": 7}).output == 49
    refused = square.invoke({"base": 7, "exponent": 3})  # what the partial set is not the model's
    assert refused.status == "failed" and "exponent" in refused.error.message
    twice = tool(defs.twice, name="two_to_the")
    assert set(twice.input_schema["properties"]) == {"exponent", "modulo"}
    assert twice.invoke({"exponent": 5}).output == 32


def test_what_cannot_be_a_tool_says_how_to_fix_it(defs: types.ModuleType) -> None:
    with pytest.raises(ToolDefinitionError, match="is a class"):
        tool(defs.Multiplier)
    with pytest.raises(ToolDefinitionError, match="not callable"):
        tool(42, name="answer")  # type: ignore[call-overload]


def test_a_builtin_takes_any_json() -> None:
    made = tool(len, description="Count the items.")
    assert made.invoke({"obj": [1, 2, 3]}).output == 3


# -- methods -------------------------------------------------------------------------------------


def test_a_method_tool_is_bound_per_instance(defs: types.ModuleType) -> None:
    counter = defs.Counter(5)
    bumped = counter.bump
    assert bumped is not defs.Counter.bump and bumped.binds is None
    assert "self" not in bumped.input_schema["properties"]
    result = run(bumped, {"by": 2})
    assert result.output == {"start": 7} and counter.start == 7
    assert bumped.output_schema is not None and bumped.output_schema["$ref"] == "#/$defs/Counter"
    assert counter.copy.output_schema == bumped.output_schema  # -> "Counter", read once bound


def test_an_unbound_method_is_refused_with_the_fix(defs: types.ModuleType) -> None:
    for unbound in (defs.Counter.bump, tool(defs.Counter.add)):
        assert "self" not in unbound.input_schema["properties"]
        with pytest.raises(ToolDefinitionError, match=r"Toolbox\.from_object"):
            Toolbox([unbound])


def test_bound_methods_class_and_static_methods(defs: types.ModuleType) -> None:
    counter = defs.Counter(1)
    add = tool(counter.add)
    assert set(add.input_schema["properties"]) == {"by"}
    assert run(add, {"by": 4}).output == 5
    made = defs.Counter.starting_at
    assert set(made.input_schema["properties"]) == {"start"}
    assert run(made, {"start": 9}).output == {"start": 9}
    assert run(counter.starting_at, {"start": 3}).output == {"start": 3}  # the class's, from an instance
    assert run(defs.Counter.zero, {}).output == 0 and counter.zero is defs.Counter.zero
    assert defs.Counter.zero() == 0 and counter.bump(1) is counter  # still callable as written
    scale = tool(defs.Counter.scale)  # a plain function once read from the class: its class says it is static
    assert set(scale.input_schema["properties"]) == {"x", "factor"} and run(scale, {"x": 3}).output == 6


def test_classmethod_over_tool_binds_the_class() -> None:
    class Maker:
        @classmethod  # the other order from the documented one
        @tool
        def make(cls, n: int) -> int:
            """Make n."""
            return n * 2

    made = tool(Maker.make)
    assert set(made.input_schema["properties"]) == {"n"}
    assert run(made, {"n": 4}).output == 8


# -- sets, recursion, closed models, validators --------------------------------------------------


def test_sets_hold_only_hashable_items(defs: types.ModuleType) -> None:
    made = tool(defs.sized)
    assert made.input_schema["properties"]["anything"]["items"] == {"type": ["string", "number", "boolean", "null"]}
    assert run(made, {"items": [[1, 2], [3]], "anything": ["a", 1]}).output == 4
    assert run(made, {"items": [[1, 2], [2, 1]], "anything": []}).status == "failed"  # one frozenset, sent twice
    assert run(made, {"items": [], "anything": [{"a": 1}]}).status == "failed"

    def of_dicts(s: set[dict[str, int]]) -> int:
        return len(s)

    with pytest.raises(ToolDefinitionError, match="unhashable"):
        tool(of_dicts)


def test_a_recursive_pydantic_model_is_an_argument_and_a_result(defs: types.ModuleType) -> None:
    made = tool(defs.tree)
    node = made.input_schema["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert node["additionalProperties"] is False
    assert made.output_schema is not None and made.output_schema["$ref"] == "#/$defs/Node"
    nested = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert run(tool(defs.depth), {"root": nested}).output == 3
    echoed = run(made, {"root": nested})
    assert echoed.status == "succeeded" and echoed.output["children"][0]["children"][0]["value"] == 3


def test_pydantic_models_are_closed_even_when_they_allow_extra(defs: types.ModuleType) -> None:
    made = tool(defs.ship)
    refused = run(made, {"address": {"city": "Oslo"}, "extras": [{"name": "a", "admin": True}]})
    assert refused.status == "failed" and "/extras/0" in refused.error.message
    extra = run(made, {"address": {"city": "Oslo", "zip": "0150"}})
    assert extra.status == "failed" and "zip" in extra.error.message
    assert run(made, {"address": {"city": "Oslo"}}).output == "Oslo"


def test_a_validator_message_reaches_the_model_with_its_pointer(defs: types.ModuleType) -> None:
    made = tool(defs.ship)
    result = run(made, {"address": {"city": "Nowhere"}})
    message = result.error.message
    assert "city must be a real place" in message and "/address/city" in message
    assert "$ref" not in message and '"City name"' in message  # the quoted schema stands on its own


def test_a_pydantic_default_is_shown_as_json_and_an_opaque_one_warns(defs: types.ModuleType) -> None:
    assert tool(defs.with_model_default).input_schema["properties"]["origin"]["default"] == {"x": 1, "y": 0}
    with pytest.warns(ToolDefinitionWarning, match="marker"):
        made = tool(defs.with_plain_default)
    assert "default" not in made.input_schema["properties"]["marker"]


def test_a_tool_without_a_description_warns(defs: types.ModuleType) -> None:
    with pytest.warns(ToolDefinitionWarning, match="no description"):
        tool(defs.undocumented)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool(defs.undocumented, description="Echo x.")


def test_nested_types_carry_their_own_documentation(defs: types.ModuleType) -> None:
    made = tool(defs.send)
    shipment, recipient, slot = (made.input_schema["$defs"][name] for name in ("Shipment", "Recipient", "Slot"))
    assert shipment["description"].startswith("A parcel to send.")
    assert shipment["properties"]["weight"]["description"] == "Kilograms, rounded up."
    assert shipment["properties"]["note"]["description"] == "Printed on the label."  # the attribute docstring wins
    assert recipient["description"] == "Who receives the parcel."
    assert recipient["properties"]["name"]["description"] == "Full name, as on the door."
    assert recipient["properties"]["phone"]["description"] == "With the country code"  # the Field's own wins
    assert slot["description"] == "A delivery slot."
    assert slot["prefixItems"][0]["description"] == "ISO weekday name."
    assert "description" not in slot["prefixItems"][1]


# -- unions pick the exact member ----------------------------------------------------------------


def test_unions_keep_a_value_a_member_takes_exactly(defs: types.ModuleType) -> None:
    made = tool(defs.unions)
    assert run(made, {"a": 3, "b": 2, "c": 1, "d": 1}).output == ["int", "int", "int", "int"]
    assert run(made, {"a": 3.5, "b": 1, "c": 1.5, "d": 1.5}).output == ["float", "int", "float", "float"]
    assert run(made, {"a": 4, "b": 2, "c": 1, "d": 1}).output[0] == "float"  # not a Literal value
    assert run(made, {"a": 1, "b": True, "c": 1, "d": 1}).status == "failed"  # an int enum refuses true


@given(st.lists(st.one_of(st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False))))
def test_a_number_union_keeps_the_class_sent(values: list[int | float]) -> None:
    def numbers(xs: list[float | int], ys: list[int | float]) -> list[list[str]]:
        """Classes."""
        return [[type(x).__name__ for x in xs], [type(y).__name__ for y in ys]]

    sent = [type(value).__name__ for value in values]
    assert run(tool(numbers), {"xs": values, "ys": values}).output == [sent, sent]


def test_invoke_runs_one_call_like_dispatch() -> None:
    @tool
    def halve(n: int) -> float:
        """Halve n."""
        return n / 2

    assert halve.invoke({"n": 3}).output == 1.5
    assert halve.invoke('{"n": 4}').output == 2.0
    bad = halve.invoke({"n": "4"})
    assert bad.status == "failed" and bad.call_id and "/n" in bad.error.message


# -- what an adversarial review found ------------------------------------------------------------


def test_a_failing_default_factory_fails_its_call_alone() -> None:
    def boom() -> int:
        raise ZeroDivisionError("the factory's own fault")

    @tool
    def g(a: int = Field(default_factory=boom)) -> int:
        """G."""
        return a

    @tool
    def ok(x: int = 1) -> int:
        """Ok."""
        return x

    for strict, omitted in ((False, {}), (True, None)):  # strict mode sends null for what it leaves out
        calls = [
            ToolCall(id="1", name="ok", arguments={} if omitted is not None else {"x": None}),
            ToolCall(id="2", name="g", arguments={} if omitted is not None else {"a": None}),
        ]
        results = Dispatcher(Toolbox([g, ok]), strict=strict).dispatch_many(calls)
        assert [(r.call_id, r.status) for r in results] == [("1", "succeeded"), ("2", "failed")]
        assert results[1].error.code == "tool_error" and "ZeroDivision" not in results[1].error.message
    assert asyncio.run(g.ainvoke({})).status == "failed" and g.invoke({"a": 3}).output == 3


def test_the_receiver_is_found_by_place_not_name() -> None:
    class Service:
        @tool
        def method(this, x: int) -> str:
            """Method."""
            return f"{type(this).__name__}:{x}"

        @tool
        @classmethod
        def build(klass, x: int) -> str:
            """Build."""
            return f"{klass.__name__}:{x}"

        @tool
        @staticmethod
        def repeat(cls: str, n: int = 1) -> str:
            """Repeat a text (a parameter that happens to be called cls)."""
            return cls * n

    service = Service()
    assert set(service.method.input_schema["properties"]) == {"x"}
    smuggled = run(service.method, {"this": "chosen by the model", "x": 1})
    assert smuggled.status == "failed" and "this" in smuggled.error.message
    assert run(service.method, {"x": 1}).output == "Service:1"
    assert (
        run(Service.build, {"x": 2}).output == "Service:2" and "klass" not in Service.build.input_schema["properties"]
    )
    for made in (Service.repeat, service.repeat, tool(Service.repeat)):
        assert set(made.input_schema["properties"]) == {"cls", "n"}
        assert run(made, {"cls": "ab", "n": 2}).output == "abab"


def test_a_secret_a_partial_binds_is_still_a_secret() -> None:
    def call_api(query: str, *, key: Annotated[str, Injected("api_key", secret=True)] = "") -> str:
        """Call the API."""
        return f"{query} with {key}"

    secret = "sk-bound-by-partial-0123456789"
    for made in (tool(functools.partial(call_api, key=secret)), tool(functools.partial(call_api, "q", key=secret))):
        arguments = {"query": "q"} if "query" in made.input_schema["properties"] else {}
        result = run(made, arguments)
        assert result.status == "succeeded" and secret[:8] not in result.text() and "redacted" in result.text()


def test_a_mutable_field_default_is_fresh_for_each_call() -> None:
    @tool
    def tag(tags: list[str] = Field(default=[]), meta: dict[str, int] = Field(default={})) -> int:  # noqa: B008
        """Tag."""
        tags.append("x")
        meta["n"] = len(tags)
        return len(tags)

    assert [tag.invoke({}).output for _ in range(3)] == [1, 1, 1]


def test_field_aliases_and_defaults_meet_as_pydantic_reads_them() -> None:
    @tool
    def aliased(a: Annotated[int, Field(alias="A", ge=0)] = Field(6)) -> int:
        """Aliased, with the default's Field."""
        return a

    assert aliased.input_schema["properties"] == {"A": {"type": "integer", "minimum": 0, "default": 6}}
    assert run(aliased, {"A": 3}).output == 3 and run(aliased, {}).output == 6

    def choices(a: int = Field(validation_alias=AliasChoices("x", "y"))) -> int:
        """Choices."""
        return a

    def empty(a: int = Field(alias="")) -> int:
        """Empty."""
        return a

    for refused in (choices, empty):
        with pytest.raises(ToolDefinitionError, match="alias"):
            tool(refused)

    @tool
    def injected(key: Annotated[str, Injected("key"), Field(default="fallback")]) -> str:
        """Injected, with a Field default."""
        return key

    assert run(injected, {}).output == "fallback" and run(injected, {}, inject={"key": "given"}).output == "given"


def test_set_items_that_do_not_hash_or_would_merge_are_refused() -> None:
    class Row(NamedTuple):
        name: str
        cells: list[int]

    def rows(items: set[Row]) -> int:
        """Rows."""
        return len(items)

    with pytest.raises(ToolDefinitionError, match="holding arrays"):
        tool(rows)

    @tool
    def numbers(a: set[bool | int], b: set = set()) -> int:  # noqa: B006
        """Numbers."""
        return len(a) + len(b)

    assert run(numbers, {"a": [True, 1]}).status == "failed"
    assert run(numbers, {"a": [1, 2], "b": [True, 1]}).status == "failed"
    assert run(numbers, {"a": [True, 2], "b": ["x"]}).output == 3


def test_validate_output_on_a_method_returning_self_is_checked_once_bound() -> None:
    @dataclasses.dataclass
    class Box:
        size: int

        @tool(validate_output=True)
        def grown(self, by: int) -> Self:
            """Grow."""
            return Box(self.size + by) if by >= 0 else "shrunk"  # type: ignore[return-value]

    box = Box(1)
    assert run(box.grown, {"by": 2}).output == {"size": 3}
    assert run(box.grown, {"by": -1}).error.code == "invalid_output"


def test_unions_of_containers_keep_a_value_a_member_takes_as_it_is() -> None:
    @tool
    def shapes(a: list[float] | list[int], b: dict[str, float] | dict[str, int], c: list[int] | list[float]) -> list:
        """Report the classes the items arrive as."""
        return [type(a[0]).__name__, type(b["k"]).__name__, type(c[0]).__name__]

    assert run(shapes, {"a": [1, 2], "b": {"k": 1}, "c": [1.5]}).output == ["int", "int", "float"]
    assert run(shapes, {"a": [1.5], "b": {"k": 1.5}, "c": [1]}).output == ["float", "float", "int"]


# -- a plain function's parameters, read from its code object ---------------------------------------

_KINDS = ("positional_only", "positional", "varargs", "keyword_only", "varkw")


@st.composite
def _parameter_lists(draw: st.DrawFn) -> str:
    """The source of a function with a random mix of parameter kinds and defaults, in a legal order."""
    counts = {kind: draw(st.integers(0, 1 if kind in ("varargs", "varkw") else 3)) for kind in _KINDS}
    names = iter(f"p{n}" for n in range(20))
    parts: list[str] = []
    defaulted = False  # once a positional parameter has a default, every later positional one needs one
    for kind in ("positional_only", "positional"):
        for _ in range(counts[kind]):
            defaulted = defaulted or draw(st.booleans())
            parts.append(f"{next(names)}: int" + (f" = {draw(st.integers(-3, 3))}" if defaulted else ""))
        if kind == "positional_only" and counts[kind]:
            parts.append("/")
    if counts["varargs"]:
        parts.append(f"*{next(names)}: int")
    elif counts["keyword_only"]:
        parts.append("*")
    for _ in range(counts["keyword_only"]):
        parts.append(f"{next(names)}: str" + (" = 'x'" if draw(st.booleans()) else ""))
    if counts["varkw"]:
        parts.append(f"**{next(names)}: int")
    local = draw(st.booleans())  # a local variable, which the code object lists after the parameters
    return f"def f({', '.join(parts)}):\n    {'inner = 1' if local else 'pass'}\n"


@given(_parameter_lists())
def test_a_functions_parameters_are_read_as_inspect_reads_them(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    fn = namespace["f"]
    read = callables._function_parameters(fn)
    expected = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert [tuple(parameter) for parameter in read] == expected


def test_a_wrapped_or_re_signed_function_is_read_through_inspect() -> None:
    def inner(a: int, b: str = "x") -> str:
        """Join."""
        return f"{a}{b}"

    @functools.wraps(inner)
    def outer(*args: Any, **kwargs: Any) -> str:
        return inner(*args, **kwargs)

    assert tool(outer).input_schema["required"] == ["a"]  # the wrapped function's, not *args/**kwargs
    assert list(tool(outer).input_schema["properties"]) == ["a", "b"]
