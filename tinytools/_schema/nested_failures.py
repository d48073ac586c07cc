"""Every failure inside one argument's value, at any depth: what the compiled check, stopping at its first, leaves out.

A nested model can be wrong in several places at once (``/to/city`` a number, ``/to/zip``
missing, an extra key ``/to/x``), and the model repairs them all in one round trip only if it
is told them all. `NestedErrors` looks for them on the failure path only, once an argument is
known to be invalid. It walks the value beside the translated schema: an object schema of
nothing but ``properties``, ``required`` and ``additionalProperties`` is taken apart (each
missing property, each unexpected key, then each present property in schema order); so is an
array schema (its own bounds, then each item), and an ``anyOf`` of which the value's JSON type
leaves one branch (a ``Model | None`` given an object). Every other subschema is a leaf: its own
compiled check, made the first time a failure reaches it, gives its first failure. Each error
carries the failing leaf's own fragment of the original schema (`tinytools._schema.fragments.schema_at`,
remembered for the paths met last).

The walk visits each value once, with an explicit stack (no recursion), so its cost is linear in
the size of the argument; only the first errors are built, up to the room the listing has left,
and the rest are counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tinytools._errors import ArgumentsError, schema_failure, shorten
from tinytools._schema.fragments import json_type, same_json
from tinytools._schema.validation_failures import Check, FragmentCache, Token, escape

__all__ = ["NestedErrors", "Problem"]

CompileLeaf = Callable[[dict[str, Any]], Check]
"""Compiles a translated subschema (with the document's definitions) into a check whose errors'
``schema`` holds the path below it, as keys and indexes, and whose wording is a property's."""

_OBJECT = frozenset({"type", "properties", "required", "additionalProperties"})
_ARRAY = frozenset({"type", "items", "additionalItems", "minItems", "maxItems", "uniqueItems"})
_MAX_DEPTH = 512
"""Deeper values are checked whole, as a leaf (whose check reports a value nested too deeply)."""
_PASSES = object()
"""A subschema every value passes (``true``, ``{}``)."""


class NestedErrors:
    """The failures inside one argument of one compiled schema (see the module)."""

    def __init__(self, document: dict[str, Any], schema: Any, compile_leaf: CompileLeaf):
        """Walk ``document`` (the translated schema); quote ``schema`` (the original)."""
        self.document = document
        self.definitions: dict[str, Any] = document.get("definitions", {})
        self.fragment = FragmentCache(schema)
        self.compile_leaf = compile_leaf
        self.checks: dict[tuple[int, str], Check] = {}  # by id of a node of `document`, which stays alive
        self.tag_nodes: dict[
            tuple[int, str], Any
        ] = {}  # the tag's schema of a tagged union (kept: its id keys a check)

    def __call__(self, first: ArgumentsError, value: Any, room: int) -> tuple[list[ArgumentsError], int]:
        """The failures inside the argument ``first`` (its first failure) is about, and how many there are.

        At most ``room`` are returned, ``first``'s own first (as the walk words it). A failure the
        walk explains by what lies below it (an ``anyOf`` by the failures of the one branch the
        value's type leaves) is not listed itself: the first of those is.
        """
        parameter = first.parameter
        node = self.document.get("properties", {}).get(parameter)
        if parameter is None or node is None:
            return [first][:room], 1
        head: list[Problem] = []
        others: list[Problem] = []
        total = 0
        for problem in self.walk(node, value, [parameter]):
            total += 1
            if not head and problem.keyword == first.keyword and problem.pointer() == first.pointer:
                head.append(problem)
            elif len(others) < room:
                others.append(problem)
        if not total:  # the walk and the compiled check disagree: trust the check
            return [first][:room], 1
        return [problem.error(self.fragment) for problem in [*head, *others][:room]], total

    def walk(self, node: Any, value: Any, path: list[Token]) -> Iterator[Problem]:
        """Each failure of ``value`` against ``node`` (at ``path`` from the root), in order."""
        stack: list[tuple[Any, Any, list[Token]] | Problem] = [(node, value, path)]
        while stack:
            item = stack.pop()
            if isinstance(item, Problem):
                yield item
                continue
            node, value, path = item
            node = self.choose(node, value)
            if node is _PASSES:
                continue
            if len(path) < _MAX_DEPTH and self.is_object(node, value):
                stack += reversed(self.object_parts(node, value, path))
            elif len(path) < _MAX_DEPTH and self.is_array(node, value):
                stack += reversed(self.array_parts(node, value, path))
            else:
                problem = self.leaf(node, value, path)
                if problem is not None:
                    yield problem

    def choose(self, node: Any, value: Any) -> Any:
        """``node`` with its references followed, and the one ``anyOf`` branch the value's type leaves."""
        for _ in range(len(self.definitions) + 2):  # a chain of references ends, or loops
            if node.__class__ is not dict:
                return _PASSES if node is True else node
            if not node:
                return _PASSES
            if len(node) == 1 and "$ref" in node and isinstance(node["$ref"], str):
                target = self.definitions.get(node["$ref"].rpartition("/")[2])
                if target is None:
                    return node
                node = target
            elif node.keys() == {"anyOf"}:
                fitting = [branch for branch in node["anyOf"] if self.admits(branch, value)]
                if not fitting and value.__class__ is dict:
                    return self.untagged(node, value)
                if len(fitting) != 1:
                    return node
                node = fitting[0]
            else:
                return node
        return node

    def admits(self, branch: Any, value: Any) -> bool:
        """Whether ``branch`` (followed through references) may take ``value``: its JSON type, and its tag.

        A branch of a tagged union (an object whose property is a ``const``) does not take an
        object whose tag is another value.
        """
        branch = self.followed(branch)
        if branch is False:
            return False
        if not isinstance(branch, dict):
            return True
        declared = branch.get("type")
        if declared is not None and json_type(value) not in (declared if isinstance(declared, list) else [declared]):
            return False
        if value.__class__ is dict:
            for key, tag in _tags(branch):
                if key in value and not same_json(value[key], tag):
                    return False
        return True

    def followed(self, branch: Any) -> Any:
        """``branch`` with a chain of references followed."""
        for _ in range(len(self.definitions) + 2):
            if not (isinstance(branch, dict) and branch.keys() == {"$ref"} and isinstance(branch["$ref"], str)):
                break
            branch = self.definitions.get(branch["$ref"].rpartition("/")[2], {})
        return branch

    def untagged(self, node: dict[str, Any], value: dict[str, Any]) -> Any:
        """For an object no branch of a tagged union takes: the tag's failure, if its tag is what is wrong.

        Each branch tags its objects by the same property; when the value's tag is none of theirs,
        the failure is that property's: one of the tags was expected.
        """
        key = (id(node), "tags")
        made = self.tag_nodes.get(key)
        if made is None:
            tags: dict[str, list[Any]] = {}
            branches = [self.followed(branch) for branch in node["anyOf"]]
            for branch in branches:
                for name, tag in _tags(branch) if isinstance(branch, dict) else ():
                    tags.setdefault(name, []).append(tag)
            shared = [name for name, found in tags.items() if len(found) == len(branches)]
            made = self.tag_nodes[key] = (
                {"type": "object", "properties": {shared[0]: {"enum": tags[shared[0]]}}} if shared else node
            )
        if made is node:
            return node
        name = next(iter(made["properties"]))
        return made if name in value else node

    @staticmethod
    def is_object(node: Any, value: Any) -> bool:
        """Whether ``value`` is an object and ``node`` says only its properties, required names and extra keys."""
        if node.__class__ is not dict:  # a false schema: a leaf
            return False
        types = node.get("type", "object")
        extra = node.get("additionalProperties", True)
        return (
            value.__class__ is dict
            and node.keys() <= _OBJECT
            and ("object" in types if isinstance(types, list) else types == "object")
            and isinstance(node.get("properties", {}), dict)
            and isinstance(node.get("required", []), list)
            and isinstance(extra, (bool, dict))
        )

    @staticmethod
    def is_array(node: Any, value: Any) -> bool:
        """Whether ``value`` is an array and ``node`` says nothing of it but its items, length and uniqueness."""
        if node.__class__ is not dict:
            return False
        types = node.get("type", "array")
        return (
            value.__class__ is list
            and node.keys() <= _ARRAY
            and ("array" in types if isinstance(types, list) else types == "array")
            and isinstance(node.get("items", True), (bool, dict, list))
            and isinstance(node.get("additionalItems", True), (bool, dict))
        )

    def object_parts(self, node: dict[str, Any], value: dict[str, Any], path: list[Token]) -> list[Any]:
        """Each missing property, then each present one's value to walk, then the keys not allowed."""
        properties: dict[str, Any] = node.get("properties", {})
        parts: list[Any] = [self.missing(name, path) for name in node.get("required", []) if name not in value]
        parts += [(properties[name], value[name], [*path, name]) for name in properties if name in value]
        extra = node.get("additionalProperties", True)
        others = [key for key in value if key not in properties] if extra is not True else []
        if extra is False:
            allowed = shorten(", ".join(properties)) or "none"
            parts += [self.unexpected(key, allowed, path) for key in others]
        else:
            parts += [(extra, value[key], [*path, key]) for key in others]
        return parts

    def array_parts(self, node: dict[str, Any], value: list[Any], path: list[Token]) -> list[Any]:
        """The array's own failure (its length, its uniqueness), then each item to walk."""
        items = node.get("items", True)
        prefix = items if isinstance(items, list) else []
        rest = node.get("additionalItems", True) if prefix else items
        bounds: dict[str, Any] = {key: node[key] for key in ("minItems", "maxItems", "uniqueItems") if key in node}
        if prefix and rest is False:
            bounds.update(items=[True] * len(prefix), additionalItems=False)
        parts: list[Any] = []
        if bounds:
            problem = self.leaf(bounds, value, path, key=(id(node), "bounds"))
            parts += [problem] if problem is not None else []
        for index, item in enumerate(value):
            schema = prefix[index] if index < len(prefix) else rest
            if schema is not False:  # an item past the prefix of a closed tuple is the bounds' failure
                parts.append((schema, item, [*path, index]))
        return parts

    def leaf(self, node: Any, value: Any, path: list[Token], *, key: tuple[int, str] | None = None) -> Problem | None:
        """The first failure of ``value`` against ``node``, checked whole by its own compiled check."""
        key = key or (id(node), "")
        check = self.checks.get(key)
        if check is None:
            document = node if isinstance(node, dict) else {"not": {}}
            if self.definitions:
                document = {**document, "definitions": self.definitions}
            check = self.checks[key] = self.compile_leaf(document)
        found = check(value)
        if found is None:
            return None
        below: list[Token] = found.schema if isinstance(found.schema, list) else []
        return Problem(path, found.keyword, found.reason, found.pointer, path + below)

    def missing(self, name: str, path: list[Token]) -> Problem:
        """The failure of one required property ``name`` absent from the object at ``path``."""
        return Problem(path, "required", f"missing required property {shorten(repr(name))}", "", [*path, name])

    def unexpected(self, key: str, allowed: str, path: list[Token]) -> Problem:
        """The failure of one key ``key`` the closed object at ``path`` does not know."""
        return Problem(
            [*path, key], "additionalProperties", f"unexpected property {shorten(key)!r} (allowed: {allowed})"
        )


class Problem:
    """One failure the walk found, made an `ArgumentsError` only if it is listed (most are only counted)."""

    __slots__ = ("keyword", "path", "reason", "relative", "where")

    def __init__(
        self, path: list[Token], keyword: str, reason: str, relative: str = "", where: list[Token] | None = None
    ):
        self.path = path
        """From the root to the value the failure was found in (its argument first)."""
        self.keyword = keyword
        self.reason = reason
        self.relative = relative
        """The pointer from there to the value at fault."""
        self.where = where
        """The path whose schema the error quotes; None for none."""

    def pointer(self) -> str:
        """The JSON pointer of the value at fault."""
        return "".join(f"/{escape(token)}" for token in self.path) + self.relative

    def error(self, fragment: Callable[[list[Token]], Any]) -> ArgumentsError:
        """The `ArgumentsError` of this failure, quoting what ``fragment`` gives for its path."""
        schema = fragment(self.where) if self.where is not None else None
        return schema_failure(self.reason, self.pointer(), self.keyword, str(self.path[0]), schema)


def _tags(branch: dict[str, Any]) -> list[tuple[str, Any]]:
    """The (property, value) pairs that tag a branch's objects: its properties that are a ``const``."""
    properties = branch.get("properties")
    if not isinstance(properties, dict):
        return []
    return [
        (name, schema["const"]) for name, schema in properties.items() if isinstance(schema, dict) and "const" in schema
    ]
