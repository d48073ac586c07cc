"""A function's description and per-parameter descriptions, read from its docstring.

Google, NumPy, reST and Epydoc styles are recognised by docstring-parser. Left to guess, it
parses a docstring once per style and keeps the richest reading; when the docstring carries
the marks of exactly one style (``Args:``, an underlined ``Parameters``, ``:param``,
``@param``) and that style reads something from it, that reading is the one guessing would
keep, in half the time.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import linecache
import re
import sys
import weakref
from collections.abc import Callable
from typing import Any

import msgspec
import typing_extensions

__all__ = [
    "Docstring",
    "describe_callable",
    "describe_class",
    "described",
    "parse_docstring",
]

_MARKS = {  # broad on purpose: a docstring with the marks of two styles is left to guessing
    "GOOGLE": (r"^[ \t]*\w[\w \t]*:[ \t]*$", re.MULTILINE),
    "NUMPYDOC": (r"^[ \t]*(-+[ \t]*|\.\.[ \t]*\w+::.*)$", re.MULTILINE),  # or a `.. deprecated::`
    "REST": (r"^[ \t]*:", re.MULTILINE),
    "EPYDOC": (r"^[ \t]*@", re.MULTILINE),
}
_GOOGLE_TITLES = (
    r"(Arguments|Args|Parameters|Params|Raises|Exceptions|Except|Attributes|Examples?|Returns|Yields):[ \t]*"
)
_GOOGLE_TITLE = (_GOOGLE_TITLES, 0)  # the titles docstring-parser's Google reader knows
_SECTION_TITLE = (  # those, and underlined NumPy ones
    rf"^{_GOOGLE_TITLES}$"
    r"|^(Parameters|Other Parameters|Attributes|Returns|Yields|Raises|Warns|Examples|See Also|Notes)[ \t]*\n-+[ \t]*$",
    re.MULTILINE,
)
_NOTHING_DOCUMENTED = (  # an empty section, or `Args:` then `None`: the convention for "no parameters"
    r"^(Arguments|Args|Parameters|Params|Attributes|Raises|Returns|Yields):[ \t]*(None\.?)?"
    r"(\n[ \t]+None\.?)?[ \t]*(\n[ \t]*)*(?=\n\S|\Z)",
    re.MULTILINE,
)


@functools.cache
def _compiled(pattern: tuple[str, int]) -> re.Pattern[str]:
    """A pattern of this module, compiled when first used: by the first docstring read, not at import."""
    return re.compile(*pattern)


class Docstring(msgspec.Struct, frozen=True):
    """What a docstring says about a tool."""

    description: str = ""
    """Summary and body, joined by a blank line."""
    parameters: dict[str, str] = msgspec.field(default_factory=dict)
    """Parameter name -> description."""
    returns: str | None = None
    """What the return value is, when documented."""


def parse_docstring(fn: Callable[..., Any]) -> Docstring:
    """Read the description and parameter descriptions from ``fn``'s docstring."""
    raw = fn.__doc__ if isinstance(getattr(fn, "__doc__", None), str) else inspect.getdoc(fn)
    return _parse(raw) if raw else Docstring()


def _parse(raw: str) -> Docstring:
    text = _clean(raw)
    if not text:
        return Docstring()
    import docstring_parser  # loaded by the first tool with a docstring, not by `import tinytools`

    styles = [style for style, mark in _MARKS.items() if _compiled(mark).search(text)]
    text = "\n" + text  # docstring-parser cleans again; a blank opening line keeps a leading title's margin
    try:
        parsed = docstring_parser.parse(text, docstring_parser.DocstringStyle[styles[0]]) if len(styles) == 1 else None
    except docstring_parser.ParseError:  # guessing keeps the readings that parse
        parsed = None
    if parsed is None or not parsed.meta:  # nothing read: guessing may keep more description
        parsed = docstring_parser.parse(text)
    parts = [part.strip() for part in (parsed.short_description, parsed.long_description) if part]
    if not parsed.meta:  # sections nobody could read are still not the tool's description
        parts = [_before_sections(part) for part in parts]
        parts = [part for part in parts if part]
    parameters = {param.arg_name: " ".join(param.description.split()) for param in parsed.params if param.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return Docstring("\n\n".join(parts), parameters, returns)


def describe_class(cls: type) -> Docstring:
    """Read what a class documents about itself and its fields.

    ``description`` is the class's own docstring (summary and body), never one it inherits or
    one a library generated for it (a dataclass's or named tuple's ``Point(x, y)``).
    ``parameters`` maps a field name to its description, read from an ``Args:``,
    ``Attributes:`` or ``Parameters`` section and from attribute docstrings (a string right
    after the field's assignment in the class body); the attribute docstring wins, and a
    class's own documentation wins over its bases'. Attribute docstrings need the class's
    source; a class made by ``exec`` or in a REPL has none, and then only its docstring counts.
    The answer is computed once per class.
    """
    known = _DESCRIBED.get(cls)
    if known is None:
        own = _parse(doc) if (doc := _own_doc(cls)) else Docstring()
        parameters: dict[str, str] = {}
        for klass in _lineage(cls):
            parameters.update(_parse(doc).parameters if (doc := _own_doc(klass)) else {})
            parameters.update(_attribute_docstrings(klass))
        known = _DESCRIBED[cls] = Docstring(own.description, parameters)
    return known


def describe_callable(cls: type) -> Docstring:
    """What the class of an object with ``__call__`` documents about a call to it.

    The description is ``__call__``'s docstring's when it has one, else the class's own (never
    one a library generated for it, such as a dataclass's ``Scale(factor: int)``); each
    parameter is described by ``__call__``'s docstring, else by the class's.
    """
    doc = getattr(cls.__call__, "__doc__", None)
    call = _parse(doc) if isinstance(doc, str) else Docstring()
    whole = _parse(doc) if (doc := _own_doc(cls)) else Docstring()
    return Docstring(
        call.description or whole.description,
        {**whole.parameters, **call.parameters},
        call.returns if call.returns is not None else whole.returns,
    )


_DESCRIBED: weakref.WeakKeyDictionary[type, Docstring] = weakref.WeakKeyDictionary()
_LIBRARY_MODULES = frozenset(
    {"builtins", "typing", "typing_extensions", "enum", "collections", "abc", "dataclasses", "pydantic", "msgspec"}
)
_GENERATED_DOC = (r"\w+\(.*\)", 0)  # what dataclasses and namedtuple write: `Point(x: int, y: int)`
_STRING_LINE = (r"[ \t]+[rRuU]?[\"']", 0)
_CLASS_LINE = (r"[ \t]*(?:class|def|async[ \t]+def)[ \t]+(\w+)", 0)
_FILES: dict[str, tuple[list[str], dict[str, list[int]]]] = {}


def _lineage(cls: type) -> list[type]:
    """``cls`` and the bases whose documentation it inherits, bases first (so its own wins)."""
    if typing_extensions.is_typeddict(cls):  # not in its __mro__; typing's forgets them before 3.12
        bases = [base for base in getattr(cls, "__orig_bases__", ()) if typing_extensions.is_typeddict(base)]
        return [klass for base in bases for klass in _lineage(base)] + [cls]
    return [klass for klass in reversed(cls.__mro__) if klass.__module__.partition(".")[0] not in _LIBRARY_MODULES]


def _own_doc(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc == "An enumeration.":  # Enum's own default before Python 3.11
        return None
    return None if _compiled(_GENERATED_DOC).fullmatch(doc) and doc.startswith(f"{cls.__name__}(") else doc


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """Field name -> the string literal right after its assignment, from the class's source."""
    block = _class_source(cls)
    string_line = _compiled(_STRING_LINE).match
    if not block or not any(string_line(line) for line in block[1:]):  # no string, so nothing to parse
        return {}
    indent = _indent(block[0])
    try:
        body = ast.parse("".join(line[indent:] if line.strip() else "\n" for line in block)).body
    except SyntaxError:  # the file changed since the class was made, or an odd block
        return {}
    statements = body[0].body if body and isinstance(body[0], ast.ClassDef) else []
    fields = set(inspect.get_annotations(cls)) | set(cls.__dict__)
    docs = {}
    for statement, following in itertools.pairwise(statements):
        target: ast.expr | None = statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id in fields and _is_string(following):
            docs[target.id] = " ".join(following.value.value.split())  # type: ignore[attr-defined]
    return docs


def _is_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _class_source(cls: type) -> list[str] | None:
    """The lines of ``class cls``, or None when its source is not to be had."""
    module = sys.modules.get(cls.__module__)  # what inspect.getsourcefile reads, at a tenth of its cost
    filename = getattr(module, "__file__", None)  # none for builtins, `exec` without a module, a REPL
    if not isinstance(filename, str) or not filename.endswith(".py"):
        return None
    lines = linecache.getlines(filename, module.__dict__)
    if not lines:
        return None
    known = _FILES.get(filename)
    if known is None or known[0] is not lines:  # linecache hands out a new list when the file changed
        known = _FILES[filename] = (lines, _definitions(lines))
    path = [part for part in cls.__qualname__.split(".") if part != "<locals>"]
    for start in known[1].get(path[-1], []):
        if _enclosing(lines, start) == path[:-1] and lines[start].lstrip().startswith("class"):
            return _block(lines, start)
    return None


def _definitions(lines: list[str]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    class_line = _compiled(_CLASS_LINE).match
    for number, line in enumerate(lines):
        if match := class_line(line):
            index.setdefault(match.group(1), []).append(number)
    return index


def _enclosing(lines: list[str], start: int) -> list[str]:
    """The names of the classes and functions around line ``start``, outermost first."""
    names: list[str] = []
    indent = _indent(lines[start])
    class_line = _compiled(_CLASS_LINE).match
    for line in reversed(lines[:start]):
        if indent == 0:
            break
        if line.strip() and _indent(line) < indent and (match := class_line(line)):
            names.append(match.group(1))
            indent = _indent(line)
        elif line.strip() and _indent(line) < indent and not line.lstrip().startswith(("@", "#", ")")):
            indent = _indent(line)
    return names[::-1]


def _block(lines: list[str], start: int) -> list[str]:
    indent = _indent(lines[start])
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return lines[start:end]


def _clean(raw: str) -> str:
    """`inspect.cleandoc`, except that a section title on the opening line stays above its lines.

    The opening line's indentation went into the quotes and cleandoc measures the margin on the
    other lines, so ``Args:`` written right after the quotes ends up level with its own
    parameters (and formatters such as ruff's put them there in the source too). The lines
    between such a title and the next one belong to it, and are indented under it. A section
    that documents ``None`` says there is nothing to document and is dropped.
    """
    lines = inspect.cleandoc(raw).split("\n")
    if _compiled(_GOOGLE_TITLE).fullmatch(lines[0]):
        title = _compiled(_GOOGLE_TITLE).fullmatch
        ends = (i for i, line in enumerate(lines) if i and title(line))
        end = next(ends, len(lines))
        if any(line.strip() and not _indent(line) for line in lines[1:end]):
            lines[1:end] = [f"    {line}" if line.strip() else line for line in lines[1:end]]
    return _compiled(_NOTHING_DOCUMENTED).sub("", "\n".join(lines)).strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _before_sections(text: str) -> str:
    match = _compiled(_SECTION_TITLE).search(text)
    return text[: match.start()].strip() if match else text


def described(schema: dict[str, Any], cls: type) -> dict[str, Any]:
    """``schema`` with the class's own docstring as its description, and its documented fields' descriptions.

    What the schema says already (a pydantic ``Field(description=...)``, an ``Annotated`` string)
    wins over the docstring.
    """
    docs = describe_class(cls)
    if not docs.description and not docs.parameters:
        return schema
    schema = dict(schema)
    if docs.description and "description" not in schema:
        schema["description"] = docs.description
    names = _field_names(cls)
    properties = schema.get("properties")
    if isinstance(properties, dict) and docs.parameters:
        schema["properties"] = {
            key: _with_description(value, docs.parameters.get(names.get(key) or key))
            for key, value in properties.items()
        }
    positions = schema.get("prefixItems")
    if isinstance(positions, list) and hasattr(cls, "_fields"):  # a NamedTuple: its fields by position
        fields = cls._fields
        schema["prefixItems"] = [
            _with_description(value, docs.parameters.get(field)) for value, field in zip(positions, fields, strict=True)
        ]
    return schema


def _field_names(cls: Any) -> dict[str, str]:
    """JSON key -> Python field name, where they differ (a pydantic alias, a Struct's ``rename``)."""
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict):
        return {str(field.alias or name): name for name, field in fields.items()}
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return {field.encode_name: field.name for field in msgspec.structs.fields(cls)}
    return {}


def _with_description(schema: Any, description: str | None) -> Any:
    if description and isinstance(schema, dict) and "description" not in schema:
        return {**schema, "description": description}
    return schema
