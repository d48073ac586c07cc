"""Whether one schema's values fit another: what a call plan checks before any step runs.

A plan passes (part of) one tool's output to another tool's parameter (`tinytools._run.call_plans`).
Before anything runs, the output schema at the pointer the plan names (`output_at`) is compared
with the parameter's schema (`misfit`). The comparison is of JSON types, constants and shapes, and
errs on the side of refusing: a value that may be of a type the parameter does not take (``number``
into ``integer``, a nullable string into ``string``) does not fit; one whose schema says nothing
(a tool with no output schema, an object with undeclared properties) fits only a parameter that
takes anything. Constraints on a value of the right type (lengths, bounds, patterns, formats) are
left to the parameter's own check when the step is called, which reads the actual value.
"""

from __future__ import annotations

from typing import Any

from tinytools._schema.fragments import def_name, json_type, same_json
from tinytools._schema.validation_failures import escape, unescape

__all__ = ["STEPS", "UNKNOWN", "Document", "misfit", "output_at"]

UNKNOWN: dict[str, Any] = {}
"""The schema of a value nothing is known of (it takes any JSON value)."""

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_DEPTH = 64
"""How deep a pointer or a comparison goes (a deeper shape fits only a parameter that takes anything)."""


class Document:
    """A schema with its definitions, so its ``$ref`` s can be followed."""

    __slots__ = ("definitions",)

    def __init__(self, root: dict[str, Any]):
        definitions = root.get("$defs")
        self.definitions: dict[str, Any] = definitions if isinstance(definitions, dict) else {}

    def resolve(self, node: Any) -> Any:
        """``node`` with its references followed (an unresolvable one: `UNKNOWN`)."""
        for _ in range(len(self.definitions) + 1):
            if not isinstance(node, dict) or "$ref" not in node:
                return node
            name = def_name(node["$ref"])
            if name is None:
                return UNKNOWN
            node = self.definitions.get(name, UNKNOWN)
        return UNKNOWN


def output_at(root: dict[str, Any] | None, pointer: str) -> tuple[Document, Any] | str:
    """The schema of the value at ``pointer`` in a value of schema ``root`` (with its document); or why there is none.

    Unlike `tinytools._schema.fragments.schema_at` (one subschema that describes a place, for an
    error to quote), it says why a pointer cannot be (the value has no such place), and keeps
    every branch of a union that may hold the place, so that each is compared.

    `UNKNOWN` where the schema does not say (no schema, an undeclared property of an open object).
    A text when the schema rules the pointer out: a property a closed object does not have, an
    index into something that is not an array.
    """
    if root is None:
        return Document({}), UNKNOWN
    document = Document(root)
    node: Any = root
    walked = ""
    for token in _tokens(pointer):
        node = _child(document, document.resolve(node), token, _DEPTH)
        if isinstance(node, str):
            return f"{walked or 'the output'} {node}"
        walked += "/" + escape(token)
    return document, node


def misfit(target_root: dict[str, Any], target: Any, source: tuple[Document, Any]) -> str | None:
    """Why a value of schema ``source`` (from `output_at`) may not fit ``target`` (a subschema of ``target_root``).

    None if it fits. The comparison follows references on both sides as it goes; a pair of
    subschemas met again (a recursive type) is taken to fit as far as the rest goes, and a
    comparison past `STEPS` pairs of subschemas refuses (the schemas are too large to compare).
    """
    document, node = source
    return _Comparison(Document(target_root), document).misfit(target, node, _DEPTH)


STEPS = 10_000
"""How many pairs of subschemas one comparison looks at, at most."""


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    return [unescape(part) for part in pointer[1:].split("/")]


def _child(document: Document, node: Any, token: str, depth: int) -> Any:
    """The schema one step down at ``token``, `UNKNOWN`, or why the step cannot be taken."""
    if not isinstance(node, dict) or not node or depth <= 0:
        return UNKNOWN
    branches = node.get("anyOf", node.get("oneOf"))
    if isinstance(branches, list):
        found = [_child(document, document.resolve(branch), token, depth - 1) for branch in branches]
        kept = [item for item in found if not isinstance(item, str)]
        if not kept:
            return found[0] if found else UNKNOWN
        return kept[0] if len(kept) == 1 else {"anyOf": kept}
    types = _types(node)
    if types is not None and "object" in types and "array" not in types:
        properties = node.get("properties", {})
        if token in properties:
            return properties[token]
        extra = node.get("additionalProperties", True)
        if extra is False:
            return f"has no property {token!r}"
        return extra if isinstance(extra, dict) else UNKNOWN
    if types is not None and "array" in types and "object" not in types:
        if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
            return f"is an array: {token!r} is not an index"
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and int(token) < len(prefix):
            return prefix[int(token)]
        items = node.get("items", True)
        if items is False:
            return f"has no item {token}"
        return items if isinstance(items, dict) else UNKNOWN
    if types is not None and not types & {"object", "array"}:
        return f"is {_a('/'.join(sorted(types, key=_TYPES.index)))}: it has no {token!r}"
    return UNKNOWN


def _types(node: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema's values may have, from ``type``, ``const`` or ``enum``; None when any."""
    if "const" in node:
        return {json_type(node["const"])}
    if isinstance(node.get("enum"), list):
        return {json_type(value) for value in node["enum"]}
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    return None


def _values(node: dict[str, Any]) -> list[Any] | None:
    """The only values a schema allows (``const`` or ``enum``), or None."""
    if "const" in node:
        return [node["const"]]
    enum = node.get("enum")
    return enum if isinstance(enum, list) else None


def _branches(node: dict[str, Any]) -> list[Any] | None:
    found = node.get("anyOf", node.get("oneOf"))
    return found if isinstance(found, list) else None


class _Comparison:
    """One comparison of a source schema with a target schema, each in its own document."""

    __slots__ = ("seen", "source", "steps", "target")

    def __init__(self, target: Document, source: Document):
        self.target = target
        self.source = source
        self.seen: set[tuple[int, int]] = set()
        self.steps = STEPS

    def misfit(self, target: Any, source: Any, depth: int) -> str | None:
        target, source = self.target.resolve(target), self.source.resolve(source)
        if target is True or target == {} or _takes_anything(target):
            return None
        if target is False:
            return "the parameter takes no value"
        if not isinstance(source, dict) or source == {} or depth <= 0:
            return "nothing is declared of the value, and the parameter does not take every value"
        pair = (id(target), id(source))
        if pair in self.seen:  # met again through a recursive type: the first meeting decides
            return None
        self.steps -= 1
        if self.steps < 0:
            return "the schemas are too large to compare"
        self.seen.add(pair)
        sources = _branches(source)
        if sources is not None:  # every value the source may be must fit
            for branch in sources:
                problem = self.misfit(target, branch, depth - 1)
                if problem is not None:
                    return problem
            return None
        targets = _branches(target)
        if targets is not None:  # some branch takes every value of the source
            problems = [self.misfit(branch, source, depth - 1) for branch in targets]
            return None if None in problems else problems[0]
        return self.one(target, source, depth)

    def one(self, target: dict[str, Any], source: dict[str, Any], depth: int) -> str | None:
        """Two subschemas, neither a union: their types, their constants, their items or properties."""
        wanted, given = _types(target), _types(source)
        if given is None:
            return "nothing is declared of the value's type" if wanted is not None else None
        if wanted is not None:
            for kind in sorted(given, key=_TYPES.index):
                if kind not in wanted and not (kind == "integer" and "number" in wanted):
                    return f"the value may be {_a(kind)}, which the parameter does not take ({_listed(wanted)})"
        allowed = _values(target)
        if allowed is not None:
            offered = _values(source)
            if offered is None:
                return f"the value may be other than {_listed_values(allowed)}"
            stray = [value for value in offered if not any(same_json(value, each) for each in allowed)]
            if stray:
                return f"the value may be {stray[0]!r}, not one of {_listed_values(allowed)}"
            return None
        if "array" in given and isinstance(target.get("items"), dict):
            problem = self.misfit(target["items"], source.get("items", UNKNOWN), depth - 1)
            if problem is not None:
                return f"an item: {problem}"
        if "object" in given:
            return self.object_misfit(target, source, depth)
        return None

    def object_misfit(self, target: dict[str, Any], source: dict[str, Any], depth: int) -> str | None:
        """Two object schemas: the required properties, each declared property's schema, the extra keys."""
        needed = target.get("required", [])
        present = set(source.get("required", []))
        for name in needed if isinstance(needed, list) else []:
            if name not in present:
                return f"the value may lack the property {name!r}, which the parameter requires"
        properties = target.get("properties", {})
        declared = source.get("properties", {})
        for name, schema in properties.items() if isinstance(properties, dict) else ():
            if name in declared or name in present:
                problem = self.misfit(schema, declared.get(name, UNKNOWN), depth - 1)
                if problem is not None:
                    return f"its property {name!r}: {problem}"
        if target.get("additionalProperties", True) is False:
            extra = source.get("additionalProperties", True)
            stray = [name for name in declared if name not in properties]
            if stray:
                return f"the value has the property {stray[0]!r}, which the parameter does not take"
            if extra is not False:
                return "the value may have properties the parameter does not take"
        return None


def _takes_anything(target: Any) -> bool:
    return isinstance(target, dict) and not (
        target.keys() & {"type", "const", "enum", "anyOf", "oneOf", "allOf", "not", "$ref", "if"}
    )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _listed(kinds: set[str]) -> str:
    return ", ".join(sorted(kinds, key=_TYPES.index))


def _listed_values(values: list[Any]) -> str:
    shown = ", ".join(repr(value) for value in values[:5])
    return shown + (", ..." if len(values) > 5 else "")
