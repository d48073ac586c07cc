"""Compiling a translated (draft-07) schema document into a checker, with fastjsonschema.

This module owns code generation. fastjsonschema's draft-07 generator is used with three
changes: ``multipleOf`` is exact for big and fractional numbers; every failing check raises a
cheap `Failure` that names a precomputed `Site` instead of building a message and a copy of
the schema; and ``$ref`` calls pass their caller's path as a tuple instead of formatting a
dotted name. The path is known exactly while generating, so no failure has to re-walk the data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from fastjsonschema import JsonSchemaDefinitionException
from fastjsonschema.draft07 import CodeGeneratorDraft07
from fastjsonschema.ref_resolver import RefResolver

from tinytools._schema_errors import ErrorMap, Failure, Site, Token
from tinytools.errors import ArgumentsError, SchemaError

__all__ = ["compile_document"]


def _is_multiple(value: float, divisor: float) -> bool:
    """Exact ``multipleOf``: a number is the decimal it prints as, never a rounded float."""
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    from fractions import Fraction  # only fractional multipleOf needs it; keeps import light

    return (Fraction(repr(value)) / Fraction(repr(divisor))).denominator == 1


class _Generator(CodeGeneratorDraft07):
    """Draft-07 code generation that raises `Failure` with a site and an exact path."""

    def __init__(self, document: dict[str, Any], resolver: RefResolver) -> None:
        super().__init__(document, resolver=resolver, use_default=False, use_formats=False)  # type: ignore[no-untyped-call]
        self.sites: list[Site] = []
        # Steps from the current function's input to the value being checked: a key or index,
        # or None and the generated variable that holds it at run time.
        self._path: list[tuple[Token | None, str]] = []

    def generate_validation_function(self, uri: str, name: str) -> None:
        self._path = []  # each function starts at its own input; callers pass their path
        super().generate_validation_function(uri, name)  # type: ignore[no-untyped-call]

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
        self.l(f"raise _Failure({site}, {{variable}}, name_prefix{dynamic})")

    def generate_ref(self) -> None:
        with self._resolver.in_scope(cast(dict[str, Any], self._definition)["$ref"]):
            name, uri = self._resolver.get_scope_name(), self._resolver.get_uri()
            if uri not in self._validation_functions_done:
                self._needed_validation_functions[uri] = name
            prefix = "name_prefix"
            if self._path:
                site, dynamic = self._site("$ref")
                prefix = f"({site}, name_prefix{dynamic})"
            self.l(f"{name}({{variable}}, custom_formats, {prefix})")

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

    def generate_multiple_of(self) -> None:
        number = "isinstance({variable}, (int, float)) and not isinstance({variable}, bool)"
        with self.l(f"if {number} and not _is_multiple({{variable}}, {{multipleOf}}):"):
            self.exc("", rule="multipleOf")

    @property
    def global_state(self) -> dict[str, Any]:
        return {**super().global_state, "_is_multiple": _is_multiple, "_Failure": Failure}

    def _expand_refs(self, definition: Any) -> Any:
        return definition  # expanding would read "$ref" keys inside enum and const values


class _Resolver(RefResolver):
    """Resolve our ``#/definitions/...`` pointers without walking the document.

    Walking rewrites "$ref" strings under "$id" keys, even inside enum and const values.
    """

    def walk(self, node: Any, depth: int = 0, rewrite_refs: bool = True) -> None:
        return None


def compile_document(document: dict[str, Any], schema: Any) -> Callable[[object], None]:
    """Compile a translated document into a checker that raises `ArgumentsError`.

    ``schema`` is the original the document was translated from: an error's ``schema`` field
    is the fragment of its ``properties`` for the argument at fault.
    """
    try:
        resolver = _Resolver("", document, store={})
        generator = _Generator(document, resolver)
        state = generator.global_state
        exec(generator.func_code, state)
    except (JsonSchemaDefinitionException, SyntaxError, RecursionError, re.error) as exc:
        raise SchemaError(f"schema could not be compiled: {exc}") from None
    function = state[resolver.get_scope_name()]
    error = ErrorMap(generator.sites, schema).error

    def validate(arguments: object) -> None:
        try:
            function(arguments)
        except Failure as exc:
            raise error(exc.args) from None
        except RecursionError:
            raise ArgumentsError("arguments nest too deeply to validate", keyword="depth") from None

    return validate
