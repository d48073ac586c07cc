"""OpenAI strict mode: a tool's input schema rendered the strict way, and the way back.

Strict mode (OpenAI Structured Outputs for function calls) takes a subset of JSON Schema in
which every object is closed and lists all its properties in ``required``. `render_strict`
turns a tool's canonical input schema into that shape, once per tool:

- every object gets ``additionalProperties: false`` and all its properties in ``required``;
- a property that was optional becomes nullable and its description says that ``null`` stands
  for the default; the ``default`` keyword itself is dropped (strict mode refuses it);
- annotations strict mode does not take (``examples``, ``$comment``, ``deprecated``, a vendor's
  ``x-`` keywords, ...) are dropped, and a ``format`` it does not know moves into the description;
- anything else it cannot take (``allOf``, ``oneOf``, ``not``, ``if``, tuples, ``uniqueItems``,
  string lengths, free-form mappings, values of any type) is refused with a `SchemaError` that
  names the tool, the parameter and the pointer.

The way back: a model in strict mode sends ``null`` for an optional argument it leaves out.
`StrictSchema.restore` removes those nulls, at any depth, so the parameter (or the field of a
nested object) takes its default exactly as if the model had omitted it; this also covers
defaults JSON cannot express. A property whose canonical schema already accepts ``null`` keeps
``null`` as its value. Arguments valid against the strict schema are, once restored, valid
against the canonical one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError, SchemaError
from tinytools._schema.fragments import def_name
from tinytools._schema.input_schema import InputSchema, compile_validator
from tinytools._schema.validation_failures import escape

__all__ = ["StrictSchema", "render_strict"]

SUPPORTED_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""String formats strict mode accepts; others move into the description."""

_KEPT = {
    "type", "description", "title", "enum", "const", "pattern", "multipleOf", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
}  # fmt: skip
_DROPPED = {
    "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "contentMediaType",
    "contentEncoding", "contentSchema", "$schema", "$anchor",
}  # fmt: skip
_HANDLED = {"properties", "required", "additionalProperties", "items", "anyOf", "$ref", "$defs", "format"}
_FIXES = {
    "allOf": "combine the schemas into one",
    "oneOf": "use anyOf where the branches cannot overlap",
    "prefixItems": "use a list or an object instead of a tuple",
    "uniqueItems": "use a list instead of a set",
    "minLength": "drop the length limit",
    "maxLength": "drop the length limit",
}
_GIVES_TYPE = ("type", "enum", "const", "anyOf", "$ref")
_DEF_PREFIX = "#/$defs/"


class _Plan:
    """Where, below one schema position, a ``null`` stands for an omitted value."""

    __slots__ = ("branches", "checks", "drop", "items", "properties", "ref")

    def __init__(self) -> None:
        self.drop: frozenset[str] = frozenset()
        self.properties: dict[str, _Plan] = {}
        self.items: _Plan | None = None
        self.ref: str | None = None
        self.branches: list[tuple[dict[str, Any], _Plan | None]] = []
        self.checks: list[Callable[[object], None]] = []  # compiled branch validators

    def empty(self) -> bool:
        return not (self.drop or self.properties or self.items or self.ref or self.branches)


class StrictSchema:
    """A tool's input schema in strict mode, with the mapping of ``null`` back to defaults.

    Attributes:
        schema: The strict rendering, as a strict provider is shown it.
        input_schema: The same, as an enforceable `InputSchema`.
        defaults: Top-level optional parameters and the default a ``null`` stands for.
    """

    def __init__(
        self,
        schema: dict[str, Any],
        plan: _Plan | None,
        defs: dict[str, _Plan | None],
        defaults: dict[str, Any],
    ):
        self.schema = schema
        self.input_schema = InputSchema.parse(schema)
        self.defaults = defaults
        self._plan = plan
        self._defs = defs

    def validate(self, arguments: object) -> None:
        """Check decoded arguments against the strict rendering.

        Raises:
            ArgumentsError: They do not match.
        """
        self.input_schema.validate(arguments)

    def check(self, arguments: object) -> ArgumentsError | None:
        """`validate`, returning the `ArgumentsError` instead of raising it."""
        return self.input_schema.check(arguments)

    def restore(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Remove each ``null`` that stands for an omitted optional value (a new dict if any).

        The arguments must already be valid against `schema`; the caller's dict is not modified.
        """
        if self._plan is None:
            return arguments
        restored: dict[str, Any] = self._restore(arguments, self._plan)
        return restored

    def _restore(self, value: Any, plan: _Plan) -> Any:
        if plan.ref is not None:
            target = self._defs.get(plan.ref)
            return value if target is None else self._restore(value, target)
        if plan.branches and value is not None:
            return self._restore_branch(value, plan)
        if isinstance(value, dict):
            return self._restore_object(value, plan)
        if isinstance(value, list) and plan.items is not None:
            items = [self._restore(item, plan.items) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    def _restore_object(self, value: dict[str, Any], plan: _Plan) -> dict[str, Any]:
        out = value
        for name in plan.drop:
            if name in out and out[name] is None:
                out = {**out} if out is value else out
                del out[name]
        for name, child in plan.properties.items():
            old = out.get(name)
            if old is not None:
                new = self._restore(old, child)
                if new is not old:
                    out = {**out} if out is value else out
                    out[name] = new
        return out

    def _restore_branch(self, value: Any, plan: _Plan) -> Any:
        """Restore by the first ``anyOf`` branch that accepts the value, as conversion picks."""
        if not plan.checks:
            defs = self.schema.get("$defs")
            documents = [{**branch, "$defs": defs} if defs else branch for branch, _ in plan.branches]
            plan.checks.extend(compile_validator(document) for document in documents)
        for check, (_, child) in zip(plan.checks, plan.branches, strict=True):
            try:
                check(value)
            except ValueError:
                continue
            return value if child is None else self._restore(value, child)
        return value


class _Renderer:
    """Render one tool's canonical schema in strict mode, building the restore plan alongside."""

    def __init__(self, tool: str, root: dict[str, Any]):
        self.tool = tool
        self.source_defs: dict[str, Any] = root.get("$defs", {})
        self.defs: dict[str, Any] = {}
        self.def_plans: dict[str, _Plan | None] = {}
        self.parameter: str | None = None
        self.null_refs: dict[str, bool] = {}  # whether each definition accepts null, once found

    def fail(self, reason: str, pointer: str) -> SchemaError:
        fix = "; or export without strict=True"
        return SchemaError(f"strict mode: {reason}{fix}", pointer=pointer, tool=self.tool, parameter=self.parameter)

    def root(self, schema: dict[str, Any]) -> tuple[dict[str, Any], _Plan | None]:
        rendered, plan = self.node({k: v for k, v in schema.items() if k != "$defs"}, "")
        if self.defs:
            rendered["$defs"] = self.defs
        return rendered, plan

    def node(self, schema: Any, pointer: str) -> tuple[dict[str, Any], _Plan | None]:
        if not isinstance(schema, dict):
            raise self.fail("every value needs a type (true and false are not schemas here)", pointer)
        plan = _Plan()
        out: dict[str, Any] = {}
        for keyword, value in schema.items():
            if keyword in _KEPT:
                out[keyword] = value
            elif keyword.startswith("x-"):
                continue  # a vendor's annotation: strict providers are not shown it
            elif keyword not in _DROPPED | _HANDLED or (keyword == "$defs" and pointer):
                fix = _FIXES.get(keyword, "it is not in the subset strict mode supports")
                raise self.fail(f"{keyword!r} is not supported ({fix})", f"{pointer}/{keyword}")
        if not any(key in schema for key in _GIVES_TYPE):
            raise self.fail("every value needs a type (a value of any type cannot be strict)", pointer)
        if "format" in schema:
            self.format(schema["format"], out)
        if "$ref" in schema:
            return self.reference(schema, pointer, out)
        if "anyOf" in schema:
            out["anyOf"] = self.branches(schema["anyOf"], f"{pointer}/anyOf", plan)
        if "items" in schema:
            out["items"], plan.items = self.node(schema["items"], f"{pointer}/items")
        if _is_object(schema):
            self.object(schema, pointer, out, plan)
        return out, None if plan.empty() else plan

    def reference(
        self, schema: dict[str, Any], pointer: str, out: dict[str, Any]
    ) -> tuple[dict[str, Any], _Plan | None]:
        """A ``$ref``; strict mode takes no keyword beside one, so notes go on an ``anyOf``."""
        if set(out) - {"description", "title"} or _HANDLED & schema.keys() - {"$ref"}:
            raise self.fail("a $ref cannot have other keywords beside it", pointer)
        plan = _Plan()
        plan.ref = self.ref(schema["$ref"], f"{pointer}/$ref")
        return ({"anyOf": [{"$ref": schema["$ref"]}], **out} if out else {"$ref": schema["$ref"]}), plan

    def format(self, value: str, out: dict[str, Any]) -> None:
        if value in SUPPORTED_FORMATS:
            out["format"] = value
        else:
            out["description"] = _sentence(out.get("description", ""), f"Format: {value}.")

    def ref(self, ref: str, pointer: str) -> str:
        name = def_name(ref) or ""
        if name not in self.source_defs:
            raise self.fail(f"$ref {ref!r} must name an entry of the root $defs", pointer)
        if name not in self.defs:
            self.defs[name] = {}  # placeholder: a recursive reference finds it and stops
            self.defs[name], self.def_plans[name] = self.node(self.source_defs[name], f"/$defs/{escape(name)}")
        return name

    def branches(self, schemas: list[Any], pointer: str, plan: _Plan) -> list[dict[str, Any]]:
        rendered = []
        for index, branch in enumerate(schemas):
            out, child = self.node(branch, f"{pointer}/{index}")
            rendered.append(out)
            plan.branches.append((out, child))
        if all(child is None for _, child in plan.branches):
            plan.branches = []
        return rendered

    def object(self, schema: dict[str, Any], pointer: str, out: dict[str, Any], plan: _Plan) -> None:
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if not properties and extra is not False:
            raise self.fail("an object with free-form keys (a mapping) cannot be strict", pointer)
        if not isinstance(extra, bool):
            raise self.fail("additionalProperties must be false", f"{pointer}/additionalProperties")
        required = set(schema.get("required", ()))
        rendered: dict[str, Any] = {}
        drop = []
        for name, child_schema in properties.items():
            if not pointer:
                self.parameter = name
            child, child_plan = self.node(child_schema, f"{pointer}/properties/{name}")
            if name not in required and not self.accepts_null(child_schema):
                child = _nullable(child, child_schema)
                drop.append(name)
            rendered[name] = child
            if child_plan is not None:
                plan.properties[name] = child_plan
        if not pointer:
            self.parameter = None
        out.update(properties=rendered, required=list(rendered), additionalProperties=False)
        plan.drop = frozenset(drop)

    def accepts_null(self, schema: Any) -> bool:
        """Whether a canonical schema accepts ``null`` (for the keywords strict mode keeps).

        Each definition is looked at once (`null_refs`); one met again while it is being looked
        at adds no condition.
        """
        if not isinstance(schema, dict):
            return schema is True
        checks: list[bool] = []
        if "type" in schema:
            kinds = schema["type"]
            checks.append("null" in kinds if isinstance(kinds, list) else kinds == "null")
        if "enum" in schema:
            checks.append(None in schema["enum"])
        if "const" in schema:
            checks.append(schema["const"] is None)
        if "anyOf" in schema:
            checks.append(any(self.accepts_null(branch) for branch in schema["anyOf"]))
        ref = schema.get("$ref", "")
        name = def_name(ref)
        if name is not None:
            if ref not in self.null_refs:
                self.null_refs[ref] = True
                self.null_refs[ref] = self.accepts_null(self.source_defs.get(name))
            checks.append(self.null_refs[ref])
        return all(checks)


def _is_object(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    return "properties" in schema or kinds == "object" or (isinstance(kinds, list) and "object" in kinds)


def _nullable(rendered: dict[str, Any], canonical: dict[str, Any]) -> dict[str, Any]:
    """Let a rendered schema accept ``null`` too, and say in its description what null means."""
    notes = {k: v for k, v in rendered.items() if k in ("description", "title")}
    body = {k: v for k, v in rendered.items() if k not in notes}
    if "type" in body and not {"anyOf", "$ref", "const"} & body.keys():
        kinds = body["type"] if isinstance(body["type"], list) else [body["type"]]
        body["type"] = [*kinds, "null"]
        if "enum" in body:
            body["enum"] = [*body["enum"], None]
    elif set(body) == {"anyOf"}:
        body["anyOf"] = [*body["anyOf"], {"type": "null"}]
    else:
        body = {"anyOf": [body, {"type": "null"}]}
    default = f" ({msgspec.json.encode(canonical['default']).decode()})" if "default" in canonical else ""
    notes["description"] = _sentence(notes.get("description", ""), f"Optional: null means the default{default}.")
    return {**body, **notes}


def _sentence(text: str, addition: str) -> str:
    text = text.rstrip()
    if text and text[-1] not in ".!?":
        text += "."
    return f"{text} {addition}" if text else addition


def render_strict(name: str, schema: dict[str, Any], defaults: Mapping[str, Any]) -> StrictSchema:
    """The strict rendering of a tool's input schema (a `Tool` keeps it: `Tool.strict`).

    Args:
        name: The tool's name, for errors.
        schema: Its canonical input schema.
        defaults: Each model-visible parameter's own default object (``inspect.Parameter.empty``
            for none); a parameter missing here falls back to the schema's ``default``.

    Raises:
        SchemaError: The schema uses something strict mode cannot express; the message names
            the tool, the parameter, the pointer, and the fix.
    """
    renderer = _Renderer(name, schema)
    rendered, plan = renderer.root(schema)
    optional = plan.drop if plan is not None else frozenset()
    return StrictSchema(rendered, plan, renderer.def_plans, _defaults(schema, optional, defaults))


def _defaults(schema: dict[str, Any], optional: frozenset[str], given: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties", {})
    defaults: dict[str, Any] = {}
    for name in sorted(optional, key=list(properties).index):
        default = given.get(name, inspect.Parameter.empty)
        if default is not inspect.Parameter.empty:
            defaults[name] = default
        elif "default" in properties[name]:
            defaults[name] = properties[name]["default"]
    return defaults
