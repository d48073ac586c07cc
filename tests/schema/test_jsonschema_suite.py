"""The official JSON Schema Test Suite (draft 2020-12) against `compile_validator`.

A group whose schema `compile_validator` refuses with `SchemaError` is fine: that is failing
closed. Every accepted group must agree with every one of its cases, as the root and as each
argument of an arguments object (whose root checks every argument in one pass, failing or not).

Refused when this was written (269 of 383 groups accepted), and why:

- anchor.json 3/4, dynamicRef.json 21/21, refRemote.json 15/15: ``$id`` (beside an ``$anchor``),
  ``$dynamicRef`` and remote references are refused; a plain ``$anchor`` is followed.
- ref.json 22/36: ``$id``-based or remote references (local ``#/...`` pointers are accepted).
- defs.json 1/1, vocabulary.json 2/2: they reference or declare other meta-schemas.
- unevaluatedProperties.json 22/44, unevaluatedItems.json 16/29, not.json 1/9:
  ``unevaluated*`` beside in-place applicators (or beside ``contains``), or with ``$id``.
- minContains.json 5/8, maxContains.json 4/5: counting ``contains`` beyond 0 or 1.
- pattern.json 1/3, patternProperties.json 1/6: ``\\p{Letter}`` has no Python ``re`` equivalent.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tinytools._errors import ArgumentsError, SchemaError
from tinytools._schema.input_schema import compile_validator

SUITE = Path(__file__).with_name("jsonschema_test_suite") / "draft2020-12"
GROUPS: list[tuple[str, int, dict[str, Any]]] = [
    (path.stem, index, group)
    for path in sorted(SUITE.glob("*.json"))
    for index, group in enumerate(json.loads(path.read_text(encoding="utf-8")))
]


def test_the_suite_is_here() -> None:
    assert len(GROUPS) == 383  # every group of the 2020-12 cases kept in tests/schema/jsonschema_test_suite


def accepts(schema: Any) -> bool:
    try:
        compile_validator(schema)
    except SchemaError:
        return False
    return True


@pytest.mark.parametrize(
    "group",
    [group for _, _, group in GROUPS],
    ids=[f"{stem}[{index}] {group['description'][:60]}" for stem, index, group in GROUPS],
)
def test_accepted_group_agrees_with_every_case(group: dict[str, Any]) -> None:
    try:
        validate = compile_validator(group["schema"])
    except SchemaError:
        return  # refused: fail closed
    for case in group["tests"]:
        data = copy.deepcopy(case["data"])
        try:
            validate(data)
            valid = True
        except ArgumentsError:
            valid = False
        assert valid == case["valid"], case["description"]
        assert data == case["data"], "validation must never modify the arguments"


def test_most_groups_are_accepted() -> None:
    accepted = sum(accepts(group["schema"]) for _, _, group in GROUPS)
    assert accepted >= 260, f"only {accepted} of {len(GROUPS)} groups accepted"


FULLY_ACCEPTED = [
    "additionalProperties", "allOf", "anyOf", "boolean_schema", "const", "contains", "content",
    "default", "dependentRequired", "dependentSchemas", "enum", "exclusiveMaximum",
    "exclusiveMinimum", "format", "if-then-else", "infinite-loop-detection", "items", "maxItems",
    "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum",
    "multipleOf", "oneOf", "prefixItems", "properties", "propertyNames", "required", "type",
    "uniqueItems",
]  # fmt: skip


@pytest.mark.parametrize("stem", FULLY_ACCEPTED)
def test_keyword_family_is_accepted(stem: str) -> None:
    groups = [group for name, _, group in GROUPS if name == stem]
    refused = [group["description"] for group in groups if not accepts(group["schema"])]
    assert groups
    assert not refused


@pytest.mark.parametrize(
    ("stem", "at_least"),
    [("ref", 14), ("not", 8), ("pattern", 2), ("patternProperties", 5),
     ("unevaluatedProperties", 22), ("unevaluatedItems", 13), ("minContains", 3)],
)  # fmt: skip
def test_keyword_family_is_mostly_accepted(stem: str, at_least: int) -> None:
    groups = [group for name, _, group in GROUPS if name == stem]
    assert sum(accepts(group["schema"]) for group in groups) >= at_least


def test_the_plain_name_anchor_group_is_accepted() -> None:
    anchored = [group for stem, _, group in GROUPS if stem == "anchor" and "$id" not in json.dumps(group["schema"])]
    assert anchored and all(accepts(group["schema"]) for group in anchored)


def _as_arguments(schema: Any) -> dict[str, Any] | None:
    """An ordered arguments object (what `@tool` makes) of two arguments of ``schema``, or None when it cannot be moved.

    The dialect is the root's to declare; a schema that names its own root otherwise (a
    reference, an anchor, an id) means something else one level down.
    """
    if isinstance(schema, dict):
        schema = {key: value for key, value in schema.items() if key != "$schema"}
    text = json.dumps(schema)
    if any(mark in text for mark in ('"$ref"', '"$defs"', '"$anchor"', '"$schema"', '"$id"', '"$dynamic')):
        return None
    return {
        "type": "object",
        "properties": {"first": schema, "second": schema},
        "required": ["first", "second"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    "group",
    [group for _, _, group in GROUPS],
    ids=[f"{stem}[{index}] {group['description'][:60]}" for stem, index, group in GROUPS],
)
def test_every_group_holds_for_each_argument_of_an_ordered_object(group: dict[str, Any]) -> None:
    """The root of an arguments object checks every argument in its one pass: each case, as both arguments."""
    schema = _as_arguments(group["schema"])
    if schema is None:
        return
    try:
        validate = compile_validator(schema)
    except SchemaError:
        return  # refused: fail closed
    for case in group["tests"]:
        data = {"first": copy.deepcopy(case["data"]), "second": copy.deepcopy(case["data"])}
        try:
            validate(data)
            named: list[str | None] = []
        except ArgumentsError as error:
            named = [each.parameter for each in error.errors]
        if case["valid"]:
            assert named == [], case["description"]
        else:  # both arguments, the first's problems (one or more) before the second's
            assert named and set(named) == {"first", "second"}, case["description"]
            assert named == sorted(named, key=["first", "second"].index), case["description"]
