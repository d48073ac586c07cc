"""Reading a call's arguments strictly: JSON text decoded, decoded objects copied, ambiguity refused.

Arguments come from a model, so anything two readers could take differently is refused with an
`ArgumentsError` whose ``keyword`` is ``"json"`` (the dispatcher answers ``malformed_arguments``):
text that is not JSON (invalid UTF-8, lone surrogates, ``NaN``, ``Infinity``), nesting deeper
than `MAX_DEPTH`, and an object that names the same key twice. msgspec keeps the last value of a repeated
key and some parsers keep the first, so a guard that read the text with another parser could
approve one value while the tool received the other.

The duplicate check costs one count of ``:`` on most valid calls: every key is followed by
exactly one ``:`` outside strings, so when the text has no more colons than the decoded object has
keys, no key can repeat. Only text with nested objects or colons inside strings takes a slower path.

An already decoded ``dict`` is copied, lists and dicts all the way down, so a tool that changes
its arguments changes neither the caller's object, nor another call sharing it, nor a retry's.
The copy also refuses, as ``malformed_arguments`` with the pointer of the value at fault, what
text could not have held: a non-finite float, a key that is not a string, a lone surrogate, a
value of no JSON class (a set, bytes, a date); a tuple, or a subclass of a JSON class (what an
application's own decoder may make), is copied as the plain JSON data it is.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tinytools._errors import ArgumentsError, shorten
from tinytools._results import ToolCall

__all__ = [
    "MAX_DEPTH",
    "SHORT_ENOUGH",
    "could_nest_too_deep",
    "decoded_arguments",
    "detached",
    "encodable",
    "refuse_repeated_keys",
    "repeats_a_key",
]

MAX_DEPTH = 512
"""How many lists and objects deep arguments may nest, on every Python.

Without it the limit would be the interpreter's: Python 3.12 and later decode JSON text far deeper
than 3.11 does, so the same call would be refused on one and run on another.
"""

TOO_DEEP = f"the arguments are nested too deeply (more than {MAX_DEPTH} lists and objects)"
_decode = msgspec.json.decode
_encode = msgspec.json.encode
_ATOMS = frozenset({int, bool, type(None)})  # immutable, and always JSON (a string is checked)


def decoded_arguments(call: ToolCall) -> Any:
    """A call's arguments as decoded JSON; never ``{}`` in place of text that is not JSON.

    A ``dict`` is returned as a copy (see `detached`).

    Raises:
        ArgumentsError: With ``keyword == "json"`` when the text cannot be decoded, repeats a
            key in one object, or nests too deeply.
    """
    arguments = call.arguments
    kind = arguments.__class__
    if kind is dict:
        return detached(arguments)
    if isinstance(arguments, dict):  # an application's own decoder's (an OrderedDict): the data it holds
        return detached(dict(arguments))
    if kind is not bytes and kind is not str and isinstance(arguments, (bytearray, memoryview)):
        arguments, kind = bytes(arguments), bytes
    if call.invalid is not None:
        raise ArgumentsError(call.invalid, keyword="json")
    try:
        decoded = _decode(arguments)
    except (ValueError, TypeError) as exc:  # DecodeError, and a lone surrogate's UnicodeEncodeError
        raise ArgumentsError(str(exc), keyword="json") from None
    except RecursionError:
        raise ArgumentsError(TOO_DEEP, keyword="json") from None
    if len(arguments) > SHORT_ENOUGH and could_nest_too_deep(arguments) and _depth(decoded) > MAX_DEPTH:
        raise ArgumentsError(TOO_DEEP, keyword="json")
    if decoded.__class__ is dict:
        colons = arguments.count(b":") if kind is bytes else arguments.count(":") if kind is str else -1
        if colons != len(decoded):
            refuse_repeated_keys(arguments, decoded)
    return decoded


SHORT_ENOUGH = 2 * MAX_DEPTH
"""JSON text this long or shorter cannot nest deeper than `MAX_DEPTH`: each level takes two brackets."""


def could_nest_too_deep(text: str | bytes) -> bool:
    """Whether JSON text holds enough opening brackets to nest deeper than `MAX_DEPTH`.

    A count, so a decoded value is only walked for its depth when it could be too deep.
    """
    if len(text) <= SHORT_ENOUGH:
        return False
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_DEPTH


def detached(arguments: dict[str, Any]) -> dict[str, Any]:
    """Decoded arguments whose lists and dicts are new, all the way down, checked to be JSON.

    Arguments holding no list or dict come back as they are: the tool is called with
    ``**arguments``, so it gets a dict of its own anyway. The same walk refuses what JSON text
    could not hold, as decoding text would: a NaN or infinite float, a key that is not a string,
    a string with a lone surrogate (UTF-8 cannot carry it), a value of no JSON class. A tuple, or
    a subclass of a JSON class, becomes that class's plain value (`_as_json`).

    Raises:
        ArgumentsError: With ``keyword == "json"`` and the ``pointer`` of the value at fault,
            or nesting too deep to copy.
    """
    copy = None
    try:
        for key, value in arguments.items():
            kind = value.__class__
            if (key.__class__ is not str and not isinstance(key, str)) or not (key.isascii() or encodable(key)):
                raise _NotJson
            if kind is str:
                if not (value.isascii() or encodable(value)):
                    raise _NotJson
            elif kind is list or kind is dict:
                if copy is None:
                    copy = arguments.copy()
                copy[key] = _copy(value, 2)
            elif kind is float:
                if value - value != 0:  # NaN or an infinity
                    raise _NotJson
            elif kind not in _ATOMS:  # a subclass or a tuple, as JSON data of its own class; else refused
                if copy is None:
                    copy = arguments.copy()
                copy[key] = _copy(value, 2)
    except _NotJson:
        raise _refusal(arguments) from None
    except (_TooDeep, RecursionError):
        raise ArgumentsError(TOO_DEEP, keyword="json") from None
    return arguments if copy is None else copy


class _NotJson(Exception):
    """Raised inside the copy, which keeps no path: `_refusal` finds where, on the failure path."""


class _TooDeep(Exception):
    """Raised inside the copy at a list or dict nested deeper than `MAX_DEPTH`."""


def _depth(value: Any) -> int:
    """How many lists and dicts deep ``value`` nests (the arguments object is 1), without recursion."""
    depth = 0
    level = [value]
    while True:
        containers = [item for item in level if item.__class__ is dict or item.__class__ is list]
        if not containers:
            return depth
        depth += 1
        level = [
            child
            for container in containers
            for child in (container.values() if container.__class__ is dict else container)
        ]


def _copy(value: Any, depth: int) -> Any:
    """A copy of ``value``, the ``depth``-th list or dict down from the arguments object."""
    kind = value.__class__
    if kind not in _PLAIN:
        value = _as_json(value)
        kind = value.__class__
    if (kind is dict or kind is list) and depth > MAX_DEPTH:
        raise _TooDeep
    depth += 1
    if kind is dict:
        copy = {}
        for key, item in value.items():
            if (key.__class__ is not str and not isinstance(key, str)) or not (key.isascii() or encodable(key)):
                raise _NotJson
            kind = item.__class__
            if kind is str:
                if not (item.isascii() or encodable(item)):
                    raise _NotJson
                copy[key] = item
            else:
                copy[key] = item if kind in _ATOMS else _copy(item, depth)
        return copy
    if kind is list:
        items = []
        for item in value:
            kind = item.__class__
            if kind is str:
                if not (item.isascii() or encodable(item)):
                    raise _NotJson
                items.append(item)
            else:
                items.append(item if kind in _ATOMS else _copy(item, depth))
        return items
    if (kind is float and value - value != 0) or (kind is str and not (value.isascii() or encodable(value))):
        raise _NotJson  # NaN or an infinity; a lone surrogate (in what was a subclass of str)
    return value


_PLAIN = _ATOMS | {dict, list, str, float}
"""The classes decoded JSON is made of."""


def _as_json(value: Any) -> Any:
    """``value`` as the JSON data of its own class: a subclass of a JSON class as that class, a tuple as a list.

    An application may hand over what its own decoder made (an ``OrderedDict``, a ``str``
    subclass) or a tuple where JSON has an array; what JSON text could not hold (a set, bytes, a
    date, any other object) is refused, as in text.

    Raises:
        _NotJson: ``value`` is not JSON data.
    """
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # (never a bool: bool cannot be subclassed, and is plain)
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    raise _NotJson


def encodable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refusal(value: Any, pointer: str = "") -> ArgumentsError:
    """The refusal of the first value inside ``value`` that JSON text could not hold."""
    found = _fault(value, pointer)
    where, reason = found if found is not None else (pointer, "the arguments are not JSON data")
    return ArgumentsError(f"at {where or '/'}: {reason}", pointer=where, keyword="json")


def _fault(value: Any, pointer: str) -> tuple[str, str] | None:
    if isinstance(value, str):
        return None if encodable(value) else (pointer, "a string holds a lone surrogate, which JSON text cannot carry")
    if isinstance(value, float):
        return None if value - value == 0 else (pointer, f"{value} is not a JSON number")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return pointer, f"a key is {type(key).__name__!r}, not a string (JSON object keys are strings)"
            if not encodable(key):  # the pointer would hold it too: the object holding the key is named
                return pointer, "a key holds a lone surrogate, which JSON text cannot carry"
            inner = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            found = _fault(item, inner)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _fault(item, f"{pointer}/{index}")
            if found is not None:
                return found
    elif value is not None and not isinstance(value, int):
        kind = type(value)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        return pointer, f"a value of type {name!r} is not JSON data"
    return None


def repeats_a_key(text: bytes) -> bool:
    """Whether JSON ``text`` names a key twice in one object, anywhere (text that does not decode: False)."""
    try:
        refuse_repeated_keys(text, msgspec.json.decode(text))
    except ArgumentsError:
        return True
    except (msgspec.DecodeError, RecursionError):
        return False
    return False


def refuse_repeated_keys(text: str | bytes, decoded: Any) -> None:
    """Raise `ArgumentsError` when ``text``, which decoded to ``decoded``, names a key twice in one object."""
    if not _counts_match(text, decoded):
        _parse_refusing_repeats(text)


def _counts_match(text: str | bytes, decoded: Any) -> bool:
    r"""Whether the text has exactly as many colons as the decoded value written out again.

    Re-encoded, the value has one colon per key plus the colons inside its strings. Without
    ``\u`` escapes every colon of a decoded string is a colon of the text too, so a text with
    no more colons than that has none left over for a repeated key.
    """
    if isinstance(text, str):
        colons, escaped = text.count(":"), "\\u" in text
    else:
        data = bytes(text)
        colons, escaped = data.count(b":"), data.find(b"\\u") >= 0
    return not escaped and colons == _encode(decoded).count(b":")


class _Repeated(Exception):
    def __init__(self, key: str):
        self.key = key


def _parse_refusing_repeats(text: str | bytes) -> None:
    import json

    if not isinstance(text, (str, bytes)):
        text = bytes(text)

    def pairs(items: list[tuple[str, Any]]) -> None:
        seen = set()
        for key, _ in items:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except _Repeated as exc:
        reason = f"the key {shorten(exc.key)!r} appears more than once in one object; send each key once"
    except (ValueError, RecursionError):  # msgspec read it, json did not: refuse what parsers disagree on
        reason = "the arguments could not be read unambiguously"
    else:
        return
    raise ArgumentsError(reason, keyword="json")  # raised outside the handler: it carries no parser frames
