"""Turning a failed check into an `ArgumentsError`: where in the arguments, which keyword, why.

This module owns the failure protocol between the generated validator and tinytools. Each
place in the generated code that can fail is a `Site`, recorded while generating: the keyword,
the (translated) schema node, and the path from the function's input to the checked value,
where ``None`` stands for an index or key known only at run time. A failing check raises
`tinytools.schema.codegen.Failure` (it lives with the generator, so this module needs no
fastjsonschema) with ``args = (site, value, prefix, *dynamic)``: ``dynamic`` fills the ``None``
slots, and ``prefix`` is ``None`` in the root function or, inside a ``$ref`` function, the
call's own ``(site, prefix, *dynamic)``, a chain back to the root. `ErrorMap` reads that
without re-walking the data; the wording of each site is built on its first failure and kept.
"""

from __future__ import annotations

import json.encoder
import math
import re
from collections.abc import Callable
from typing import Any

from tinytools.errors import ECHO_LIMIT, ArgumentsError, schema_failure, shorten

__all__ = ["ErrorMap", "Site", "Token", "echo", "escape"]

Token = str | int
Explain = Callable[[Any], tuple[str, Token | None]]
Wording = str | Explain  # a str is the reason up to the echoed value: most keywords need no more

_ENCODER = json.encoder.JSONEncoder(ensure_ascii=False)  # json.dumps(value, ensure_ascii=False)
_quote = json.encoder.encode_basestring  # the same for one string, without building an encoder
_EXPECTED = {
    "minimum": "at least {}", "maximum": "at most {}", "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}", "minLength": "at least {} characters",
    "maxLength": "at most {} characters", "minItems": "at least {} items",
    "maxItems": "at most {} items", "minProperties": "at least {} properties",
    "maxProperties": "at most {} properties", "multipleOf": "a multiple of {}",
    "uniqueItems": "unique items", "type": "{}", "enum": "one of {}", "const": "{}",
    "pattern": "a string matching {}", "contains": "an item matching 'contains'",
    "propertyNames": "property names matching 'propertyNames'", "not": "a value not matching 'not'",
    "anyOf": "a value matching at least one of {} schemas",
    "oneOf": "a value matching exactly one of {} schemas",
}  # fmt: skip
_BROKEN = (KeyError, StopIteration, TypeError, AttributeError, IndexError, ValueError, re.error)


def escape(token: Token) -> str:
    """One JSON-pointer reference token (RFC 6901)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def echo(value: Any) -> str:
    """JSON text of ``value`` (as ``json.dumps(value, ensure_ascii=False)``), cut to the echo limit."""
    kind = type(value)
    try:
        if kind is str:
            text = _quote(value[:ECHO_LIMIT])
        elif kind is int or (kind is float and math.isfinite(value)):
            text = repr(value)  # what json.dumps writes; raises ValueError for a huge int
        else:
            text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except ValueError:  # an int beyond the str() digit limit
            text = f"<{kind.__name__} too long to show>"
        except Exception:  # nested too deeply, or a __repr__ that fails
            text = f"<{kind.__name__}>"
    if not text.isascii():  # a lone surrogate would make the message impossible to encode
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= ECHO_LIMIT else shorten(text)


class Site:
    """One place in the generated code that can fail, or one ``$ref`` call (``rule`` "$ref")."""

    __slots__ = ("definition", "fixed", "rule", "template", "worded")

    def __init__(self, rule: str | None, definition: Any, template: tuple[Token | None, ...]):
        self.rule = rule or "false"  # a false schema fails under no keyword
        self.definition = definition
        self.template = template
        self.worded: dict[bool, Wording] = {}  # by "below the root", built on first use
        self.fixed: tuple[Wording, str, str | None, Any] | None = None  # see `fix`

    def fix(self, properties: dict[str, Any]) -> tuple[Wording, str, str | None, Any]:
        """For a path without run-time parts, from the root: wording, pointer, parameter, fragment."""
        path = self.template
        first = path[0] if path and isinstance(path[0], str) else None
        pointer = "".join(f"/{escape(t)}" for t in path if t is not None)
        self.fixed = (
            self.wording(bool(path)),
            pointer,
            first,
            properties.get(first) if first is not None else None,
        )
        return self.fixed

    def wording(self, nested: bool) -> Wording:
        """How this site words a failure; ``nested`` is whether the value is below the root."""
        wording = self.worded.get(nested)
        if wording is None:
            definition = self.definition if isinstance(self.definition, dict) else {}
            try:
                wording = _wording(self.rule, definition, "property" if nested else "argument")
            except _BROKEN:
                wording = self.fallback
            self.worded[nested] = wording
        return wording

    def fallback(self, value: Any) -> tuple[str, Token | None]:
        """The wording when nothing more precise is known."""
        return f"failed {self.rule!r}; got {echo(value)}", None


def _wording(rule: str, definition: dict[str, Any], noun: str) -> Wording:
    """Precompute what can be: the reason's head, or a function that words a failure."""
    expected: Any = definition.get(rule)
    if rule == "required":

        def missing(value: Any) -> tuple[str, Token | None]:
            names = [name for name in expected if name not in value]
            listed = shorten(", ".join(map(repr, names)))
            return f"missing required {noun}{'s' * (len(names) > 1)} {listed}", names[0]

        return missing
    if rule == "additionalProperties":
        known = definition.get("properties", {})
        patterns = [re.compile(p).search for p in definition.get("patternProperties", {})]
        allowed = shorten(", ".join(known)) or "none"

        def unexpected(value: Any) -> tuple[str, Token | None]:
            bad = next(k for k in value if k not in known and not (patterns and any(p(k) for p in patterns)))
            return f"unexpected {noun} {shorten(bad)!r} (allowed: {allowed})", bad

        return unexpected
    if rule == "items":
        count = len(expected) if isinstance(expected, list) else 0
        return lambda value: (f"expected at most {count} items; got {len(value)}", count)
    if rule == "dependencies":

        def dependent(value: Any) -> tuple[str, Token | None]:
            key, needs = next(
                (k, v)
                for k, v in expected.items()
                if k in value and (v is False or (isinstance(v, list) and any(n not in value for n in v)))
            )
            if needs is False:
                return f"property {shorten(key)!r} is not allowed", key
            return f"property {shorten(key)!r} requires {shorten(', '.join(map(repr, needs)))}", None

        return dependent
    if rule == "type":
        expected = " or ".join(expected if isinstance(expected, list) else [expected])
    elif rule in ("const", "pattern"):
        expected = echo(definition.get("x-pattern", expected) if rule == "pattern" else expected)
    elif rule in ("enum", "anyOf", "oneOf"):
        expected = shorten(", ".join(map(echo, expected))) if rule == "enum" else len(expected)
    return f"expected {_EXPECTED.get(rule, 'no value here').format(expected)}; got "


class ErrorMap:
    """Map the ``args`` of a `Failure` to an `ArgumentsError` for one compiled schema."""

    def __init__(self, sites: list[Site], schema: Any) -> None:
        self.sites = sites
        properties = schema.get("properties") if isinstance(schema, dict) else None
        self.properties: dict[str, Any] = properties if isinstance(properties, dict) else {}

    def tokens(self, args: tuple[Any, ...]) -> list[Token]:
        """The path from the root to the failing value: each ``$ref`` call's, then the site's."""
        template, prefix = self.sites[args[0]].template, args[2]
        if prefix is None:  # in the root function: no $ref call on the way
            values = iter(args[3:])
            return [next(values) if t is None else t for t in template]
        links = [(args[0], args[3:])]
        while prefix is not None:  # (site, prefix, *dynamic) for each enclosing $ref call
            links.append((prefix[0], prefix[2:]))
            prefix = prefix[1]
        tokens: list[Token] = []
        for site, dynamic in reversed(links):
            values = iter(dynamic)
            tokens += [next(values) if t is None else t for t in self.sites[site].template]
        return tokens

    def error(self, args: tuple[Any, ...]) -> ArgumentsError:
        """The `ArgumentsError` for a failure's ``args``."""
        site: Site = self.sites[args[0]]
        if args[2] is None and len(args) == 3:  # a path without run-time parts, in the root function
            wording, pointer, parameter, fragment = site.fixed or site.fix(self.properties)
            if type(wording) is str:  # the common case: all but the echoed value is known
                reason = wording + echo(args[1])
                return schema_failure(reason, pointer, site.rule, parameter, fragment)
        else:
            tokens = self.tokens(args)
            wording = site.wording(bool(tokens))
            pointer = "/" + "/".join(map(escape, tokens)) if tokens else ""
            parameter = tokens[0] if tokens and isinstance(tokens[0], str) else None
        try:
            reason, inner = (wording + echo(args[1]), None) if isinstance(wording, str) else wording(args[1])
        except _BROKEN:
            reason, inner = site.fallback(args[1])
        keyword = site.rule
        if inner is not None:
            if keyword != "required":
                pointer += f"/{escape(inner)}"  # the extra key or item exists, so point at it
            if parameter is None and isinstance(inner, str):
                parameter = inner
        if keyword == "dependencies":
            keyword = "dependentRequired" if inner is None else "dependentSchemas"
        fragment = self.properties.get(parameter) if parameter is not None else None
        return schema_failure(reason, pointer, keyword, parameter, fragment)
