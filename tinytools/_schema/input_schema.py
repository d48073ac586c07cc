r"""The portable schema envelope: parse, refuse what cannot be enforced, compile, validate.

`InputSchema` owns one tool's canonical input schema (JSON Schema 2020-12, root a closed
object). What the model sees is what is enforced: every keyword of an accepted schema is
checked by the compiled validator, and a schema that cannot be checked exactly is refused with
`SchemaError` when it is parsed. Validation runs on fastjsonschema's draft-07 code generator
over a translated copy (``prefixItems``, ``dependent*``, ``$ref`` beside other keywords,
ECMA-262 patterns and an exact ``multipleOf`` are rewritten); `InputSchema.schema` keeps the
original text, which is what providers are shown.

``format`` and ``content*`` are annotations in 2020-12 and are not asserted, and so are a
vendor's own keywords, named with an ``x-`` prefix (``x-unit``, ``x-fastmcp-wrap-result``): they
stay in the schema providers are shown and are left out of the validator. A plain-name anchor
(``$anchor``) is kept; a reference to it is written as the JSON pointer it stands for
(`tinytools._schema.anchors`). ``$id``,
dynamic anchors, dynamic and remote references, ``min/maxContains`` beyond 0/1 and ``unevaluated*`` next to
in-place applicators are refused. Patterns follow ECMA-262 with the ``u`` flag (see
`tinytools._schema.patterns`); constructs whose meaning differs are refused. Code generation lives in
`tinytools._schema.codegen`, and the mapping of failures to `ArgumentsError` in
`tinytools._schema.validation_failures`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from tinytools._errors import ArgumentsError, SchemaError, shorten, unless_failed
from tinytools._errors import echo as _echo
from tinytools._public import publish
from tinytools._schema.keyword_order import in_keyword_order
from tinytools._schema.validation_failures import escape as _escape

__all__ = ["InputSchema", "compile_validator"]

MAX_SCHEMA_DEPTH = 128
"""Deepest nesting of objects and arrays accepted in a schema document."""

_HOIST_LEVEL = 8  # deeper subschemas get their own function: Python caps nested blocks at 20
_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_KINDS = {
    "schema": "not if then else additionalProperties propertyNames items contains contentSchema "
    "unevaluatedProperties unevaluatedItems",
    "schemas": "allOf anyOf oneOf prefixItems",
    "schema_map": "properties patternProperties dependentSchemas $defs definitions",
    "count": "maxLength minLength maxItems minItems maxContains minContains maxProperties minProperties",
    "number": "maximum exclusiveMaximum minimum exclusiveMinimum",
    "positive": "multipleOf",
    "string": "title description $comment format contentMediaType contentEncoding pattern $ref $schema $anchor",
    "bool": "uniqueItems deprecated readOnly writeOnly",
    "array": "enum examples",
    "names": "required",
    "names_map": "dependentRequired",
    "type": "type",
    "any": "default const",
}
_KIND = {keyword: kind for kind, keywords in _KINDS.items() for keyword in keywords.split()}
_ANNOTATIONS = {
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "format",
    "contentMediaType", "contentEncoding", "contentSchema", "$comment", "$schema", "$defs",
    "definitions", "$anchor",
}  # fmt: skip
_IN_PLACE = {"allOf", "anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "$ref"}
_IN_PLACE_OR_NOT = _IN_PLACE | {"not"}
_SUBSCHEMA_KINDS = frozenset({"schema", "schemas", "schema_map"})
_REWRITTEN = frozenset(
    {"unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains", "contains", "prefixItems", "items"}
    | {"dependentRequired", "dependentSchemas", "pattern", "patternProperties", "required", "additionalProperties"}
    | {"$ref"}
)  # a node with none of these translates to itself
_REFUSED = {
    "$id": "$id is not supported; refer to subschemas with local '#/...' pointers",
    "$dynamicRef": "$dynamicRef cannot be enforced",
    "$dynamicAnchor": "$dynamicAnchor cannot be enforced",
    "dependencies": "'dependencies' is not 2020-12; use dependentRequired or dependentSchemas",
    "additionalItems": "'additionalItems' is not 2020-12; use prefixItems with items",
}
_UNEVALUATED = (("unevaluatedProperties", "additionalProperties"), ("unevaluatedItems", "items"))
_TRUE_IS_NO_OP = {"items", "additionalItems", "additionalProperties"}
_TYPES = {"null", "boolean", "object", "array", "number", "integer", "string"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _names(value: Any) -> bool:
    strings = isinstance(value, list) and all(isinstance(name, str) for name in value)
    return strings and len(set(value)) == len(value)


def _types(value: Any) -> bool:
    if value.__class__ is str:
        return value in _TYPES
    return isinstance(value, list) and _names(value) and bool(value) and set(value) <= _TYPES


_VALID: dict[str, Callable[[Any], bool]] = {
    "schemas": lambda v: isinstance(v, list) and bool(v),
    "schema_map": lambda v: isinstance(v, dict),
    "count": lambda v: _number(v) and v >= 0 and v == int(v),
    "number": _number,
    "positive": lambda v: _number(v) and v > 0,
    "string": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "names": _names,
    "names_map": lambda v: isinstance(v, dict) and all(map(_names, v.values())),
    "type": _types,
}


def _fail(reason: str, pointer: str) -> SchemaError:
    return SchemaError(reason, pointer=pointer)


def _json_copy(value: Any, pointer: str, depth: int = 0) -> Any:
    """Deep-copy ``value`` if it is plain, finite JSON; raise SchemaError if not."""
    if depth > MAX_SCHEMA_DEPTH:
        raise _fail(f"nested deeper than {MAX_SCHEMA_DEPTH} levels", pointer)
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(f"{value} is not a JSON number", pointer)
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_copy(v, f"{pointer}/{i}", depth + 1) for i, v in enumerate(value)]
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise _fail(f"{shorten(repr(value))} is not JSON (object keys must be strings)", pointer)
    return {k: _json_copy(v, f"{pointer}/{_escape(k)}", depth + 1) for k, v in value.items()}


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether `_json_copy` would accept ``value`` and return an equal copy of the same classes."""
    kind = value.__class__
    if depth > MAX_SCHEMA_DEPTH:
        return False
    if (kind is dict or kind is list) and value and depth >= MAX_SCHEMA_DEPTH:
        return False  # its items would be one level too deep
    if kind is dict:
        for key, item in value.items():  # a loop, not all() over a generator: every tool definition runs this
            if key.__class__ is not str:
                return False
            if item.__class__ not in _PLAIN_ATOMS and not _plain(item, depth + 1):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110 - a loop is faster than all() over a generator here
            if item.__class__ not in _PLAIN_ATOMS and not _plain(item, depth + 1):
                return False
        return True
    return kind in _PLAIN_ATOMS or (kind is float and math.isfinite(value))


_PLAIN_ATOMS = frozenset({str, int, bool, type(None)})


def _portable(pattern: str, pointer: str) -> str:
    from tinytools._schema.backtracking import backtracks  # patterns load with the first one read
    from tinytools._schema.patterns import translate_pattern

    try:
        translated = translate_pattern(pattern)
        re.compile(translated)
    except (ValueError, re.error, OverflowError, RecursionError) as exc:
        raise _fail(f"pattern {_echo(pattern)} is not portable: {exc}", pointer) from None
    if backtracks(translated):
        reason = (
            f"pattern {_echo(pattern)} can take time exponential in the text to match: a repeated part "
            "can match the same text in more than one way; write it so each repetition can match one way "
            "only (for example ^a+$ for ^(a+)+$, ^(a|b)+$ with choices that start differently)"
        )
        raise _fail(reason, pointer)
    return translated


class _Translation:
    """Check a 2020-12 schema and build the draft-07 document that fastjsonschema compiles."""

    def __init__(self) -> None:
        self.nodes: dict[str, Any] = {}  # schema pointer -> translated node, for $ref targets
        self.in_place: dict[str, list[str]] = {}  # pointer -> schemas applied to the same value
        self.refs: list[tuple[dict[str, Any], str, str]] = []
        self.definitions: dict[str, Any] = {}
        self.anchored = False  # whether a subschema has an $anchor, whose name is then checked

    def document(self, schema: Any) -> dict[str, Any]:
        root = self.schema(schema, "", 0, 0)
        names: dict[str, str] = {}
        for stub, target, pointer in self.refs:
            if target not in self.nodes:
                raise _fail(f"$ref {stub['$ref']!r} points at no schema in this document", pointer)
            if target not in names:
                names[target] = f"r{len(names)}"
                self.definitions[names[target]] = self.nodes[target]
            stub["$ref"] = f"#/definitions/{names[target]}"
        if self.refs:  # without a $ref the applicators form a tree: no loop to look for
            self.refuse_loops()
        if isinstance(root, bool):
            return {} if root else {"not": {}}
        return {**root, "definitions": self.definitions} if self.definitions else root

    def refuse_loops(self) -> None:
        """Refuse a $ref loop that never descends into the data: it would recurse forever."""
        done: dict[str, bool] = {}  # False while on the current path
        for start in self.in_place:
            stack = [] if start in done else [(start, iter(self.in_place[start]))]
            done.setdefault(start, False)
            while stack:
                child = next(stack[-1][1], None)
                if child is None:
                    done[stack.pop()[0]] = True
                elif done.get(child) is False:
                    raise _fail("$ref loop that never descends into the data", child)
                elif child not in done:
                    done[child] = False
                    stack.append((child, iter(self.in_place.get(child, ()))))

    def schema(self, node: Any, pointer: str, depth: int, level: int) -> Any:
        if not isinstance(node, (bool, dict)):
            raise _fail("a schema must be an object or a boolean", pointer)
        if depth > MAX_SCHEMA_DEPTH:
            raise _fail(f"schemas nest deeper than {MAX_SCHEMA_DEPTH} levels", pointer)
        hoist = level >= _HOIST_LEVEL
        inner = 1 + level % _HOIST_LEVEL
        out = node if isinstance(node, bool) else self.keywords(node, pointer, depth, inner)
        self.nodes[pointer] = out
        if not hoist or not isinstance(out, dict) or not out:
            return out
        self.definitions[f"h{len(self.definitions)}"] = out
        return {"$ref": f"#/definitions/h{len(self.definitions) - 1}"}

    def keywords(self, node: dict[str, Any], pointer: str, depth: int, level: int) -> Any:
        out: dict[str, Any] = {}
        self.in_place[pointer] = []
        if "$anchor" in node:
            self.anchored = True
        for keyword, value in node.items():
            kind = _KIND.get(keyword, "")
            if not kind:
                if keyword.startswith("x-"):  # a vendor's annotation: shown as given, nothing to enforce
                    continue
                raise _fail(_REFUSED.get(keyword, f"unknown keyword {keyword!r}"), f"{pointer}/{_escape(keyword)}")
            if kind == "string" and value.__class__ is str:  # the commonest keywords: description, title
                if keyword in _ANNOTATIONS:
                    continue
            else:
                check = _VALID.get(kind)
                if check is not None and not check(value):
                    raise _fail(f"invalid value for {keyword!r}: {_echo(value)}", f"{pointer}/{_escape(keyword)}")
            if kind in _SUBSCHEMA_KINDS:
                where = f"{pointer}/{_escape(keyword)}"
                value, children = self.subschemas(kind, value, where, depth, level)
                if keyword in _IN_PLACE_OR_NOT:
                    self.in_place[pointer] += children
            if keyword not in _ANNOTATIONS:
                out[keyword] = int(value) if kind == "count" else value
        if "$schema" in node and (pointer or node["$schema"].rstrip("#") != _DIALECT):
            reason = "only the 2020-12 dialect is supported, declared at the root"
            raise _fail(reason, f"{pointer}/$schema")
        return out if out.keys().isdisjoint(_REWRITTEN) else self.rewrite(out, pointer)

    def rewrite(self, out: dict[str, Any], pointer: str) -> Any:
        """Turn checked 2020-12 keywords into draft-07 ones with the same meaning.

        Only nodes with a keyword of `_REWRITTEN` come here: the others pass as they are.
        """
        for keyword, same in _UNEVALUATED:
            if keyword in out and (_IN_PLACE & out.keys() or (same == "items" and "contains" in out)):
                reason = f"{keyword} beside in-place applicators or contains cannot be enforced"
                raise _fail(reason, f"{pointer}/{keyword}")
            out.setdefault(same, out.pop(keyword, True))
        low, high = out.pop("minContains", 1), out.pop("maxContains", None)
        if "contains" in out and (high is not None or low > 1):
            raise _fail("minContains above 1 or maxContains cannot be enforced", pointer)
        if low == 0:
            out.pop("contains", None)
        prefix, items = out.pop("prefixItems", None), out.pop("items")
        out.update({"items": prefix, "additionalItems": items} if prefix else {"items": items})
        dependent = ("dependentRequired", "dependentSchemas")
        extra = [{"dependencies": out.pop(k)} for k in dependent if k in out]
        if "pattern" in out:
            out["x-pattern"] = out["pattern"]  # the original, for error messages
            out["pattern"] = _portable(out["pattern"], f"{pointer}/pattern")
        merged: dict[str, Any] = {}  # two patterns may translate to the same text
        for text, sub in out.pop("patternProperties", {}).items():
            key = _portable(text, f"{pointer}/patternProperties/{_escape(text)}")
            merged[key] = {"allOf": [merged[key], sub]} if key in merged else sub
        out.update({"patternProperties": merged} if merged else {})
        _refuse_unsatisfiable(out, pointer)
        if "$ref" in out:
            extra.insert(0, self.ref(out.pop("$ref"), pointer))
        out = {k: v for k, v in out.items() if v is not True or k not in _TRUE_IS_NO_OP}
        if len(extra) == 1 and not out:
            return extra[0]
        return {**out, "allOf": extra + out.get("allOf", [])} if extra else out

    def subschemas(self, kind: str, value: Any, where: str, depth: int, level: int) -> Any:
        """Translate the subschema(s) of one keyword; also return their pointers."""
        if kind == "schema":
            return self.schema(value, where, depth + 1, level), [where]
        keys = list(value) if kind == "schema_map" else range(len(value))
        children = [f"{where}/{_escape(k)}" for k in keys]
        done = [self.schema(value[k], p, depth + 1, level) for k, p in zip(keys, children, strict=True)]
        return dict(zip(keys, done, strict=True)) if kind == "schema_map" else done, children

    def ref(self, ref: str, pointer: str) -> dict[str, Any]:
        """Record a local reference; `document` points it at the translated target."""
        from urllib.parse import unquote

        target = unquote(ref[1:]) if ref.startswith("#") else "?"
        if target[:1] not in ("", "/"):
            raise _fail(f"$ref {ref!r} is not a local '#/...' JSON pointer", f"{pointer}/$ref")
        stub = {"$ref": ref}
        self.refs.append((stub, target, f"{pointer}/$ref"))
        self.in_place[pointer].append(target)
        return stub


def _refuse_unsatisfiable(out: dict[str, Any], pointer: str) -> None:
    """Refuse ``required`` names that ``additionalProperties: false`` forbids outright."""
    patterns, known = out.get("patternProperties", {}), out.get("properties", {})
    for name in out.get("required", []) if out.get("additionalProperties") is False else []:
        if name not in known and not any(re.search(p, name) for p in patterns):
            reason = f"required property {name!r} is forbidden by additionalProperties: false"
            raise _fail(reason, pointer)


def compile_validator(schema: Mapping[str, Any] | bool) -> Callable[[object], None]:
    """Check and compile any 2020-12 schema (no closed-object rule) into a validator.

    Returns:
        A function that returns None for valid data and raises `ArgumentsError` otherwise.

    Raises:
        SchemaError: The schema uses something the validator could not enforce exactly.
    """
    from tinytools._schema.codegen import compile_document  # with fastjsonschema: loaded on first compile

    copy, document = _translated(_json_copy(schema, ""))
    return _raising(compile_document(document, copy))


def _translated(schema: Any) -> tuple[Any, dict[str, Any]]:
    """``schema`` with references to anchors written as pointers (`tinytools._schema.anchors`), and its translation.

    Anchors are rare: they are looked for only when the translation refuses the schema or meets one.
    """
    from tinytools._schema.anchors import anchored, pointed  # loaded by the first translation

    translation = _Translation()
    try:
        document = translation.document(schema)
    except SchemaError:
        if not anchored(schema):
            raise
    else:
        if translation.anchored:
            pointed(schema)  # every reference is a pointer already: this checks the anchors' names
        return schema, document
    schema = in_keyword_order(pointed(schema))
    return schema, _Translation().document(schema)


class InputSchema:
    """One tool's canonical input schema: what the model sees, and what is enforced.

    Attributes:
        schema: The schema as given (a deep, JSON-able copy, its keywords in one order); providers
            are shown this.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | str | bytes, *, copy: bool = True) -> InputSchema:
        """Check a closed-object 2020-12 schema, given as a mapping or JSON text.

        The checks and translation run now; compiling waits for the first `validate`. `schema`
        holds the keywords of every subschema in one order (`tinytools._schema.keyword_order`),
        so equal schemas are exported as equal bytes; names in ``properties`` keep theirs.

        Args:
            raw: The schema.
            copy: False when the caller hands over ownership of ``raw``: a dict built for this
                call that nothing else refers to or changes later. If it is plain JSON (exactly
                dict, list, str, int, bool, None and finite float) it becomes `schema` as it
                is, checked but not deep-copied. JSON text is never copied.

        Raises:
            SchemaError: The root is not a closed object, or something cannot be enforced;
                ``pointer`` locates it in the schema.
        """
        if isinstance(raw, (str, bytes)):
            import json

            try:
                raw, copy = json.loads(raw, parse_constant=_refuse), False
            except (ValueError, RecursionError) as exc:
                raise _fail(f"the schema is not JSON: {exc}", "") from None
        schema = in_keyword_order(raw if not copy and _plain(raw) else _json_copy(raw, ""))
        if not isinstance(schema, dict) or schema.get("type") != "object":
            reason = 'the input schema must be an object schema ("type": "object")'
            raise _fail(reason, "/type" if isinstance(schema, dict) else "")
        if schema.get("additionalProperties") is not False:
            reason = 'the input schema must be closed ("additionalProperties": false)'
            raise _fail(reason, "/additionalProperties")
        if "patternProperties" in schema:
            raise _fail("arguments must be named in properties", "/patternProperties")
        return cls(_translated(schema)[0])

    @classmethod
    def built(cls, schema: dict[str, Any]) -> InputSchema:
        """A schema `@tool` built of parts the validator enforces as they stand, taken without `parse`'s check.

        `tinytools._schema.hints.SchemaBuilder` says which schemas those are (plain types, numeric
        bounds, descriptions), and builds them with their keywords in order; one that is not plain
        JSON (a default of ``inf``) is checked by `parse` after all. The validator is compiled, as
        always, by the first `check`.
        """
        return cls(schema) if _plain(schema) else cls.parse(schema, copy=False)

    @property
    def properties(self) -> dict[str, Any]:
        """The argument schemas by name (part of `schema`: do not modify)."""
        properties: dict[str, Any] = self.schema.get("properties", {})
        return properties

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the required arguments."""
        return tuple(self.schema.get("required", ()))

    def validate(self, arguments: object) -> None:
        """Check decoded arguments.

        Raises:
            ArgumentsError: The arguments do not match the schema (``tool`` is left None). Its
                fields describe the first failure; `ArgumentsError.errors` lists every failing
                argument, found only once the check has failed.
            SchemaError: Compiling failed; `parse` checks make this unexpected.
        """
        unless_failed(self.check(arguments))

    def check(self, arguments: object) -> ArgumentsError | None:
        """Check decoded arguments: None when they match, else the `ArgumentsError` (not raised).

        The first call compiles, then replaces this method with the compiled check.

        Raises:
            SchemaError: Compiling failed; `parse` checks make this unexpected.
        """
        from tinytools._schema.codegen import compile_document  # with fastjsonschema: loaded on first compile

        check = compile_document(_Translation().document(self.schema), self.schema)
        self.__dict__["check"] = check  # later calls go straight to the compiled check
        return check(arguments)

    def __repr__(self) -> str:
        return f"InputSchema(properties={list(self.properties)}, required={list(self.required)})"


def _raising(check: Callable[[object], ArgumentsError | None]) -> Callable[[object], None]:
    def validate(value: object) -> None:
        unless_failed(check(value))

    return validate


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON number")


publish("tinytools", InputSchema)
