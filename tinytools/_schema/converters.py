"""Converters from validated JSON values to declared Python types.

A converter is built once per type by `tinytools._schema` and called per argument. ``None``
stands for "no conversion needed", so a type whose JSON value already is the Python value
costs nothing. A converter raises `ConversionError` with the path of the failing value, which
the caller turns into an `ArgumentsError` with a JSON pointer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError, echo

__all__ = ["JSON_SCALARS", "ConversionError", "Converter", "conversion_failure", "refused", "total", "unchanged"]

Converter = Callable[[Any], Any]
JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
"""The classes of JSON's scalar values as decoded: each is its own JSON form."""


class ConversionError(Exception):
    """A value passed the schema but cannot become the declared type.

    Attributes:
        reason: What was expected.
        path: Keys and indexes from the argument down to the failing value.
    """

    def __init__(self, reason: str):
        self.reason = reason
        self.path: list[str | int] = []
        super().__init__(reason)


def conversion_failure(parameter: str, exc: ConversionError, schema: Any) -> ArgumentsError:
    """The `ArgumentsError` for a value of ``parameter`` that could not become its type."""
    path = [parameter, *exc.path]
    pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
    return ArgumentsError(exc.reason, pointer=pointer, keyword="format", parameter=parameter, schema=schema)


def refused(name: str, exc: Exception) -> ConversionError:
    """The error for a value a class's own checks refused; their message goes to the log only.

    A ``__post_init__`` or a validator may say anything (an internal detail, a key it looked up),
    so the model reads only the class and the kind of error.
    """
    import logging

    logging.getLogger("tinytools").info("a value for %s was refused by its own checks", name, exc_info=exc)
    return ConversionError(f"the value is not a valid {name} ({type(exc).__name__} from its own checks)")


def unchanged(convert: Converter) -> frozenset[type]:
    """Classes of values ``convert`` returns as they are, so a caller may skip the call."""
    return getattr(convert, "unchanged", frozenset())


def total(convert: Converter | None) -> bool:
    """Whether ``convert`` turns every value the schema passes into its type (it never raises): no converter, too.

    An invalid call's other arguments are converted to list their failures too; one whose
    converter cannot fail need not be.
    """
    return convert is None or getattr(convert, "total", False)


def to_int(value: Any) -> Any:
    """Turn an integral float (JSON ``1.0`` is an integer) into an int."""
    return value if value.__class__ is not float else int(value)


def to_float(value: Any) -> Any:
    """Turn a JSON integer into a float for a ``float`` parameter."""
    if value.__class__ is not int:
        return value
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise ConversionError("expected a number within the range of a float") from None


def float_within(schema: Mapping[str, Any]) -> Converter:
    """`to_float` for a bounded ``float``: the float an integer rounds to must meet the bounds too.

    The validator checks the integer as sent, exactly; ``9999999999999999 < 1e16`` holds, but the
    float it becomes is ``1e16``, which an exclusive bound of ``1e16`` does not allow.
    """
    low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    above, below = schema.get("exclusiveMinimum", -math.inf), schema.get("exclusiveMaximum", math.inf)

    def convert_within(value: Any) -> Any:
        number = to_float(value)
        if number is not value and not (low <= number <= high and above < number < below):
            raise ConversionError(
                f"{echo(value)} rounds to the float {number!r}, outside the bounds; send a number within them"
            )
        return number

    convert_within.unchanged = frozenset({float})  # type: ignore[attr-defined]
    return convert_within


to_int.unchanged = frozenset({int})  # type: ignore[attr-defined]
to_int.total = True  # type: ignore[attr-defined]  # the schema passes integers and integral floats alone
to_float.unchanged = frozenset({float})  # type: ignore[attr-defined]


def nullable(convert: Converter) -> Converter:
    """Skip conversion of ``None`` (an ``Optional`` whose other member converts)."""

    def convert_nullable(value: Any) -> Any:
        return None if value is None else convert(value)

    convert_nullable.unchanged = unchanged(convert) | {type(None)}  # type: ignore[attr-defined]
    convert_nullable.total = total(convert)  # type: ignore[attr-defined]
    return convert_nullable


FLOOD_ITEMS = 32
"""A collection this long or shorter is built without a look at its hashes."""
FLOOD_SHARE = 16
"""Items of one collection that may share a hash: more make building a set of them quadratic."""


def flooded(items: Sequence[Any]) -> bool:
    """Whether more than `FLOOD_SHARE` of the items hash alike, so a set of them costs their square.

    Values that differ as JSON may still hash alike once converted (``UUID(int=k * (2**61 - 1))``,
    ``Decimal(k * (2**61 - 1))``), so a set is checked again after conversion.
    """
    if len(items) <= FLOOD_ITEMS:
        return False
    shared: dict[int, int] = {}
    for item in items:
        digest = hash(item)
        shared[digest] = count = shared.get(digest, 0) + 1
        if count > FLOOD_SHARE:
            return True
    return False


def sequence_of(item: Converter | None, build: Callable[[Any], Any]) -> Converter:
    """Convert each item (when needed), then build the container (list, tuple, set...).

    A set must keep every item: JSON's ``true`` and ``1`` differ (``uniqueItems`` lets both
    through) but are one Python set item, so a set that would lose some is refused.
    """
    hashed = build is set or build is frozenset
    if item is None:
        return _whole(build) if hashed else build

    def convert_sequence(value: Any) -> Any:
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except ConversionError as exc:
                exc.path.insert(0, index)
                raise
        if hashed and flooded(out):
            raise ConversionError(f"the items make a set whose hashes collide (more than {FLOOD_SHARE} alike)")
        built = build(out)
        if hashed and len(built) != len(out):
            raise ConversionError(_MERGED)
        return built

    convert_sequence.total = not hashed and total(item)  # type: ignore[attr-defined]
    return convert_sequence


_MERGED = "some items are equal in Python (true and 1, say) and would merge into one set item; send them once"


def _whole(build: Callable[[Any], Any]) -> Converter:
    """``build`` (set or frozenset) of JSON items, refusing items that would merge."""

    def convert_set(value: Any) -> Any:
        built = build(value)
        if len(built) != len(value):
            raise ConversionError(_MERGED)
        return built

    return convert_set


def fixed_tuple(items: Sequence[Converter | None], build: Callable[[Any], Any]) -> Converter:
    """Convert a fixed-length array position by position."""

    def convert_tuple(value: Any) -> Any:
        out = []
        for index, (convert, element) in enumerate(zip(items, value, strict=False)):
            try:
                out.append(element if convert is None else convert(element))
            except ConversionError as exc:
                exc.path.insert(0, index)
                raise
        return build(out)

    return convert_tuple


def mapping_of(value_converter: Converter) -> Converter:
    """Convert every value of a ``dict[str, T]``."""

    def convert_mapping(value: Any) -> Any:
        out = {}
        for key, element in value.items():
            try:
                out[key] = value_converter(element)
            except ConversionError as exc:
                exc.path.insert(0, key)
                raise
        return out

    convert_mapping.total = total(value_converter)  # type: ignore[attr-defined]
    return convert_mapping


def fields_of(fields: Mapping[str, tuple[str, Converter | None]], build: Callable[..., Any]) -> Converter:
    """Convert a JSON object's fields and build a class from them by keyword.

    Args:
        fields: JSON key -> (Python name, converter or None).
        build: The class (dataclass, Struct, TypedDict, ...), called with keywords.
    """

    def convert_fields(value: Any) -> Any:
        kwargs = {}
        for key, element in value.items():
            name, convert = fields[key]
            try:
                kwargs[name] = element if convert is None else convert(element)
            except ConversionError as exc:
                exc.path.insert(0, key)
                raise
        try:
            return build(**kwargs)
        except Exception as exc:  # the class's own checks: what they say is the application's, not the model's
            raise refused(getattr(build, "__name__", "the value"), exc) from None

    return convert_fields


def enum_member(enum_type: Any) -> Converter:
    """Look an Enum member up by its value."""
    members = {member.value: member for member in enum_type}

    def convert_enum(value: Any) -> Any:
        return members[value]

    return convert_enum


def from_string(parse: Callable[[str], Any], expected: str) -> Converter:
    """Parse a string into a value of a class written as one (`type_forms.STRING_TYPES`)."""

    def convert_string(value: Any) -> Any:
        try:
            return parse(value)
        except (ValueError, TypeError, msgspec.ValidationError):
            raise ConversionError(f"expected {expected}; got {echo(value)}") from None  # cut, as any echo

    return convert_string


def union_of(
    members: Sequence[tuple[tuple[type, ...], frozenset[tuple[type, Any]], Converter | None, Callable[[Any], bool]]],
) -> Converter:
    """Convert a value into the union member it belongs to.

    A value that a member takes exactly, as it is, stays that member's: ``3`` for ``int`` in
    ``float | int``, ``3`` for ``Literal[1, 2, 3]`` in ``float | Literal[1, 2, 3]``, ``[1, 2]``
    for ``list[int]`` in ``list[float] | list[int]``. Otherwise the first member (left to right)
    whose schema accepts the value converts it.

    Args:
        members: Per member: the classes it takes exactly (empty for containers and classes), the
            (class, value) pairs it takes exactly (a ``Literal``'s), its converter, and a predicate
            saying whether its schema accepts a value.
    """
    exact = tuple((types, values, convert) for types, values, convert, _ in members if types or values)
    shaped = any(not types and not values for types, values, _, _ in members)  # containers, classes

    def convert_union(value: Any) -> Any:
        cls = value.__class__
        for types, values, convert in exact:
            if cls in types or (values and cls in JSON_SCALARS and (cls, value) in values):
                return value if convert is None else convert(value)
        first: Any = _NONE
        for _, _, convert, accepts in members:
            if accepts(value):
                converted = value if convert is None else convert(value)
                if not shaped or _same(converted, value):  # taken as it is, all the way down
                    return converted
                if first is _NONE:
                    first = converted
        if first is not _NONE:
            return first
        raise ConversionError("no member of the union accepts this value")

    return convert_union


_NONE = object()


def _same(converted: Any, value: Any) -> bool:
    """Whether conversion left ``value`` as it was: the same classes and values, all the way down."""
    if converted.__class__ is not value.__class__:
        return False
    if value.__class__ is list:
        return len(converted) == len(value) and all(map(_same, converted, value))
    if value.__class__ is dict:
        return converted.keys() == value.keys() and all(_same(converted[key], value[key]) for key in value)
    return bool(converted == value)
