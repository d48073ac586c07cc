"""Properties over generated signatures: schemas compile, values round-trip, bad values are pinned."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.run.paths import PATHS, options, run_call
from tests.strategies import HIDDEN_DEFAULT, Signature, build_tool, signatures
from tinytools import SchemaError, ToolCall, dispatch


def resolve(document: Any, pointer: str) -> Any:
    """Follow an RFC 6901 pointer; raises KeyError/IndexError when it does not exist."""
    if pointer == "":
        return document
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


@st.composite
def signature_with_values(draw: st.DrawFn, *, kinds: bool = False) -> tuple[Signature, dict[str, Any], dict[str, Any]]:
    signature = draw(signatures(kinds=kinds))
    defaults = {p.name: draw(p.case.valid) for p in signature.parameters if p.has_default}
    values = {}
    for p in signature.parameters:
        if not p.has_default or draw(st.booleans()):
            values[p.name] = draw(p.case.valid)
    return signature, defaults, values


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(signature_with_values())
def test_valid_values_validate_and_convert_back(
    case: tuple[Signature, dict[str, Any], dict[str, Any]],
) -> None:
    signature, defaults, values = case
    made, seen = build_tool(signature, defaults)
    schema_text = json.dumps(made.input_schema)
    for name in signature.injected:
        assert name not in schema_text
    assert set(made.injected) == set(signature.injected)
    payload = msgspec.json.encode(values)
    made.schema.validate(msgspec.json.decode(payload))
    inject = {name: object() for name in signature.injected}
    result = dispatch(ToolCall("p", made.name, payload), [made], inject=inject)
    assert result.status == "succeeded", result.error
    expected = {**defaults, **values}
    for p in signature.parameters:
        assert seen[p.name] == expected[p.name]
        assert type(seen[p.name]) is type(expected[p.name])
    for name in signature.injected:
        assert seen[name] is inject[name]


@st.composite
def signature_with_one_bad_value(
    draw: st.DrawFn,
) -> tuple[Signature, dict[str, Any], dict[str, Any], str]:
    signature, defaults, values = draw(signature_with_values().filter(lambda c: c[0].parameters))
    target = draw(st.sampled_from(signature.parameters))
    values = {name: msgspec.to_builtins(value) for name, value in values.items()}
    values[target.name] = draw(target.case.invalid)
    return signature, defaults, values, target.name


@SETTINGS
@given(signature_with_one_bad_value())
def test_invalid_value_is_refused_with_a_pointer_into_the_input(
    case: tuple[Signature, dict[str, Any], dict[str, Any], str],
) -> None:
    signature, defaults, values, _ = case
    made, seen = build_tool(signature, defaults)
    result = dispatch(
        ToolCall("p", made.name, msgspec.json.encode(values)),
        [made],
        inject=dict.fromkeys(signature.injected),
    )
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert seen == {}
    details = result.error.details
    assert details is not None
    resolve(values, details["pointer"])  # exists in the input
    assert details["parameter"] in values


@SETTINGS
@given(
    signature_with_values(),
    st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=3),
)
def test_unknown_keys_are_always_refused(
    case: tuple[Signature, dict[str, Any], dict[str, Any]], extra: dict[str, Any]
) -> None:
    signature, defaults, values = case
    made, seen = build_tool(signature, defaults)
    extra = {k: v for k, v in extra.items() if k not in values and k not in defaults}
    assume(extra)
    arguments = {**msgspec.to_builtins(values), **extra}
    result = dispatch(ToolCall("p", made.name, arguments), [made], inject=dict.fromkeys(signature.injected))
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert seen == {}
    assert result.error.details is not None
    assert result.error.details["pointer"].lstrip("/").replace("~1", "/").replace("~0", "~") in extra


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(signature_with_values(kinds=True), st.sampled_from(PATHS), st.booleans())
def test_every_path_gives_the_function_exactly_what_was_sent_by_name(
    case: tuple[Signature, dict[str, Any], dict[str, Any]], path: tuple[str, str], as_text: bool
) -> None:
    """Positional-only, keyword-only and injected parameters in any order: each receives its own value."""
    signature, defaults, values = case
    entry, variant = path
    made, seen = build_tool(signature, defaults)
    arguments = msgspec.to_builtins(values)
    expected = {**defaults, **values}
    if variant == "strict":
        try:
            strict = made.strict()
        except SchemaError:
            assume(False)
        for p in signature.parameters:  # a strict model sends null for what it leaves out
            if p.name not in values:
                arguments[p.name] = None
                expected[p.name] = defaults[p.name] if p.name in strict.defaults else None
    inject = {name: object() for name in signature.injected}
    payload = msgspec.json.encode(arguments) if as_text else arguments
    result = run_call(entry, [made], ToolCall("p", made.name, payload), inject=inject, **options(variant))
    assert result.status == "succeeded", result.error
    for p in signature.parameters:
        assert seen[p.name] == expected[p.name], p.name
        assert type(seen[p.name]) is type(expected[p.name]), p.name
    for name in signature.injected:
        assert seen[name] is inject[name] and seen[name] is not HIDDEN_DEFAULT
