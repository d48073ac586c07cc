"""Compiling a translated (draft-07) schema document into a checker, with fastjsonschema.

This module owns code generation. fastjsonschema's draft-07 generator is used with these
changes: ``multipleOf`` is exact for big and fractional numbers; every failing check raises a
cheap `Failure` that names a precomputed `Site` instead of building a message and a copy of
the schema; and ``$ref`` calls pass their caller's path as a tuple instead of formatting a
dotted name. The path is known exactly while generating, so no failure has to re-walk the data.

The valid path is tuned for decoded JSON, whose values are exactly the builtin classes, while
giving every other value (subclasses such as a str-Enum, bool, tuples, Decimal) the same
verdict as fastjsonschema: a type check first tries ``value.__class__ is str`` and only then
fastjsonschema's ``isinstance`` form; a keyword's "is it a string/number/array/object" guard
is dropped when the same schema's ``type`` has already settled it; a closed object counts the
known names it has instead of copying and emptying a set of its keys; string and integer enum
members are looked up in a frozenset for values of exactly that class; an array loop finds
the index of a failing item only when it fails; an ``anyOf`` skips its trials for a value of
exactly the class of a branch that only names types (``Model | None`` given None), and a tagged
union (object branches told apart by a ``const`` string property) tries only the branch the
value's tag names, instead of failing through every branch before it; and the
root function maps its own failures to `ArgumentsError`, so no wrapper call is paid. The root of
an arguments object (`@tool`'s: type, properties, required, closed) goes on past a failing
argument to the next, in the same pass, so one pass lists every failing argument; only then are
the problems inside a failing argument looked for (`tinytools._schema.validation_failures.Collector`).

Validation takes time linear in the arguments, whatever the schema. Without a ``$ref`` the
checks form a tree, so each check meets each value at most once. A ``$ref`` target that two
call sites could call on the same value (levels of ``anyOf`` over the same definitions; see
`tinytools._schema.references`) could be tried on one value once per path, ten to the power of
the levels for a value that fails them all; so a call of such a target goes through `_shared`,
which remembers, for the one validation, the verdict of each target on each value (by
identity: the arguments hold every value while they are checked) and reuses it, a failure
rebased onto the caller's path. Each target then runs at most once per value, and targets
referenced only from places holding different values keep their direct, cheaper calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import indexOf
from typing import Any, cast

from fastjsonschema import JsonSchemaDefinitionException, JsonSchemaValueException
from fastjsonschema.draft04 import JSON_TYPE_TO_PYTHON_TYPE
from fastjsonschema.draft07 import CodeGeneratorDraft07
from fastjsonschema.ref_resolver import RefResolver

from tinytools._errors import ArgumentsError, SchemaError
from tinytools._schema.converters import flooded
from tinytools._schema.nested_failures import NestedErrors
from tinytools._schema.references import Call, repeated_targets
from tinytools._schema.validation_failures import (
    Check,
    Collector,
    Each,
    ErrorMap,
    Locate,
    Report,
    ReportAll,
    Site,
    Token,
    listing_reporter,
    reporter,
)


class Failure(JsonSchemaValueException):
    """Raised by generated code; ``args`` is ``(site, value, prefix, *dynamic)``.

    A subclass, so the generated ``anyOf``/``not``/``if`` trials still catch it, but with
    `BaseException`'s constructor: raising it builds no message and no schema copy.
    """

    __init__ = BaseException.__init__


__all__ = ["compile_document"]


def _is_multiple(value: float, divisor: float) -> bool:
    """Exact ``multipleOf``: a number is the decimal it prints as, never a rounded float."""
    if isinstance(value, int) and isinstance(divisor, int):
        return int(value) % int(divisor) == 0
    from fractions import Fraction  # only fractional multipleOf needs it; keeps import light

    exact = [Fraction(int(x)) if isinstance(x, int) else Fraction(repr(float(x))) for x in (value, divisor)]
    return (exact[0] / exact[1]).denominator == 1  # int() and float(): an IntEnum's repr is no number


def _unique(items: Sequence[Any]) -> bool:
    """Whether an array's items are unique, as JSON compares them (``1`` and ``1.0`` are equal).

    Integers that all hash alike (``n + k * (2**61 - 1)``) would make the set below take time
    quadratic in their number; such an array (see `flooded`) is refused as not unique before the
    set is built.
    """
    keys = [_key(item) for item in items]
    return not flooded(keys) and len(set(keys)) == len(keys)


def _key(value: Any) -> Any:
    """A hashable key under which two JSON values are equal exactly when JSON says they are."""
    kind = value.__class__
    if kind is dict:
        return frozenset((key, _key(item)) for key, item in value.items())
    if kind is list or kind is tuple:
        return tuple(_key(item) for item in value)
    if kind is bool:
        return (bool, value)
    return value


class _Here:
    """The path prefix a shared target is first run with, replaced by each caller's own (`_rebased`)."""

    __slots__ = ()


_HERE = _Here()
_UNSEEN = object()


def _shared(check: Callable[..., None], value: object, memo: dict[tuple[Any, int], Any], prefix: Any) -> None:
    """Call a ``$ref`` target's function once per value and validation; after that, repeat its verdict.

    ``memo`` lives for one validation (the root function makes it), keyed by the function and the
    value's identity: the arguments hold every value they are made of while they are checked.
    """
    key = (check, id(value))
    known = memo.get(key, _UNSEEN)
    if known is _UNSEEN:
        try:
            check(value, memo, _HERE)
        except Failure as failure:
            known = memo[key] = failure.args
        else:
            memo[key] = None
            return
    elif known is None:
        return
    raise Failure(known[0], known[1], _rebased(known[2], prefix), *known[3:])


def _rebased(chain: Any, prefix: Any) -> Any:
    """A failure's chain of ``$ref`` calls (``(site, prefix, *dynamic)``) ending at ``prefix`` instead of `_HERE`."""
    links = []
    while chain is not _HERE:
        links.append(chain)
        chain = chain[1]
    for link in reversed(links):
        prefix = (link[0], prefix, *link[2:])
    return prefix


def _index(items: Sequence[Any], item: object) -> int:
    """Where a failing item is: the first item identical to it, which would have failed first."""
    return indexOf(map(id, items), id(item))


# Exact-class checks that imply a JSON type; anything else falls back to isinstance.
_EXACT = {
    "string": "{variable}.__class__ is str",
    "integer": "{variable}.__class__ is int",
    "number": "{variable}.__class__ is int or {variable}.__class__ is float",
    "boolean": "{variable}.__class__ is bool",
    "null": "{variable} is None",
    "array": "{variable}.__class__ is list",
    "object": "{variable}.__class__ is dict",
}
# fastjsonschema's guards of type-specific keywords: the JSON types that pass each, and the line
# again with a hole for the condition and the condition to use when ``type`` has not settled it.
_GUARDS = {
    "if isinstance({variable}, str):": ({"string"}, "if {}:", "isinstance({variable}, str)"),
    "if isinstance({variable}, (int, float, Decimal)) and not isinstance({variable}, bool):": (
        {"integer", "number"},
        "if {}:",
        "{variable}.__class__ is int or {variable}.__class__ is float"
        " or isinstance({variable}, (int, float, Decimal)) and not isinstance({variable}, bool)",
    ),
    "{variable}_is_list = isinstance({variable}, (list, tuple))": (
        {"array"},
        "{variable}_is_list = {}",
        "{variable}.__class__ is list or isinstance({variable}, (list, tuple))",
    ),
    "{variable}_is_dict = isinstance({variable}, dict)": (
        {"object"},
        "{variable}_is_dict = {}",
        "isinstance({variable}, dict)",
    ),
    "if {variable}_is_list:": ({"array"}, "if {}:", "{variable}_is_list"),
    "if {variable}_is_dict:": ({"object"}, "if {}:", "{variable}_is_dict"),
}


_RAISE = "raise _Failure("
"""How a generated line that fails begins (`_Generator.exc` writes it; the root's returns rewrite it)."""
_ORDERED_ROOT = frozenset({"type", "properties", "required", "additionalProperties", "definitions"})
"""Root keywords whose checks run in a known order: ``required``, each property, the names (`_Generator`)."""
_RECORD = "(_failures := _failures or []).append"
"""How a collecting root records a property's failure (`_Generator._collecting`): the list made on the first."""


class _Generator(CodeGeneratorDraft07):
    """Draft-07 code generation that raises `Failure` with a site and an exact path."""

    def __init__(self, document: dict[str, Any], resolver: RefResolver, *, collect: bool = False) -> None:
        """Generate the check of ``document``; with ``collect``, an ordered root lists each failing property.

        Ordered: an object of nothing but `_ORDERED_ROOT` keywords, ``additionalProperties`` a
        boolean or ``{}`` (what `@tool` makes). Its root function then checks every property to
        its first failure, whatever failed before, and returns `_errors` of them all (see
        `_collecting`).
        """
        super().__init__(document, resolver=resolver, use_default=False, use_formats=False)  # type: ignore[no-untyped-call]
        self.collects = (
            collect
            and isinstance(document, dict)
            and document.get("type") == "object"
            and isinstance(document.get("properties"), dict)
            and document.keys() <= _ORDERED_ROOT
            and document.get("additionalProperties", True) in (True, False, {})
        )
        """Whether the root function lists each failing property itself (else it stops at its first failure)."""
        self._root = document  # the root function's definition: its properties are the ones collected
        self.sites: list[Site] = []
        # Steps from the current function's input to the value being checked: a key or index,
        # or None and the generated variable that holds it at run time.
        self._path: list[tuple[Token | None, str]] = []
        self._entry: str = resolver.get_scope_name()
        self._calls: list[tuple[int, Call]] = []  # each $ref call, and its line
        self._function = self._entry  # the function being generated
        self._memo_line = -1  # the root function's line that makes the memo of `_shared`
        self._tag_tables: dict[str, dict[str, int]] = {}  # each tagged union's tag -> branch number

    def generate_validation_function(self, uri: str, name: str) -> None:
        self._path = []  # each function starts at its own input; callers pass their path
        self._function = name
        if name != self._entry:
            return super().generate_validation_function(uri, name)  # type: ignore[no-any-return, no-untyped-call]
        # The root schema's function is the checker itself: it maps its failures to errors.
        # No $ref calls it: translation points a reference to the root at a copy.
        self._validation_functions_done.add(uri)
        header = "def {}(data, custom_formats={{}}, name_prefix=None):"
        with self._resolver.resolving(uri) as definition, self.l(header, name):
            self.l("pass")  # becomes the memo of `_shared` if a $ref target has two callers or more
            self._memo_line = len(self._code) - 1
            if self.collects:
                self.l("_failures = None")
            with self.l("try:", optimize=False):
                start = len(self._code)
                self.generate_func_code_block(definition, "data", "data", clear_variables=True)
                self.l("pass")
                self._return_directly(start)
            with self.l("except _Failure as exc:"):
                self.l("return _error(exc.args, data)")
            with self.l("except RecursionError:"):
                if self.collects:  # what the pass found before it was cut short is kept; the names were not counted
                    self.l("return _too_deep() if _failures is None else _errors(_failures, data, None)")
                else:
                    self.l("return _too_deep()")
        return None

    def _return_directly(self, start: int) -> None:
        """In the root function, a failure no trial catches returns its error rather than raising it.

        A raise and its catch cost more than the checks before them; a failure inside a trial
        (``anyOf``, ``not``, ``if`` ...: a ``try`` of its own) must still raise, to be caught there.
        The lines from ``start`` are the body of the root's own ``try``.
        """
        for number, indent, text in self._unenclosed(start, ("try:",)):
            if text.startswith(_RAISE) and text.endswith(")"):
                self._code[number] = f"{indent}return _error(({text[len(_RAISE) : -1]},), data)"

    def _unenclosed(self, start: int, openers: tuple[str, ...]) -> Iterator[tuple[int, str, str]]:
        """The lines from ``start`` in no block a line beginning with one of ``openers`` opens.

        Each as its number, its indentation and its text; a line may be rewritten as it comes.
        """
        enclosing: list[int] = []  # the indentation of each opening line around the line
        for number in range(start, len(self._code)):
            line = self._code[number]
            text = line.lstrip()
            indent = len(line) - len(text)
            while enclosing and enclosing[-1] >= indent:
                enclosing.pop()
            if text.startswith(openers):
                enclosing.append(indent)
            elif not enclosing:
                yield number, line[:indent], text

    def generate_func_code_block(
        self, definition: Any, variable: str, variable_name: str, clear_variables: bool = False
    ) -> Any:
        with self._step(variable_name):
            return super().generate_func_code_block(definition, variable, variable_name, clear_variables)  # type: ignore[no-untyped-call]

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Follow the generator's dotted name one step down, keeping the step unambiguous."""
        parent = self._variable_name or name
        suffix, variable = name[len(parent) :], self._variable
        step: tuple[Token | None, str] | None = None
        if not name.startswith(parent):
            raise JsonSchemaDefinitionException(f"cannot follow {parent!r} to {name!r}")
        if suffix == f"[{{{variable}_x}}]":
            step = None, f"{variable}_x"  # the index variable of a generated loop
        elif suffix == f".{{{variable}_key}}":
            step = None, f"{variable}_key"  # the key variable of a generated loop
        elif re.fullmatch(r"\[\d+\]", suffix):
            step = int(suffix[1:-1]), ""
        elif suffix:
            names = self._definition.get("properties", {}) if isinstance(self._definition, dict) else {}
            key = next((k for k in names if f".{self._brace(k)}" == suffix), None)
            if key is None:
                raise JsonSchemaDefinitionException(f"cannot follow {parent!r} to {name!r}")
            step = key, ""
        if step:
            self._path.append(step)
        try:
            yield
        finally:
            if step:
                self._path.pop()

    def _brace(self, key: str) -> str:
        """A property name as the generator writes it into a dotted name."""
        escaped: str = self.e(key)  # type: ignore[no-untyped-call]
        return escaped.replace("{", "{{").replace("}", "}}")

    def _site(self, rule: str | None) -> tuple[int, str]:
        """Record a site at the current path; return its number and the dynamic arguments."""
        self.sites.append(Site(rule, self._definition, tuple(token for token, _ in self._path)))
        dynamic = "".join(f", {variable}" for token, variable in self._path if token is None)
        return len(self.sites) - 1, dynamic

    def exc(self, msg: str, *args: Any, append_to_msg: str | None = None, rule: str | None = None) -> None:
        site, dynamic = self._site(rule)
        self.l(f"{_RAISE}{site}, {{variable}}, name_prefix{dynamic})")

    def generate_ref(self) -> None:
        with self._resolver.in_scope(cast(dict[str, Any], self._definition)["$ref"]):
            name, uri = self._resolver.get_scope_name(), self._resolver.get_uri()
            if name == self._entry:
                raise JsonSchemaDefinitionException("a $ref to the root is not translated")
            if uri not in self._validation_functions_done:
                self._needed_validation_functions[uri] = name
            prefix = "name_prefix"
            if self._path:
                site, dynamic = self._site("$ref")
                prefix = f"({site}, name_prefix{dynamic})"
            self.l(f"{name}({{variable}}, custom_formats, {prefix})")
            steps = tuple(token for token, _ in self._path)
            self._calls.append((len(self._code) - 1, Call(self._function, name, steps)))

    def generate_func_code(self) -> None:
        """Generate every function, then route the calls of targets one value could reach twice through `_shared`.

        fastjsonschema passes ``custom_formats`` to every function and reads it only for formats,
        which are not asserted here; the root function rebinds it to a new dict, the memo.
        """
        super().generate_func_code()  # type: ignore[no-untyped-call]
        shared = repeated_targets((call for _, call in self._calls), self._entry)
        if not shared:
            return
        for line, call in self._calls:
            if call.target in shared:
                self._code[line] = self._code[line].replace(f"{call.target}(", f"_shared({call.target}, ", 1)
        self._code[self._memo_line] = self._code[self._memo_line].replace("pass", "custom_formats = {}", 1)

    def generate_required(self) -> None:
        """``"a" not in data or ...``: a third of the cost of fastjsonschema's set difference."""
        required = cast(dict[str, Any], self._definition)["required"]  # unique names: translation checked
        if not required:
            return
        self.create_variable_is_dict()  # type: ignore[no-untyped-call]
        with self.l("if {variable}_is_dict:"):
            absent = " or ".join(["{!r} not in {variable}"] * len(required))
            with self.l(f"if {absent}:", *required):
                self.exc("", rule="required")

    def generate_unique_items(self) -> None:
        """Unique items, refusing hash flooding (see `_unique`)."""
        if not cast(dict[str, Any], self._definition)["uniqueItems"]:
            return
        self.create_variable_is_list()  # type: ignore[no-untyped-call]
        with self.l("if {variable}_is_list and not _unique({variable}):"):
            self.exc("", rule="uniqueItems")

    def generate_multiple_of(self) -> None:
        number = "isinstance({variable}, (int, float)) and not isinstance({variable}, bool)"
        with self.l(f"if {number} and not _is_multiple({{variable}}, {{multipleOf}}):"):
            self.exc("", rule="multipleOf")

    def l(self, line: str, *args: Any, **kwds: Any) -> Any:  # noqa: E743 - fastjsonschema's name
        """Emit a line; a type guard the schema's ``type`` has settled becomes cheaper or ``True``."""
        if line in _GUARDS:
            passing, template, condition = _GUARDS[line]
            line = template.replace("{}", self._decided(passing) or condition)
        elif line.startswith("def fn(var): "):  # uniqueItems: a tuple is an array too
            line = line.replace("(dict, list)", "(dict, list, tuple)")
        return super().l(line, *args, **kwds)

    def _decided(self, passing: set[str]) -> str:
        """A guard's condition if this schema's ``type`` (checked first) settles it, else ""."""
        types = self._definition.get("type", ()) if isinstance(self._definition, dict) else ()
        allowed = {types} if isinstance(types, str) else set(types)
        if not allowed or not allowed <= passing | {"null"}:
            return ""
        return "{variable} is not None" if "null" in allowed else "True"

    def generate_type(self) -> None:
        """The check fastjsonschema makes, tried only when no exact-class check passes."""
        types = cast(dict[str, Any], self._definition)["type"]
        types = [types] if isinstance(types, str) else types
        exact = [_EXACT[t] for t in types if t != "integer" or "number" not in types]
        python_types = ", ".join(JSON_TYPE_TO_PYTHON_TYPE[t] for t in types)
        check = f"not isinstance({{variable}}, ({python_types}))"
        if "integer" in types:
            check += " and not (isinstance({variable}, float) and {variable}.is_integer())"
        if ("number" in types or "integer" in types) and "boolean" not in types:
            check += " or isinstance({variable}, bool)"
        with self.l(f"if not ({' or '.join(exact)}) and ({check}):"):
            self.exc("", rule="type")

    def generate_enum(self) -> None:
        """Strings and numbers of exactly str or int class are looked up in a frozenset."""
        enum = cast(dict[str, Any], self._definition)["enum"]
        variable = self._variable
        match = " or ".join(self._enum_value_matches(variable, value) for value in enum)  # type: ignore[no-untyped-call]
        check = f"({match})" if match else "False"
        numbers = [v for v in enum if type(v) in (int, float)]  # as fastjsonschema: 1 == 1.0, not True
        for cls, members in (("int", numbers), ("str", [v for v in enum if type(v) is str])):
            if members:
                literal = "{" + ", ".join(map(repr, members)) + ",}"  # compiled to a frozenset
                check = f"{variable} in {literal} if {variable}.__class__ is {cls} else {check}"
        with self.l("if not ({}):", check):
            self.exc("", rule="enum")

    def generate_any_of(self) -> None:
        """Skip the trials for a value of exactly the class of a branch that only names types.

        A tagged union (every branch an object whose property ``K`` is a ``const`` string, each its
        own) tries only the branch its value's tag names: the others would fail on the tag. A
        value with no such tag takes the trials of every branch, as any ``anyOf`` does.
        """
        branches = cast(dict[str, Any], self._definition)["anyOf"]
        tagged = _tagged(branches)
        if tagged is not None:
            return self._trials(branches, tagged)
        types = [b["type"] for b in branches if isinstance(b, dict) and b.keys() == {"type"}]
        exact = [_EXACT[t] for each in types for t in ([each] if isinstance(each, str) else each)]
        if not exact:
            return self._trials(branches)
        with self.l(f"if not ({' or '.join(exact)}):"):
            self._trials(branches)
        return None

    def _trials(self, branches: list[Any], tagged: tuple[str, list[str]] | None = None) -> None:
        """Each branch tried in turn until one passes; a tagged union's value tries the branch its tag names.

        A branch whose ``type`` rules out a plain value is not tried (it would fail on its type).
        """
        self._any_or_one_of_count += 1
        count = self._any_or_one_of_count
        found = f"{{variable}}_any_of_count{count}"
        self.l(f"{found} = 0")
        if tagged is None:
            self._guarded_trials(branches, found)
        else:
            key, tags = tagged
            table = f"_tags{len(self._tag_tables)}"
            self._tag_tables[table] = {tag: number for number, tag in enumerate(tags)}
            tag, at = f"{{variable}}_tag{count}", f"{{variable}}_at{count}"
            self.l(f"{tag} = {{variable}}.get({{}}) if {{variable}}.__class__ is dict else None", repr(key))
            self.l(f"{at} = {table}.get({tag}) if {tag}.__class__ is str else None")
            with self.l(f"if {at} is not None:", optimize=False):
                self._branch_of(branches, at, found, 0, len(branches))
            with self.l("else:", optimize=False):
                self._guarded_trials(branches, found)
        with self.l(f"if not {found}:", optimize=False):
            self.exc("{name} cannot be validated by any definition", rule="anyOf")

    def _branch_of(self, branches: list[Any], at: str, found: str, low: int, high: int) -> None:
        """Try the branch numbered ``at``, found by halving ``low``..``high`` (a few comparisons of ints)."""
        if high - low == 1:
            self._trial(branches[low], found)
            return
        middle = (low + high) // 2
        with self.l(f"if {at} < {middle}:", optimize=False):
            self._branch_of(branches, at, found, low, middle)
        with self.l("else:", optimize=False):
            self._branch_of(branches, at, found, middle, high)

    def _guarded_trials(self, branches: list[Any], found: str) -> None:
        for branch in branches:
            guard = _guard(branch)
            with self.l(f"if not {found}{' and (' + guard + ')' if guard else ''}:", optimize=False):
                self._trial(branch, found)

    def _trial(self, branch: Any, found: str) -> None:
        """Try one branch of an ``anyOf``: count it if it passes."""
        with self.l("try:", optimize=False):
            with self.trial_validation():
                self.generate_func_code_block(
                    branch, self._variable or "", self._variable_name or "", clear_variables=True
                )
            self.l(f"{found} += 1")
        self.l("except {}: pass", "(JsonSchemaValueException, JsonSchemaValuesException)")

    def _plain_object(self) -> bool:
        """No patternProperties and additionalProperties absent, true, {} or false."""
        definition = cast(dict[str, Any], self._definition)
        extra = definition.get("additionalProperties", True)
        return "patternProperties" not in definition and (extra is True or extra is False or extra == {})

    def generate_properties(self) -> None:
        """Read each property once; count the known names present if extra names are refused.

        Required names were checked just before (``required`` precedes ``properties``), so
        they are read without testing for them.
        """
        if not self._plain_object():
            return super().generate_properties()  # type: ignore[no-any-return, no-untyped-call]
        definition = cast(dict[str, Any], self._definition)
        properties: dict[str, Any] = definition["properties"]
        required = set(definition.get("required", ())) & properties.keys()
        counting = definition.get("additionalProperties") is False
        collecting = self.collects and definition is self._root and self._function == self._entry
        add = self._collecting if collecting else self._property
        self.create_variable_is_dict()  # type: ignore[no-untyped-call]
        with self.l("if {variable}_is_dict:"):
            if counting:  # names present of those known; any other name is one too many
                self.l("{variable}_known = {}", len(required))
            else:
                self.l("pass")  # in case no property needs code
            for key, subschema in properties.items():
                if not isinstance(subschema, (dict, bool)):
                    raise JsonSchemaDefinitionException(f"{self._variable}[{key!r}] must be object")
                empty = subschema is True or subschema == {}
                if key in required:
                    if not empty:
                        add(key, subschema)
                elif counting or not empty:
                    with self.l("if {} in {variable}:", repr(key)):
                        if counting:
                            self.l("{variable}_known += 1")
                        if not empty:
                            add(key, subschema)
            if collecting:  # the names are checked next, unless a property failed: then they are counted here
                strays = "len({variable}) != {variable}_known" if counting else "False"
                with self.l("if _failures is not None:"):
                    self.l(f"return _errors(_failures, {{variable}}, {strays})")
        return None

    def _property(self, key: str, subschema: Any) -> None:
        name = re.sub(r"($[^a-zA-Z]|[^a-zA-Z0-9])", "", key)  # as fastjsonschema names it
        self.l("{variable}__{} = {variable}[{}]", name, repr(key))
        dotted = f"{self._variable_name}.{self._brace(key)}"
        self.generate_func_code_block(subschema, f"{self._variable}__{name}", dotted, clear_variables=True)

    def _collecting(self, key: str, subschema: Any) -> None:
        """One property of a collecting root: its first failure joins ``_failures``, then the next property is checked.

        The checks run in a ``while True`` left by ``break``: a failure outside any trial or loop
        records itself and breaks, with no raise. One inside a loop (an array's items) or a
        ``$ref`` function still raises `Failure`, caught around the property and recorded; a
        property with neither has no ``try`` (one costs a little before Python 3.11).
        """
        with self.l("while True:", optimize=False):
            with self.l("try:", optimize=False):
                start = len(self._code)
                self._property(key, subschema)
                for number, indent, text in self._unenclosed(start, ("try:", "for ", "while ")):  # trials, loops
                    if text.startswith(_RAISE) and text.endswith(")"):
                        self._code[number] = f"{indent}{_RECORD}(({text[len(_RAISE) : -1]},)); break"
            unguarded = {number for number, _, _ in self._unenclosed(start, ("try:",))}  # a trial catches its own
            if any(self._code[number].lstrip().startswith(_RAISE) for number in unguarded) or any(
                line in unguarded for line, _ in self._calls
            ):
                with self.l("except _Failure as exc:", optimize=False):
                    self.l(f"{_RECORD}(exc.args)")
            else:  # nothing in it raises: the `try` goes, its body one level out (no `$ref` call's line moves)
                self._code[start - 1 :] = [line[self.INDENT :] for line in self._code[start:]]
            self.l("break", optimize=False)

    def generate_additional_properties(self) -> None:
        extra = cast(dict[str, Any], self._definition)["additionalProperties"]
        if not self._plain_object():
            return super().generate_additional_properties()  # type: ignore[no-any-return, no-untyped-call]
        if extra is not False:
            return None
        self.create_variable_is_dict()  # type: ignore[no-untyped-call]
        with self.l("if {variable}_is_dict:"):
            known = "properties" in cast(dict[str, Any], self._definition)
            with self.l("if len({variable}) != {variable}_known:" if known else "if {variable}:"):
                self.exc("", rule="additionalProperties")
        return None

    def generate_items(self) -> None:
        """One schema for every item: loop without enumerate while nothing needs the index."""
        items = cast(dict[str, Any], self._definition)["items"]
        if not isinstance(items, dict):
            return super().generate_items()  # type: ignore[no-any-return, no-untyped-call]
        if not items:
            return None
        self.create_variable_is_list()  # type: ignore[no-untyped-call]
        with self.l("if {variable}_is_list:"):
            start = len(self._code)
            with self.l("for {variable}_x, {variable}_item in enumerate({variable}):"):
                item, index = f"{self._variable}_item", re.compile(rf"\b{self._variable}_x\b")
                self.generate_func_code_block(items, item, f"{self._variable_name}[{{{self._variable}_x}}]")
                if len(self._code) == start + 1:
                    self.l("pass")
            body = self._code[start + 1 :]
            if not any(index.search(line) for line in body if not line.lstrip().startswith(_RAISE)):
                head = self._code[start]
                self._code[start] = head[: len(head) - len(head.lstrip())] + f"for {item} in {self._variable}:"
                late = f"_index({self._variable}, {item})"
                self._code[start + 1 :] = [index.sub(late, line) for line in body]
        return None

    @property
    def global_state(self) -> dict[str, Any]:
        return {
            **super().global_state,
            "_is_multiple": _is_multiple,
            "_Failure": Failure,
            "_index": _index,
            "_shared": _shared,
            "_unique": _unique,
            **self._tag_tables,
        }

    def _expand_refs(self, definition: Any) -> Any:
        return definition  # expanding would read "$ref" keys inside enum and const values


class _Resolver(RefResolver):
    """Resolve our ``#/definitions/...`` pointers without walking the document.

    Walking rewrites "$ref" strings under "$id" keys, even inside enum and const values.
    """

    def walk(self, node: Any, depth: int = 0, rewrite_refs: bool = True) -> None:
        return None


def compile_document(
    document: dict[str, Any],
    schema: Any,
    *,
    collect: bool = True,
    locate: Locate | None = None,
    below_root: bool = False,
) -> Check:
    """Compile a translated document into a check that returns None, or the `ArgumentsError`.

    The error is returned rather than raised: a bad call's result is built from it, and the
    raise would be its dearest step.

    ``schema`` is the original the document was translated from: an error's ``schema`` field
    is its fragment for the value at fault (or what ``locate`` gives; see `ErrorMap`, and
    ``below_root`` there). With ``collect``, an object root's error also lists every other
    failure (`ArgumentsError.errors`): the root of an ordered object checks each property to its
    first failure in its one pass, and `Collector` (beside the first failure of any other root)
    and, inside an argument, `NestedErrors` find the rest. A valid value's check does no more
    work for it.
    """

    def report(errors: ErrorMap, collects: bool) -> tuple[Report, ReportAll]:
        if not collect:
            return reporter(errors, None)
        expand = NestedErrors(document, schema, _leaf)
        return reporter(errors, Collector.of(document, schema, _each, expand, collects=collects))

    return cast(Check, _compiled(document, schema, report, collect=collect, locate=locate, below_root=below_root))


def _compiled(
    document: dict[str, Any],
    schema: Any,
    report: Callable[[ErrorMap, bool], tuple[Report, ReportAll]],
    *,
    collect: bool,
    locate: Locate | None = None,
    below_root: bool = False,
) -> Callable[[object], Any]:
    """The root function of ``document``; ``report`` gives what it returns for a failure (see `compile_document`)."""
    try:
        resolver = _Resolver("", document, store={})
        generator = _Generator(document, resolver, collect=collect)
        code = generator.func_code
        state = generator.global_state
        errors = ErrorMap(generator.sites, schema, locate=locate, below_root=below_root)
        state["_error"], state["_errors"] = report(errors, generator.collects)
        state["_too_deep"] = _too_deep
        exec(code, state)
    except (JsonSchemaDefinitionException, SyntaxError, RecursionError, ValueError, re.error) as exc:
        raise SchemaError(f"schema could not be compiled: {exc}") from None
    return cast(Callable[[object], Any], state[resolver.get_scope_name()])


def _each(document: dict[str, Any], schema: Any) -> Each:
    """A document of the properties alone, compiled for a `Collector`: each property's first failure, listed."""
    return cast(Each, _compiled(document, schema, lambda errors, _: listing_reporter(errors), collect=True))


def _leaf(document: dict[str, Any]) -> Check:
    """A subschema checked alone for `NestedErrors`: its errors' ``schema`` is the path below it."""
    return compile_document(document, None, collect=False, locate=list, below_root=True)


def _too_deep() -> ArgumentsError:
    return ArgumentsError("arguments nest too deeply to validate", keyword="depth")


def _tagged(branches: Any) -> tuple[str, list[str]] | None:
    """The property that tags every branch of an ``anyOf`` with a string of its own, and the tags; or None."""
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    shared: set[str] | None = None
    for branch in branches:
        if not isinstance(branch, dict) or branch.get("type") != "object":
            return None
        properties = branch.get("properties")
        if not isinstance(properties, dict):
            return None
        named = {key for key, schema in properties.items() if isinstance(schema, dict) and _string_const(schema)}
        shared = named if shared is None else shared & named
    for key in sorted(shared or ()):
        tags = [branch["properties"][key]["const"] for branch in branches]
        if len(set(tags)) == len(tags):
            return key, tags
    return None


def _string_const(schema: dict[str, Any]) -> bool:
    return isinstance(schema.get("const"), str)


_MAY_BE = {
    "string": "{variable}.__class__ is str",
    "integer": "{variable}.__class__ is int or {variable}.__class__ is float",
    "number": "{variable}.__class__ is int or {variable}.__class__ is float",
    "boolean": "{variable}.__class__ is bool",
    "null": "{variable} is None",
    "array": "{variable}.__class__ is list",
    "object": "{variable}.__class__ is dict",
}
"""A value of a plain JSON class that may pass each ``type`` (an integral float may be an integer)."""


def _guard(branch: Any) -> str | None:
    """When a branch is worth trying: its ``type`` may take the value, or the value is not of a plain JSON class.

    None when the branch says no ``type`` (always tried).
    """
    declared = branch.get("type") if isinstance(branch, dict) else None
    kinds = [declared] if isinstance(declared, str) else declared
    if not isinstance(kinds, list) or not kinds or not all(kind in _MAY_BE for kind in kinds):
        return None
    may_be = " or ".join(_MAY_BE[kind] for kind in kinds)
    return (
        f"{may_be} or ({{variable}} is not None and {{variable}}.__class__ not in (str, int, float, bool, list, dict))"
    )
