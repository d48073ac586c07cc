"""Turning a failed check into an `ArgumentsError`: where in the arguments, which keyword, why.

This module owns the failure protocol between the generated validator and tinytools. Each
place in the generated code that can fail is a `Site`, recorded while generating: the keyword,
the (translated) schema node, and the path from the function's input to the checked value,
where ``None`` stands for an index or key known only at run time. A failing check raises
`tinytools._schema.codegen.Failure` (it lives with the generator, so this module needs no
fastjsonschema) with ``args = (site, value, prefix, *dynamic)``: ``dynamic`` fills the ``None``
slots, and ``prefix`` is ``None`` in the root function or, inside a ``$ref`` function, the
call's own ``(site, prefix, *dynamic)``, a chain back to the root. `ErrorMap` reads that
without re-walking the data; the wording of each site is built on its first failure and kept.

The generated code stops at its first failure, which keeps a valid call's check as short as it
can be, except that the root of an arguments object of a known order (what `@tool` makes; see
`tinytools._schema.codegen`) checks each argument to its own first failure, every argument in one
pass. `Collector` puts those together,
looks again after any other failure, on that failure path only, and has
`tinytools._schema.nested_failures` find every other problem inside an argument's objects and
arrays, so that the model can repair them all in one round trip. Each
error quotes the schema of the value at fault (`tinytools._schema.fragments.schema_at`), not the
argument's whole schema.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from tinytools._errors import (
    MAX_LISTED,
    ArgumentsError,
    counted,
    echo,
    failure_like,
    schema_failure,
    shorten,
)
from tinytools._schema.fragments import schema_at

__all__ = [
    "Check",
    "Collector",
    "Each",
    "ErrorMap",
    "Expand",
    "FragmentCache",
    "Locate",
    "Report",
    "ReportAll",
    "Site",
    "Token",
    "escape",
    "listing_reporter",
    "locator",
    "reporter",
    "unescape",
]

Token = str | int
Locate = Callable[[list[Token]], Any]
"""What an error's ``schema`` holds for the path (keys and indexes) to the value at fault."""
Explain = Callable[[Any], tuple[str, Token | None]]
Wording = str | Explain  # a str is the reason up to the echoed value: most keywords need no more
Check = Callable[[object], ArgumentsError | None]
"""A compiled check: None for a valid value, else the first failure's `ArgumentsError`."""
Expand = Callable[[ArgumentsError, Any, int], tuple[list[ArgumentsError], int]]
"""Lists the failures inside one argument: given its first failure, its value and the room left."""

_EXPECTED = {
    "minimum": "at least {}", "maximum": "at most {}", "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}", "minLength": "at least {}", "maxLength": "at most {}",
    "minItems": "at least {}", "maxItems": "at most {}", "minProperties": "at least {}",
    "maxProperties": "at most {}", "multipleOf": "a multiple of {}",
    "uniqueItems": "unique items", "type": "{}", "enum": "one of {}", "const": "{}",
    "pattern": "a string matching {}", "contains": "an item matching 'contains'",
    "propertyNames": "property names matching 'propertyNames'", "not": "a value not matching 'not'",
    "anyOf": "a value matching at least one of {}",
    "oneOf": "a value matching exactly one of {}",
}  # fmt: skip
_COUNTED = {
    "minLength": "character", "maxLength": "character", "minItems": "item", "maxItems": "item",
    "minProperties": "property", "maxProperties": "property", "anyOf": "schema", "oneOf": "schema",
}  # fmt: skip
"""Keywords whose expected value is a count of something, and what is counted."""
_BROKEN = (KeyError, StopIteration, TypeError, AttributeError, IndexError, ValueError, re.error)


def escape(token: Token) -> str:
    """One JSON-pointer reference token (RFC 6901)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """The key one JSON-pointer reference token names (RFC 6901): `escape` undone."""
    return token.replace("~1", "/").replace("~0", "~")


class Site:
    """One place in the generated code that can fail, or one ``$ref`` call (``rule`` "$ref")."""

    __slots__ = ("definition", "fixed", "rule", "template", "worded")

    def __init__(self, rule: str | None, definition: Any, template: tuple[Token | None, ...]):
        self.rule = rule or "false"  # a false schema fails under no keyword
        self.definition = definition
        self.template = template
        self.worded: dict[bool, Wording] = {}  # by "below the root", built on first use
        self.fixed: tuple[Wording, dict[str, Any]] | None = None  # see `fix`

    def fix(self, locate: Locate, below_root: bool) -> tuple[Wording, dict[str, Any]]:
        """For a path without run-time parts, from the root: the wording, and the error's fields but its reason."""
        path = self.template
        first = path[0] if path and isinstance(path[0], str) else None
        pointer = "".join(f"/{escape(t)}" for t in path if t is not None)
        tokens = [token for token in path if token is not None]  # a fixed path has none
        fields = schema_failure("", pointer, self.rule, first, locate(tokens)).__dict__
        self.fixed = (self.wording(bool(path) or below_root), fields)
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
        return lambda value: (f"expected at most {counted(count, 'item')}; got {len(value)}", count)
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
    if rule in _COUNTED:
        expected = counted(expected, _COUNTED[rule])
    return f"expected {_EXPECTED.get(rule, 'no value here').format(expected)}; got "


def locator(schema: Any) -> Locate:
    """The `Locate` of an original schema: the subschema it gives the value at a path (`schema_at`)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    own: dict[str, Any] = properties if isinstance(properties, dict) else {}

    deeper = FragmentCache(schema)

    def locate(tokens: list[Token]) -> Any:
        if len(tokens) == 1 and tokens[0].__class__ is str:  # an argument itself: the common case
            return own.get(tokens[0])
        return deeper(tokens) if tokens else None

    return locate


class FragmentCache:
    """`schema_at` of one schema, remembered for the paths met last (a bad call tends to come again)."""

    LIMIT = 512

    def __init__(self, schema: Any):
        self.schema = schema
        self.known: dict[tuple[Token, ...], Any] = {}

    def __call__(self, tokens: list[Token]) -> Any:
        """The subschema describing the value at ``tokens``, or None (see `schema_at`)."""
        key = tuple(tokens)
        if key in self.known:
            return self.known[key]
        if len(self.known) >= self.LIMIT:
            self.known.clear()
        found = self.known[key] = schema_at(self.schema, tokens)
        return found


class ErrorMap:
    """Map the ``args`` of a `Failure` to an `ArgumentsError` for one compiled schema.

    An error's ``schema`` is what ``locate`` gives for the path to the value at fault (for a
    missing property, the property's path): by default the original schema's own fragment there.
    ``below_root`` words every failure as a property's, for a schema checked on a value inside an
    argument (`tinytools._schema.nested_failures`).
    """

    def __init__(self, sites: list[Site], schema: Any, *, locate: Locate | None = None, below_root: bool = False):
        self.sites = sites
        self.locate = locate if locate is not None else locator(schema)
        self.below_root = below_root

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
            wording, fields = site.fixed or site.fix(self.locate, self.below_root)
            if type(wording) is str:  # the common case: all but the echoed value is known
                return failure_like(fields, wording + echo(args[1]))
            pointer, parameter = fields["pointer"], fields["parameter"]
            tokens: list[Token] = [token for token in site.template if token is not None]  # a fixed path has none
        else:
            tokens = self.tokens(args)
            wording = site.wording(bool(tokens) or self.below_root)
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
            tokens = [*tokens, inner]  # the schema quoted is the extra key's, item's or missing property's
        if keyword == "dependencies":
            keyword = "dependentRequired" if inner is None else "dependentSchemas"
        return schema_failure(reason, pointer, keyword, parameter, self.locate(tokens))


Each = Callable[[dict[str, Any]], "list[ArgumentsError] | ArgumentsError | None"]
"""A compiled check of an object's properties alone that lists each one's first failure (None: all pass)."""
Report = Callable[[tuple[Any, ...], object], Any]
"""What a compiled root function returns for one failure's ``args`` and its input."""
ReportAll = Callable[[list[tuple[Any, ...]], object, "bool | None"], Any]
"""What it returns for each failing property's first failure (``args``), its input, and whether
the input holds names the (closed) object does not know (None: not counted, to be looked for)."""


def _take(error: ArgumentsError, other: ArgumentsError) -> None:
    """Make ``error`` describe the failure ``other`` describes."""
    error.pointer, error.keyword, error.reason = other.pointer, other.keyword, other.reason
    error.parameter, error.schema = other.parameter, other.schema
    error.args = (other.reason,)


def reporter(errors: ErrorMap, collector: Collector | None) -> tuple[Report, ReportAll]:
    """What a compiled root function calls with its failure, or with each failing property's: the error to return."""
    error = errors.error
    if collector is None:
        return (lambda args, data: error(args)), (lambda failures, data, strays: error(failures[0]))

    def report(args: tuple[Any, ...], data: object) -> ArgumentsError:
        first = error(args)
        if isinstance(data, dict):
            collector(first, data)
        return first

    def report_all(failures: list[tuple[Any, ...]], data: Any, strays: bool | None) -> ArgumentsError:
        first = error(failures[0])
        if strays is None:  # the root's pass was cut short (a value nested too deeply): look for them
            strays = collector.closed and not collector.known.issuperset(data)
        if (
            len(failures) > 1
            or strays
            or (  # else it is the only one
                data.get(first.parameter).__class__ in _HOLDERS and collector.holds_more(first, data)
            )
        ):
            unknown = [key for key in data if key not in collector.place] if strays else []
            collector.listing(first, [], [error(args) for args in failures[1:]], unknown, data)
        return first

    return report, report_all


_HOLDERS = (dict, list)
"""The classes of a value that may hold failures beside its first: `Collector.holds_more`'s first
question, asked before calling it (most failing values are neither)."""


def listing_reporter(errors: ErrorMap) -> tuple[Report, ReportAll]:
    """What the root function of an `Each` check calls: each failure's error, in a list."""
    error = errors.error
    return (lambda args, data: [error(args)]), (lambda failures, data, strays: [error(args) for args in failures])


class Collector:
    """Every failing argument of an arguments object the compiled check refused (the failure path only).

    The compiled check of an ordered root (what `@tool` makes: see `tinytools._schema.codegen`) checks ``required``,
    then every property in the schema's order, each to its first failure, then the names: one pass
    finds each failing argument, and `listing` puts them in order. Any other failure (a root of
    other keywords, or a required name absent, so the properties were not read) comes to
    ``__call__``, which looks again: required names that are absent, names a closed object does
    not know, and each known argument's first failure, from the check of the properties alone
    (an open object: other names pass), compiled the first time a failure needs it. Failures the
    root alone can find (``minProperties``, ``dependentRequired``, ...) are listed when the
    compiled check met them first.

    An argument whose value is an object or an array may hold more failures than its first:
    ``expand`` (`tinytools._schema.nested_failures.NestedErrors`) lists them all, at any depth, and
    the listing counts each as one problem.
    """

    def __init__(
        self,
        schema: dict[str, Any],
        *,
        closed: bool,
        collects: bool,
        make_each: Callable[[], Each | None],
        expand: Expand | None = None,
    ):
        """Collect for the original ``schema``.

        Args:
            schema: The original schema (for fragments and names).
            closed: Whether names that are not properties are refused.
            collects: Whether the root's own pass lists each failing property (see the class).
            make_each: Compiles the check of the properties alone (`each_check`); None when there are none.
            expand: Lists the failures inside one argument, given its first failure, its value
                and how many more the listing has room for; None to list one per argument.
        """
        self.expand = expand
        properties = schema.get("properties")
        self.properties: dict[str, Any] = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        self.required: list[str] = required if isinstance(required, list) else []
        self.closed = closed
        self.collects = collects
        self.place = {name: index for index, name in enumerate(self.properties)}
        self.known = frozenset(self.properties)
        self.allowed = shorten(", ".join(self.properties)) or "none"
        self.make_each = make_each

    @classmethod
    def of(
        cls,
        document: dict[str, Any],
        schema: Any,
        compile_each: Callable[[dict[str, Any], Any], Each],
        expand: Expand | None = None,
        *,
        collects: bool = False,
    ) -> Collector | None:
        """The collector of a translated ``document`` whose root is an object naming its properties, else None.

        ``compile_each`` compiles a document of its properties (with its definitions) into an
        `Each`; ``expand`` lists the failures inside one argument; ``collects``: whether the
        document's compiled root lists each failing property itself (see the class).
        """
        properties = document.get("properties", {})
        if document.get("type") != "object" or not isinstance(properties, dict) or "patternProperties" in document:
            return None
        if not isinstance(schema, dict):
            return None

        def each() -> Each | None:
            if not properties:
                return None
            alone: dict[str, Any] = {"type": "object", "properties": properties}  # no required, open: other names pass
            if "definitions" in document:
                alone["definitions"] = document["definitions"]
            return compile_each(alone, schema)

        closed = document.get("additionalProperties") is False
        return cls(schema, closed=closed, collects=collects, make_each=each, expand=expand)

    def __call__(self, first: ArgumentsError, data: dict[str, Any]) -> None:
        """Attach to ``first`` (the compiled check's error for ``data``) every failing argument."""
        parameter, pointer, keyword = first.parameter, first.pointer, first.keyword
        place = self.place
        index = place.get(parameter) if parameter is not None and pointer else None  # the argument it is in, if any
        unknown = [] if not self.closed or self.known.issuperset(data) else [key for key in data if key not in place]
        absent: list[str] = []
        if keyword == "additionalProperties" and self.collects:  # all but the names passed
            invalid = []
        else:
            absent = [name for name in self.required if name not in data]
            invalid = [each for each in self.invalid(data) if index is None or each.parameter != parameter]
        self.listing(first, absent, invalid, unknown, data)

    def listing(
        self,
        first: ArgumentsError,
        absent: list[str],
        invalid: list[ArgumentsError],
        unknown: list[str],
        data: dict[str, Any],
    ) -> None:
        """Attach to ``first`` the failures found beside it: names absent, arguments invalid, names unknown."""
        if not (absent or invalid or unknown or self.holds_more(first, data)):
            return
        lead = self.lead(first, absent, unknown)
        listed: list[ArgumentsError] = []
        total = len(absent[MAX_LISTED:]) + len(unknown)  # past the bound only counted
        for entry in (lead, *map(self.missing, absent[:MAX_LISTED]), *invalid):
            found, count = self.inside(entry, data, MAX_LISTED - len(listed))
            listed += found
            total += count
        listed += map(self.unknown, unknown[: max(0, MAX_LISTED - len(listed))])
        if listed and (listed[0].pointer, listed[0].keyword) != (first.pointer, first.keyword):
            _take(first, listed[0])  # explained by what lies below it: the first failure is that
        if total > 1:
            first.attach(tuple(listed), total - len(listed))

    def holds_more(self, error: ArgumentsError, data: dict[str, Any]) -> bool:
        """Whether the argument ``error`` is about may hold failures beside it: an object or an array."""
        parameter = error.parameter
        if self.expand is None or parameter is None:
            return False
        kind = data.get(parameter).__class__  # asked first: the cheapest question, and most often no
        return (
            (kind is dict or kind is list)
            and parameter in self.place
            and error.pointer != ""  # not a missing argument
            and not (error.keyword == "additionalProperties" and error.pointer == f"/{escape(parameter)}")
        )

    def inside(self, entry: ArgumentsError, data: dict[str, Any], room: int) -> tuple[list[ArgumentsError], int]:
        """The failures of the argument ``entry`` is the first of (at most ``room``), and how many there are."""
        if self.expand is None or not self.holds_more(entry, data):
            return [entry][:room], 1
        return self.expand(entry, data[str(entry.parameter)], room)

    def lead(self, first: ArgumentsError, absent: list[str], unknown: list[str]) -> ArgumentsError:
        """The entry for the first failure: its absent name's or unknown name's (taken from the lists), or a copy."""
        parameter, pointer, keyword = first.parameter, first.pointer, first.keyword
        if parameter is not None and keyword == "required" and not pointer and parameter in absent:
            absent.remove(parameter)
            return self.missing(parameter)
        if parameter is not None and keyword == "additionalProperties" and parameter in unknown:
            unknown.remove(parameter)
            return self.unknown(parameter)
        return schema_failure(first.reason, pointer, keyword, parameter, first.schema)

    @functools.cached_property
    def each_check(self) -> Each | None:
        """The check of the properties alone, compiled when a failure first needs it (None: there are none)."""
        return self.make_each()

    def invalid(self, data: dict[str, Any]) -> list[ArgumentsError]:
        """The first failure of each argument, in schema order."""
        check = self.each_check
        found = check(data) if check is not None else None
        if not isinstance(found, list):
            return []  # valid, or too deep to say where
        return [each for each in found if each.parameter in self.place]

    def missing(self, name: str) -> ArgumentsError:
        """The error of one absent required argument."""
        reason = f"missing required argument {shorten(repr(name))}"
        return schema_failure(reason, "", "required", name, self.properties.get(name))

    def unknown(self, key: str) -> ArgumentsError:
        """The error of one argument name the closed object does not know.

        A key that is not a string (only a Python value checked directly can hold one) is named
        as its text.
        """
        key = key if key.__class__ is str else str(key)
        reason = f"unexpected argument {shorten(key)!r} (allowed: {self.allowed})"
        return schema_failure(reason, f"/{escape(key)}", "additionalProperties", key, None)
