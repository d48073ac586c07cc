"""How what a tool returns becomes JSON data, and where a value that cannot sits.

msgspec itself encodes the types tinytools accepts as inputs: dataclasses, TypedDicts, Structs,
NamedTuples, enums, datetimes, UUIDs, Decimals, sets and tuples, nested in lists and dicts.
`OutputEncoder` adds the rest as the ``enc_hook`` msgspec calls only for a value it cannot
encode: the application's encoders (``{Fraction: str}``, looked up by the MRO, so the nearest
registered class wins), pydantic models (``model_dump(mode="json", by_alias=True)``, the data
their output schema describes), and subclasses of ``str``, ``int`` and ``float`` (their plain
value). ``object`` may be registered: it then encodes whatever nothing nearer does. The lookup
is made once per class; an output of plain data never reaches the hook.

When a value cannot be encoded, `OutputEncoder.locate` walks it, on that failure path only, to
the innermost value that failed and its JSON pointer (`Unencodable`).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import inspect
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec

from tinytools._errors import ToolDefinitionError, shorten
from tinytools._schema.converters import JSON_SCALARS
from tinytools._schema.type_forms import is_dataclass, string_form

__all__ = ["Encoders", "OutputEncoder", "Unencodable", "check_encoders"]

Encoders = Mapping[type, Callable[[Any], Any]]
"""Classes mapped to functions that turn an instance into JSON-able data."""

_NATIVE = (
    dict,
    list,
    tuple,
    set,
    frozenset,
    bytes,
    bytearray,
    memoryview,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    uuid.UUID,
    decimal.Decimal,
    enum.Enum,
    msgspec.Struct,
)
_BASES: dict[type, Callable[[Any], Any]] = {
    str: str,
    int: int,
    float: float,
}
"""Built-in encoders of subclasses of the JSON scalars (a class written as a string has its `string_form`)."""
_KEYS = frozenset({str, int, float})
_SEQUENCES = (list, tuple, set, frozenset)
_CONTAINERS = (dict, *_SEQUENCES)
_KEY_TYPES = (str, int, float, enum.Enum, uuid.UUID, decimal.Decimal, datetime.date, datetime.time)
"""What msgspec writes as an object's key (an enum's value stands for it)."""
_DEPTH = 256
"""How deep `OutputEncoder.locate` walks before it reports the value there as nested too deeply."""
_encode = msgspec.json.encode
_decode = msgspec.json.decode


class Unencodable(NamedTuple):
    """The innermost value of an output that cannot be encoded as JSON."""

    pointer: str
    """Its JSON pointer in the output (``""`` for the output itself)."""
    type_name: str
    """Its class's qualified name."""
    module: str
    """Its class's module, for logs."""
    reason: str
    """Why: no encoder, its encoder failed, a key that is not a string, it contains itself, ..."""

    def describe(self, tool: str) -> str:
        """The model-facing sentence: which tool, which type, where."""
        where = f" at {shorten(self.pointer)}" if self.pointer else ""
        return (
            f"Tool {tool!r} returned a value that cannot be encoded as JSON: {self.type_name!r}{where} ({self.reason})."
        )

    def details(self) -> dict[str, str]:
        """The error's details: the pointer and the type's name."""
        return {"pointer": shorten(self.pointer), "type": self.type_name}


def check_encoders(encoders: Encoders | None) -> dict[type, Callable[[Any], Any]]:
    """``encoders`` as a dict, each key a class msgspec does not encode itself and each value callable.

    Raises:
        ToolDefinitionError: A key is not a class, is one msgspec encodes itself (its encoder
            would never be called), or a value is not callable.
    """
    checked: dict[type, Callable[[Any], Any]] = {}
    for cls, encode in (encoders or {}).items():
        if not isinstance(cls, type):
            raise ToolDefinitionError(f"encoders are keyed by class; {cls!r} is not one")
        if not callable(encode):
            raise ToolDefinitionError(f"the encoder of {cls.__qualname__} is not callable: {encode!r}")
        if _native(cls):
            raise ToolDefinitionError(
                f"{cls.__qualname__} is encoded by msgspec itself, so its encoder would never be called; "
                "return a different type, or convert the value in the tool"
            )
        checked[cls] = encode
    return checked


class OutputEncoder:
    """Turns outputs into JSON-able data with built-in rules and the application's encoders.

    Made once per dispatcher (the dispatcher's encoders over its toolbox's); `hook` is the
    ``enc_hook`` given to msgspec.
    """

    def __init__(self, encoders: Encoders | None = None):
        self.encoders = check_encoders(encoders)
        """The application's encoders by class."""
        self._found: dict[type, Callable[[Any], Any] | None] = {}
        self._json = msgspec.json.Encoder(enc_hook=self.hook)

    def hook(self, value: Any) -> Any:
        """Encode one value msgspec cannot (msgspec's ``enc_hook``).

        Raises:
            TypeError: No encoder and no built-in rule takes its class.
        """
        cls = value.__class__
        try:
            encode = self._found[cls]
        except KeyError:
            encode = self._found[cls] = self._resolve(cls)
        if encode is None:
            raise TypeError(f"Encoding objects of type {cls.__qualname__} is unsupported")
        return encode(value)

    def _resolve(self, cls: type) -> Callable[[Any], Any] | None:
        """The encoder of ``cls``: the nearest class in its MRO that has one (registered or built in)."""
        pydantic = sys.modules.get("pydantic")
        model = pydantic.BaseModel if pydantic is not None else None
        for klass in cls.__mro__:
            found = self.encoders.get(klass)
            if found is not None:
                return found
            if klass is model:
                return self._dump_model
            found = _BASES.get(klass)
            if found is not None:
                return found
            form = string_form(klass)
            if form is not None and form.write is not None:  # one msgspec does not write itself
                return form.write
        return None

    def _dump_model(self, value: Any) -> Any:
        """A pydantic model as its JSON data, by alias; registered encoders apply inside it."""
        if _takes_fallback():
            return value.model_dump(mode="json", by_alias=True, warnings="none", fallback=self.hook)
        return value.model_dump(mode="json", by_alias=True, warnings="none")

    def to_builtins(self, value: Any) -> Any:
        """``value`` as plain JSON data: what the model reads, decoded (a tuple becomes a list).

        Raises:
            TypeError: A value inside has no encoder (or its encoder failed with it).
            ValueError: A value inside cannot be encoded (or its encoder failed with it).
            RecursionError: The value contains itself, or nests too deeply.
        """
        return _decode(self._json.encode(value))  # two C passes: faster than to_builtins with a hook

    def locate(self, value: Any) -> Unencodable:
        """The innermost value inside ``value`` that cannot be encoded, and where it is.

        For the failure path: ``value`` is known not to encode. When no part of it is found at
        fault (an encoder whose result fails only as a whole), the output itself is named.
        """
        try:
            found = self._walk(value, "", set(), 0)
        except RecursionError:
            return _unencodable("", value, "nested too deeply")
        except Exception as exc:  # a value whose own code fails as it is read (a property, a field)
            return _unencodable("", value, f"reading it raised {type(exc).__name__}")
        return found or _unencodable("", value, "no encoder for it")

    def _walk(self, value: Any, pointer: str, path: set[int], depth: int) -> Unencodable | None:
        cls = value.__class__
        if cls in JSON_SCALARS:
            return None
        if depth > _DEPTH:
            return _unencodable(pointer, value, "nested too deeply")
        children = self._children(value)
        if children is None:
            return self._leaf(value, pointer, path, depth)
        if id(value) in path:
            return _unencodable(pointer, value, "it contains itself")
        path.add(id(value))
        try:
            for key, item in children:
                if key.__class__ not in _KEYS and not isinstance(key, _KEY_TYPES):
                    return _unencodable(pointer, key, "a key of this type")
                found = self._walk(item, f"{pointer}/{_escape(str(key))}", path, depth + 1)
                if found is not None:
                    return found
        finally:
            path.discard(id(value))
        if not isinstance(value, _CONTAINERS):  # fields that encode, a whole that does not (a serializer of its own)
            try:
                self._json.encode(value)
            except Exception:
                return _unencodable(pointer, value, "it cannot be encoded as a whole")
        return None

    def _children(self, value: Any) -> Any:
        """The (key, item) pairs of a value msgspec encodes part by part, or None for a leaf."""
        if isinstance(value, dict):
            return iter(value.items())
        if isinstance(value, _SEQUENCES):
            return enumerate(value)
        if isinstance(value, msgspec.Struct):
            return ((field.encode_name, getattr(value, field.name)) for field in msgspec.structs.fields(value))
        if is_dataclass(type(value)):  # its type: a mock's ``__class__`` may name a class it is not
            import dataclasses  # loaded already: it made the value's class

            return ((field.name, getattr(value, field.name, None)) for field in dataclasses.fields(value))
        if self._resolve(value.__class__) == self._dump_model:
            fields = type(value).model_fields
            return (
                (info.serialization_alias or info.alias or name, getattr(value, name)) for name, info in fields.items()
            )
        return None

    def _leaf(self, value: Any, pointer: str, path: set[int], depth: int) -> Unencodable | None:
        encode = self._resolve(value.__class__)
        if encode is not None:
            try:
                encoded = encode(value)
            except Exception as exc:
                return _unencodable(pointer, value, f"its encoder failed: {type(exc).__name__}")
            if encoded is value:
                return _unencodable(pointer, value, "its encoder returned it unchanged")
            return self._walk(encoded, pointer, path, depth + 1)
        try:
            _encode(value)
        except Exception:
            return _unencodable(pointer, value, "no encoder for it")
        return None


def _unencodable(pointer: str, value: Any, reason: str) -> Unencodable:
    cls = type(value)
    return Unencodable(pointer, cls.__qualname__, cls.__module__, reason)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _native(cls: type) -> bool:
    """Whether msgspec encodes instances of ``cls`` without asking the hook."""
    return cls in JSON_SCALARS or issubclass(cls, _NATIVE) or is_dataclass(cls) or hasattr(cls, "__attrs_attrs__")


_FALLBACK: list[bool] = []


def _takes_fallback() -> bool:
    """Whether this pydantic's ``model_dump`` takes ``fallback`` (2.11 and later), asked once."""
    if not _FALLBACK:
        import pydantic

        _FALLBACK.append("fallback" in inspect.signature(pydantic.BaseModel.model_dump).parameters)
    return _FALLBACK[0]
