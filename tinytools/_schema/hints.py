"""Python type hints to JSON Schema (2020-12 vocabulary), with converters back.

`SchemaBuilder` reads one type at a time and returns its schema together with the converter
that turns a validated JSON value into that type (None where the JSON value already is it).
Named types (dataclasses, TypedDicts, Structs, NamedTuples, pydantic models and dataclasses) go
to ``$defs`` and are referenced with ``$ref``, which is also how recursive types are expressed.
`Param`, pydantic's ``Field`` and plain strings inside ``Annotated`` add descriptions and
constraints (`tinytools._schema.annotations`); pydantic types bring their own schema
(`tinytools._schema.pydantic_models`), and the fields of stdlib dataclasses and TypedDicts are read by
`tinytools._schema.fields`.
"""

from __future__ import annotations

import decimal
import enum
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import typing_extensions

from tinytools._errors import ToolDefinitionError
from tinytools._schema import converters as _convert
from tinytools._schema import fields as records
from tinytools._schema import pydantic_models as models
from tinytools._schema.annotations import constraints, split_annotated
from tinytools._schema.converters import Converter
from tinytools._schema.docstrings import described
from tinytools._schema.fragments import enum_schema, exact_types, union_schema, with_default
from tinytools._schema.keyword_order import keyword_position
from tinytools._schema.type_forms import (
    LITERALS,
    MAPPINGS,
    SCALAR_VALUES,
    SELF_TYPES,
    SEQUENCES,
    UNIONS,
    WRAPPERS,
    exact_values,
    is_dataclass,
    string_form,
    unhashable,
)

__all__ = ["DECIMAL_PATTERN", "MOST_REMEMBERED", "SchemaBuilder", "type_namespace"]

_NONE_TYPE = type(None)
MOST_REMEMBERED = 1024
"""How many parameter types the schemas of are kept for the next tool (the memo is emptied when full)."""
_REMEMBERED: dict[Any, tuple[bytes, Converter | None]] = {}
"""A parameter's type without ``Annotated`` metadata at its top -> its schema as JSON and its converter.

Only a type whose schema depends on nothing but itself is kept: no named type (those go to one
tool's ``$defs``), no ``Self`` and no ``Annotated`` inside it (``Param(ge=1)`` equals
``Param(ge=1.0)``, and the schema would say ``1`` for both). The schema is kept as JSON so each
tool gets dicts of its own."""
_ENCODE = msgspec.json.encode
_DECODE = msgspec.json.decode
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
DECIMAL_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,4})?$"
"""What a `Decimal` argument looks like: a JSON number as text, its exponent at most 4 digits.

``decimal.Decimal`` also reads ``NaN``, ``sNaN``, ``Infinity``, spaces, ``_`` and digits of other
scripts, and an exponent like ``1e999999999`` would make a number too large to use.
"""


def type_namespace(localns: Mapping[str, Any] | None) -> dict[str, Any]:
    """``localns`` as the dict `get_type_hints` wants, copied only when it is not one already.

    At module level it is the module's globals: copying them for every tool would cost more
    than the rest of reading its hints.
    """
    return localns if type(localns) is dict else dict(localns or {})


class SchemaBuilder:
    """Builds schemas and converters for the types of one tool, sharing one ``$defs``.

    Attributes:
        defs: Named schemas referenced as ``#/$defs/<name>``.
        tool: The tool's name, for error messages.
    """

    def __init__(
        self,
        tool: str,
        *,
        localns: Mapping[str, Any] | None = None,
        self_type: type | None = None,
        output: bool = False,
    ):
        self.tool = tool
        self._self_type = self_type
        self._mode = "serialization" if output else "validation"  # a pydantic model's schema as it is read or written
        self.defs: dict[str, dict[str, Any]] = {}
        self._named: dict[Any, str] = {}
        self._converters: dict[str, Converter | None] = {}
        self._localns = type_namespace(localns)
        self._contextual = 0
        """How many parts read so far depend on more than their type (see `parameter`)."""
        self.enforceable = True
        """Whether every schema built so far is one the validator enforces as it stands: made here of
        plain types and numeric bounds, no named type, pattern, examples or other metadata
        (`tinytools._schema.input_schema.InputSchema.built` then skips its check)."""

    def parameter(
        self, base: Any, metadata: tuple[Any, ...], parameter: str
    ) -> tuple[dict[str, Any], Converter | None]:
        """`build` for a parameter's type (``base`` with ``Annotated`` ``metadata``), remembered across tools.

        The schema of ``base`` is the one an earlier tool had for it, if it depends on nothing else.

        Raises:
            ToolDefinitionError: The type has no JSON Schema.
        """
        if base.__class__ is type:  # a class: built at once, or a named type of this tool's own
            return self._constrained(*self._build_base(base, parameter), metadata)
        try:
            key = (base, _order(base))
            known = _REMEMBERED.get(key)
        except TypeError:  # a type that does not hash
            return self._constrained(*self._build_base(base, parameter), metadata)
        if known is not None:
            return self._constrained(_DECODE(known[0]), known[1], metadata)
        before = self._contextual
        schema, convert = self._build_base(base, parameter)
        if self._contextual == before:
            _remember(key, schema, convert)
        return self._constrained(schema, convert, metadata)

    def build(self, hint: Any, parameter: str | None = None) -> tuple[dict[str, Any], Converter | None]:
        """Return the schema of ``hint`` and its converter (None when none is needed).

        Raises:
            ToolDefinitionError: The type has no JSON Schema.
        """
        base, metadata = split_annotated(hint)
        if metadata:
            self._contextual += 1
        return self._constrained(*self._build_base(base, parameter), metadata)

    def _constrained(
        self, schema: dict[str, Any], convert: Converter | None, metadata: tuple[Any, ...]
    ) -> tuple[dict[str, Any], Converter | None]:
        """A schema and its converter with the constraints of ``Annotated`` metadata added (in keyword order)."""
        if not metadata:
            return schema, convert
        extra = constraints(metadata, schema.get("type") == "array")
        if self.enforceable and not all(map(_plain_keyword, extra.items())):
            self.enforceable = False
        if extra:
            schema = dict(sorted({**schema, **extra}.items(), key=_keyword_rank))
            if convert is _convert.to_float and extra.keys() & _BOUNDS:
                convert = _convert.float_within(schema)  # an integer rounds: check the float it becomes
        return schema, convert

    def _build_base(self, hint: Any, parameter: str | None) -> tuple[dict[str, Any], Converter | None]:
        if hint is Any or hint is object or hint is typing_extensions.Any:
            return {}, None
        if hint is None or hint is _NONE_TYPE:
            return {"type": "null"}, None
        if hint is bool:
            return {"type": "boolean"}, None
        if hint is int:
            return {"type": "integer"}, _convert.to_int
        if hint is float:
            return {"type": "number"}, _convert.to_float
        if hint is str:
            return {"type": "string"}, None
        origin = typing_extensions.get_origin(hint)  # the plain types above need neither
        args = typing_extensions.get_args(hint)
        if hint in SELF_TYPES:
            if self._self_type is None:
                raise self._unsupported(hint, parameter)
            self._contextual += 1
            return self.build(self._self_type, parameter)
        if origin in WRAPPERS:
            return self.build(args[0], parameter)
        if origin in UNIONS:
            return self._union(args, parameter)
        if origin in LITERALS:
            return self._choices(_literal(args), hint, parameter)
        if isinstance(hint, typing.NewType):
            return self.build(hint.__supertype__, parameter)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self._choices(_enum(hint), hint, parameter)
        form = string_form(hint)
        if form is not None:
            text: dict[str, Any] = {"type": "string", "format": form.format}
            if hint is decimal.Decimal:  # a number written out, and nothing else decimal.Decimal reads
                text["pattern"] = DECIMAL_PATTERN
            return text, _convert.from_string(form.parse, form.expected)
        if (origin or hint) in SEQUENCES:
            item = args[0] if args else Any
            item_schema, item_convert = self.build(item, parameter)
            build = SEQUENCES[origin or hint]
            if build is not list:
                item_schema = self._set_item(item, item_schema, parameter)
            schema: dict[str, Any] = {"type": "array", "items": item_schema}
            if build is not list:
                schema["uniqueItems"] = True
            if item_convert is None and build is list:
                return schema, None
            return schema, _convert.sequence_of(item_convert, build)
        if hint is tuple or origin is tuple:
            return self._tuple(args, parameter)
        if (origin or hint) in MAPPINGS:
            return self._mapping(args, parameter)
        if isinstance(hint, type):
            return self._named_type(hint, parameter)
        raise self._unsupported(hint, parameter)

    def _set_item(self, item: Any, schema: dict[str, Any], parameter: str | None) -> dict[str, Any]:
        """The schema of a set's items: only values that hash (``Any`` narrows to JSON scalars).

        Raises:
            ToolDefinitionError: The items would be lists, dicts or other unhashable values.
        """
        base = split_annotated(item)[0]
        if base is Any or base is object or base is typing_extensions.Any:
            return dict(sorted({**schema, "type": ["string", "number", "boolean", "null"]}.items(), key=_keyword_rank))
        problem = unhashable(base)
        if problem is not None:
            raise ToolDefinitionError(
                f"a set cannot hold {problem} (they are unhashable); use a list, or a frozen type for the items",
                tool=self.tool,
                parameter=parameter,
            )
        return schema

    def _choices(
        self, built: tuple[dict[str, Any], Converter | None], hint: Any, parameter: str | None
    ) -> tuple[dict[str, Any], Converter | None]:
        """An enum's or Literal's schema, when every value is a JSON scalar the model can send back."""
        for value in built[0]["enum"]:
            if value is not None and value.__class__ not in SCALAR_VALUES:
                name = getattr(hint, "__name__", None) or repr(hint)
                raise ToolDefinitionError(
                    f"{name} has the value {value!r}, which is not a JSON string, number, boolean or null; "
                    "give its members such values",
                    tool=self.tool,
                    parameter=parameter,
                )
        return built

    def _unsupported(self, hint: Any, parameter: str | None) -> ToolDefinitionError:
        name = getattr(hint, "__name__", None) or repr(hint)
        fix = "; mark it Injected or use a JSON-compatible type" if parameter else ""
        return ToolDefinitionError(f"no JSON Schema for type {name!r}{fix}", tool=self.tool, parameter=parameter)

    def _union(self, args: tuple[Any, ...], parameter: str | None) -> tuple[dict[str, Any], Converter | None]:
        built = [self.build(arg, parameter) for arg in args]
        schema = union_schema([schema for schema, _ in built])
        converters = [convert for _, convert in built]
        if all(convert is None for convert in converters):
            return schema, None
        non_null = [(s, c) for s, c in built if s != {"type": "null"}]
        if len(non_null) == 1 and len(built) == 2 and non_null[0][1] is not None:
            return schema, _convert.nullable(non_null[0][1])
        members = [
            (exact_types(member_schema), exact_values(member_schema, convert), convert, self._accepts(member_schema))
            for member_schema, convert in built
        ]
        return schema, _convert.union_of(members)

    def _accepts(self, schema: dict[str, Any]) -> Callable[[Any], bool]:
        """A predicate saying whether ``schema`` accepts a value, compiled on first use."""
        from tinytools._schema.input_schema import compile_validator

        check: list[Callable[[Any], Any]] = []
        defs = self.defs if _refers(schema) else {}  # a schema of plain types needs no tool's $defs

        def accepts(value: Any) -> bool:
            if not check:
                check.append(compile_validator({**schema, "$defs": defs} if defs else schema))
            try:
                check[0](value)
            except ValueError:
                return False
            return True

        return accepts

    def _tuple(self, args: tuple[Any, ...], parameter: str | None) -> tuple[dict[str, Any], Converter | None]:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            item_schema, item_convert = self.build(args[0] if args else Any, parameter)
            return {"type": "array", "items": item_schema}, _convert.sequence_of(item_convert, tuple)
        if args == ((),):
            return {"type": "array", "maxItems": 0}, _convert.sequence_of(None, tuple)
        built = [self.build(arg, parameter) for arg in args]
        schema = {
            "type": "array",
            "prefixItems": [s for s, _ in built],
            "items": False,
            "minItems": len(built),
        }
        return schema, _convert.fixed_tuple([c for _, c in built], tuple)

    def _mapping(self, args: tuple[Any, ...], parameter: str | None) -> tuple[dict[str, Any], Converter | None]:
        key = split_annotated(args[0])[0] if args else str
        if key not in (str, Any):
            raise ToolDefinitionError(
                f"mapping keys must be str (JSON object keys are strings), not {key!r}",
                tool=self.tool,
                parameter=parameter,
            )
        value_schema, value_convert = self.build(args[1] if len(args) > 1 else Any, parameter)
        schema: dict[str, Any] = {"type": "object"}
        if value_schema:
            schema["additionalProperties"] = value_schema
        return schema, None if value_convert is None else _convert.mapping_of(value_convert)

    def _named_type(self, cls: type, parameter: str | None) -> tuple[dict[str, Any], Converter | None]:
        self._contextual += 1
        self.enforceable = False
        if cls in self._named:
            name = self._named[cls]
            return {"$ref": f"#/$defs/{name}"}, self._deferred(name)
        name = cls.__name__
        while name in self.defs:
            name += "_"
        self._named[cls] = name
        self.defs[name] = {}
        try:
            schema, convert = self._object(cls, parameter, name)
            schema = described(schema, cls)
        except BaseException:
            del self._named[cls], self.defs[name]
            raise
        self.defs[name] = schema
        self._converters[name] = convert
        return {"$ref": f"#/$defs/{name}"}, convert

    def _deferred(self, name: str) -> Converter:
        """A converter for a type still being built (recursion), looked up when called."""
        converters = self._converters

        def convert_deferred(value: Any) -> Any:
            convert = converters[name]
            return value if convert is None else convert(value)

        return convert_deferred

    def _object(self, cls: type, parameter: str | None, name: str) -> tuple[dict[str, Any], Converter | None]:
        adopted = models.pydantic_object(cls, name, self.defs, mode=self._mode, tool=self.tool)
        if adopted is not None:  # a model or a pydantic dataclass: pydantic's schema, pydantic's validation
            return adopted
        aliases = self._mode == "validation"  # a result is encoded by field name
        if typing_extensions.is_typeddict(cls):
            return self._fields(records.typeddict_rows(cls, self._hints(cls), self.tool, aliases=aliases), dict)
        if is_dataclass(cls):
            rows, fills = records.dataclass_rows(cls, self._hints(cls), self.tool, aliases=aliases)
            return self._fields(rows, records.filled(cls, fills))
        if issubclass(cls, msgspec.Struct):
            return self._struct(cls)
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            hints = self._hints(cls)
            built = [self.build(hints.get(name, Any), parameter) for name in cls._fields]
            defaults = getattr(cls, "_field_defaults", {})
            schema = {
                "type": "array",
                "prefixItems": [s for s, _ in built],
                "items": False,
                "minItems": len(cls._fields) - len(defaults),
            }
            return schema, _convert.fixed_tuple([c for _, c in built], lambda items: cls(*items))
        raise self._unsupported(cls, parameter)

    def _hints(self, cls: type) -> dict[str, Any]:
        try:
            hints = typing_extensions.get_type_hints(cls, localns=self._localns, include_extras=True)
            if sys.version_info < (3, 11):  # 3.10 leaves a name quoted inside ``list["Folder"]`` as it is
                namespace = {**vars(sys.modules.get(cls.__module__, sys)), **self._localns, cls.__name__: cls}
                hints = {name: _unquoted(hint, namespace) for name, hint in hints.items()}
            return hints
        except NameError as exc:
            raise ToolDefinitionError(
                f"cannot resolve the annotations of {cls.__name__}: {exc}", tool=self.tool
            ) from None

    def _fields(
        self, fields: list[tuple[str, str, Any, bool, Any]], build: Callable[..., Any]
    ) -> tuple[dict[str, Any], Converter | None]:
        """Render a closed object from (json key, python name, hint, required, default) rows."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, tuple[str, Converter | None]] = {}
        for key, name, hint, is_required, default in fields:
            schema, convert = self.build(hint, key)
            if not is_required and default is not records.NO_DEFAULT:
                schema = with_default(schema, default, self.tool, key)
            properties[key] = schema
            converters[key] = (name, convert)
            if is_required:
                required.append(key)
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if build is dict and all(c is None and key == name for key, (name, c) in converters.items()):
            return schema, None
        return schema, _convert.fields_of(converters, build)

    def _struct(self, cls: type[msgspec.Struct]) -> tuple[dict[str, Any], Converter | None]:
        if cls.__struct_config__.array_like:
            raise self._unsupported(cls, None)
        hints = self._hints(cls)
        rows = []
        for field in msgspec.structs.fields(cls):
            has_default = field.default is not msgspec.NODEFAULT or field.default_factory is not msgspec.NODEFAULT
            rows.append((field.encode_name, field.name, hints[field.name], not has_default, field.default))
        return self._fields(rows, cls)


def _refers(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` may hold a ``$ref`` (text that cannot be written as JSON is taken to)."""
    try:
        return b'"$ref"' in _ENCODE(schema)
    except (TypeError, ValueError):
        return True


def _keyword_rank(item: tuple[str, Any]) -> tuple[int, str]:
    return keyword_position(item[0])


def _remember(key: Any, schema: dict[str, Any], convert: Converter | None) -> None:
    """Keep a type's schema for the next tool, if it is plain JSON (``inf`` would come back ``null``)."""
    try:
        text = _ENCODE(schema)
    except (TypeError, ValueError):  # a lone surrogate in a Literal or enum value: built afresh each time
        return
    if _DECODE(text) != schema:  # nan, inf: the schema must be refused the long way, every time
        return
    if len(_REMEMBERED) >= MOST_REMEMBERED:
        _REMEMBERED.clear()
    _REMEMBERED[key] = (text, convert)


def _order(hint: Any) -> tuple[Any, ...]:
    """The arguments of ``hint`` and of each part of it, in order, a Literal's values with their types.

    Unions and Literals compare as sets (``int | str == str | int``, ``Literal[1, True] ==
    Literal[True, 1]``), and ``1 == True == 1.0``; their schemas list the members in the order given.
    """
    arguments = typing_extensions.get_args(hint)
    if not arguments:
        return ()
    if typing_extensions.get_origin(hint) in LITERALS:
        return tuple((value.__class__, repr(value)) for value in arguments)
    return (arguments, *map(_order, arguments))


_BOUND_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})


def _plain_keyword(item: tuple[str, Any]) -> bool:
    """Whether a keyword of ``Annotated`` metadata is one the validator takes as it stands.

    A description, a finite bound, a positive ``multipleOf`` or a count; a pattern (ECMA-262 or
    not), examples and anything else are left to the schema's full check.
    """
    keyword, value = item
    if keyword in ("description", "title"):
        return value.__class__ is str
    kind = value.__class__
    if keyword in _COUNT_KEYWORDS:
        return kind is int and value >= 0
    if kind is not int and (kind is not float or not math.isfinite(value)):
        return False
    return keyword in _BOUND_KEYWORDS or (keyword == "multipleOf" and value > 0)


def _literal(values: tuple[Any, ...]) -> tuple[dict[str, Any], Converter | None]:
    flat: list[Any] = []
    for value in values:
        if typing_extensions.get_origin(value) in LITERALS:
            flat.extend(typing_extensions.get_args(value))
        else:
            flat.append(value.value if isinstance(value, enum.Enum) else value)
    schema = enum_schema(flat)
    needs_int = any(type(value) is int for value in flat)
    return schema, _convert.to_int if needs_int else None


def _enum(cls: type[enum.Enum]) -> tuple[dict[str, Any], Converter | None]:
    schema = enum_schema([member.value for member in cls])
    if cls.__doc__ and cls.__doc__ != enum.Enum.__doc__ and not cls.__doc__.startswith("An enumeration"):
        schema["description"] = cls.__doc__.strip()
    return schema, _convert.enum_member(cls)


def _unquoted(hint: Any, namespace: dict[str, Any]) -> Any:
    """``hint`` with every name still quoted inside it resolved in ``namespace`` (for Python 3.10)."""
    if isinstance(hint, str):
        return _unquoted(eval(hint, namespace), namespace)  # what get_type_hints does with a quoted hint
    if isinstance(hint, typing.ForwardRef):
        return _unquoted(eval(hint.__forward_arg__, namespace), namespace)
    args = typing.get_args(hint)
    origin = typing_extensions.get_origin(hint)
    if not args or origin is typing_extensions.Annotated or origin in (typing.Literal, typing_extensions.Literal):
        return hint  # a Literal's strings are values, not names
    resolved = tuple(_unquoted(arg, namespace) for arg in args)
    if resolved == args:
        return hint
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(hint.__origin__, resolved)  # type: ignore[arg-type]
    copy_with = getattr(hint, "copy_with", None)
    return copy_with(resolved) if copy_with is not None else hint
