"""Hypothesis strategies: generated tool signatures with values that fit them and values that don't.

A signature is a list of parameters, each with a type from `TYPES` (written as source text),
an optional default (plain, or a pydantic ``Field``: as the default, or inside ``Annotated`` for a
keyword-only parameter), and sometimes an `Injected` marker. `build_tool` turns it into a real
function through generated source, with or without future annotations.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import keyword
import sys
import types
from typing import Any

from hypothesis import strategies as st

from tinytools import Tool, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: float
    y: int = 0


NAMESPACE = (
    "import datetime\nfrom typing import *\nfrom pydantic import Field\nfrom tinytools import Injected, Param\n"
    "from tests.strategies import Color, Point\n"
)

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
ints = st.integers(min_value=-(2**53), max_value=2**53)
text = st.text(max_size=20)


@dataclasses.dataclass(frozen=True)
class TypeCase:
    """A type as source text, values of it, and JSON values its schema must refuse."""

    source: str
    valid: st.SearchStrategy[Any]
    invalid: st.SearchStrategy[Any]


TYPES: list[TypeCase] = [
    TypeCase("int", ints, text | finite_floats.filter(lambda f: not f.is_integer())),
    TypeCase("float", finite_floats, text | st.booleans()),
    TypeCase("str", text, ints | st.none()),
    TypeCase("bool", st.booleans(), ints | text),
    TypeCase("Literal['a', 'b']", st.sampled_from(["a", "b"]), text.filter(lambda s: s not in ("a", "b"))),
    TypeCase("list[int]", st.lists(ints, max_size=4), st.lists(text, min_size=1, max_size=3) | text),
    TypeCase("Optional[int]", st.none() | ints, text),
    TypeCase(
        "dict[str, float]",
        st.dictionaries(text, finite_floats, max_size=3),
        st.dictionaries(text, text, min_size=1, max_size=3),
    ),
    TypeCase("tuple[int, str]", st.tuples(ints, text), st.tuples(text, ints).map(list) | st.just([])),
    TypeCase("set[str]", st.sets(text, max_size=4), st.lists(ints, min_size=1, max_size=3)),
    TypeCase("datetime.date", st.dates(), ints | st.lists(text, max_size=2)),
    TypeCase("Color", st.sampled_from(list(Color)), text.filter(lambda s: s not in ("red", "green"))),
    TypeCase("Point", st.builds(Point, finite_floats, ints), st.fixed_dictionaries({"y": ints}) | text),
    TypeCase(
        "Annotated[int, Param(ge=0, le=10)]",
        st.integers(0, 10),
        st.integers(11, 1000) | st.integers(-1000, -1),
    ),
    TypeCase(
        "Annotated[str, Param(min_length=2, max_length=4)]",
        st.text(min_size=2, max_size=4),
        st.text(min_size=5, max_size=9) | st.text(max_size=1),
    ),
]

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name) and not name.startswith("inj_")
)


KINDS = ("positional_only", "positional_or_keyword", "keyword_only")
"""Where a parameter sits: before ``/``, between ``/`` and ``*``, or after ``*``."""


@dataclasses.dataclass
class Parameter:
    name: str
    case: TypeCase | None
    """Its type; None for an injected parameter (``Annotated[object, Injected]``)."""
    has_default: bool
    kind: str = "positional_or_keyword"
    field: bool = False
    """Whether its default is written as a pydantic ``Field`` (the function's own default is then not the value)."""

    @property
    def injected(self) -> bool:
        return self.case is None


@dataclasses.dataclass
class Signature:
    parameters: list[Parameter]
    """The model-visible parameters."""
    injected: list[str]
    future: bool
    hidden: list[Parameter] = dataclasses.field(default_factory=list)
    """The injected parameters, with their kinds."""

    def ordered(self) -> list[Parameter]:
        """Every parameter, by kind (`_legal` made the defaults of this order legal Python)."""
        return sorted([*self.parameters, *self.hidden], key=lambda p: KINDS.index(p.kind))


def _legal(parameters: list[Parameter]) -> list[Parameter]:
    """Give a default to every positional parameter after the first one that has one."""
    seen_default = False
    for parameter in sorted(parameters, key=lambda p: KINDS.index(p.kind)):
        if parameter.kind == "keyword_only":
            continue
        seen_default = seen_default or parameter.has_default
        parameter.has_default = parameter.has_default or seen_default
    return parameters


@st.composite
def signatures(draw: st.DrawFn, *, kinds: bool = False) -> Signature:
    """Signatures; with ``kinds``, parameters of every kind and injected ones among them."""
    names = draw(st.lists(identifiers, min_size=0, max_size=6, unique=True))
    kind = st.sampled_from(KINDS) if kinds else st.just("positional_or_keyword")
    parameters = [
        Parameter(name, draw(st.sampled_from(TYPES)), draw(st.booleans()), draw(kind), draw(st.booleans()))
        for name in names
    ]
    injected = [f"inj_{index}" for index in range(draw(st.integers(0, 2)))]
    hidden_kind = kind if kinds else st.just("keyword_only")
    hidden = [Parameter(name, None, kinds and draw(st.booleans()), draw(hidden_kind)) for name in injected]
    _legal([*parameters, *hidden])
    return Signature(parameters, injected, draw(st.booleans()), hidden)


_counter = itertools.count()


HIDDEN_DEFAULT = object()
"""The default of an injected parameter: it must never reach the function when a value is injected."""


def build_tool(signature: Signature, defaults: dict[str, Any]) -> tuple[Tool[..., Any], dict[str, Any]]:
    """Make the tool; it stores what it received in the returned dict."""
    seen: dict[str, Any] = {}
    params = []
    kind = "positional_or_keyword"
    for p in signature.ordered():
        if p.kind != kind:
            if kind == "positional_only":
                params.append("/")
            if p.kind == "keyword_only":
                params.append("*")
            kind = p.kind
        annotation = "Annotated[object, Injected]" if p.case is None else p.case.source
        default = f"DEFAULTS[{p.name!r}]"
        if p.has_default and p.field and p.kind == "keyword_only":
            annotation, default = f"Annotated[{annotation}, Field(default={default})]", ""
        elif p.has_default and p.field:
            default = f"Field({default})"
        text_ = f"{p.name}: {annotation}"
        if p.has_default and default:
            text_ += " = HIDDEN_DEFAULT" if p.case is None else f" = {default}"
        params.append(text_)
    if kind == "positional_only":
        params.append("/")
    body = "    SEEN.update(locals())\n"
    source = f"def generated({', '.join(params)}) -> None:\n{body}"
    name = f"tinytools_generated_{next(_counter)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    module.__dict__.update(SEEN=seen, DEFAULTS=defaults, HIDDEN_DEFAULT=HIDDEN_DEFAULT)
    prefix = "from __future__ import annotations\n" if signature.future else ""
    exec(compile(prefix + NAMESPACE + source, name, "exec", dont_inherit=True), module.__dict__)
    return tool(module.generated), seen


# --- nested arguments with faults planted at any depth ------------------------------------------

_LEAVES: list[tuple[dict[str, Any], st.SearchStrategy[Any], list[tuple[str, Any]]]] = [
    ({"type": "integer", "minimum": 0, "maximum": 9}, st.integers(0, 9), [("type", "x"), ("maximum", 42)]),
    ({"type": "string", "maxLength": 3}, st.text("abc", max_size=3), [("type", 7), ("maxLength", "toolong")]),
    ({"type": "boolean"}, st.booleans(), [("type", "yes")]),
    ({"enum": ["a", "b"]}, st.sampled_from(["a", "b"]), [("enum", "z")]),
]
"""Leaf schemas: the schema, its valid values, and (keyword, value) of each way to break one."""


@dataclasses.dataclass
class Node:
    """One place in a generated argument schema, as its parent writes it (``schema``)."""

    schema: Any
    kind: str
    """``leaf``, ``object`` or ``array``."""
    valid: st.SearchStrategy[Any] | None = None
    breaks: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    children: dict[str, Node] = dataclasses.field(default_factory=dict)
    item: Node | None = None


@dataclasses.dataclass
class Fault:
    """A fault planted in arguments: where the error must point, its keyword, the schema it must quote."""

    pointer: str
    keyword: str
    schema: Any


@dataclasses.dataclass
class FaultyCall:
    schema: dict[str, Any]
    """A closed root: the tool's input schema (objects below it in ``$defs``, some of them optional)."""
    arguments: dict[str, Any]
    faults: list[Fault]


def _node(draw: st.DrawFn, depth: int, defs: dict[str, Any]) -> Node:
    shape = draw(st.sampled_from(["leaf", "leaf", "object", "array"] if depth < 3 else ["leaf"]))
    if shape == "leaf":
        schema, valid, breaks = draw(st.sampled_from(_LEAVES))
        return Node(dict(schema), "leaf", valid, list(breaks))
    if shape == "array":
        item = _node(draw, depth + 1, defs)
        return Node({"type": "array", "items": item.schema}, "array", item=item)
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=4, unique=True))
    children = {name: _node(draw, depth + 1, defs) for name in names}
    body = {
        "type": "object",
        "properties": {name: child.schema for name, child in children.items()},
        "required": names,
        "additionalProperties": False,
    }
    name = f"M{len(defs)}"
    defs[name] = body
    reference: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
    optional = draw(st.booleans())
    return Node({"anyOf": [reference, {"type": "null"}]} if optional else reference, "object", children=children)


def _value(draw: st.DrawFn, node: Node) -> Any:
    if node.kind == "leaf":
        assert node.valid is not None
        return draw(node.valid)
    if node.kind == "array":
        assert node.item is not None
        item = node.item
        return [_value(draw, item) for _ in range(draw(st.integers(1, 3)))]
    return {name: _value(draw, child) for name, child in node.children.items()}


def _places(node: Node, value: Any, pointer: str) -> list[tuple[str, Node, Any]]:
    """Every place of the value tree, with its node, preorder."""
    found = [(pointer, node, value)]
    if node.kind == "array" and node.item is not None:
        for index, item in enumerate(value):
            found += _places(node.item, item, f"{pointer}/{index}")
    elif node.kind == "object":
        for name, child in node.children.items():
            found += _places(child, value[name], f"{pointer}/{name}")
    return found


def _overlaps(region: str, taken: list[str]) -> bool:
    return any(region == other or region.startswith(other + "/") or other.startswith(region + "/") for other in taken)


@st.composite
def faulty_calls(draw: st.DrawFn) -> FaultyCall:
    """Arguments of a tool with nested objects and arrays, with faults planted at random places.

    A fault is a leaf's value of the wrong type or out of bounds, an object or array replaced by
    a number, a required property removed, or an extra key added to a closed object. Faults do
    not overlap: none is planted inside a value another fault replaced or removed.
    """
    defs: dict[str, Any] = {}
    names = draw(st.lists(st.sampled_from("pqrst"), min_size=1, max_size=4, unique=True))
    top = {name: _node(draw, 0, defs) for name in names}
    root = Node({}, "object", children=top)
    schema = {
        "type": "object",
        "properties": {name: node.schema for name, node in top.items()},
        "required": names,
        "additionalProperties": False,
        "$defs": defs,
    }
    arguments = _value(draw, root)
    faults: list[Fault] = []
    taken: list[str] = []
    places = _places(root, arguments, "")
    for index in draw(st.lists(st.integers(0, len(places) - 1), min_size=1, max_size=16)):
        pointer, node, value = places[index]
        kinds = ["missing", "extra"] if node.kind == "object" else []
        kinds += ["break"] if node.kind == "leaf" else ["replace"] if pointer else []
        kind = draw(st.sampled_from(kinds))
        if kind == "break" and not _overlaps(pointer, taken):
            keyword, bad = draw(st.sampled_from(node.breaks))
            _set(arguments, pointer, bad)
            faults.append(Fault(pointer, keyword, node.schema))
        elif kind == "replace" and not _overlaps(pointer, taken):
            _set(arguments, pointer, 5)
            faults.append(Fault(pointer, "anyOf" if "anyOf" in node.schema else "type", node.schema))
        elif kind == "missing":
            name = draw(st.sampled_from(sorted(node.children)))
            if name in value and not _overlaps(f"{pointer}/{name}", taken):
                del value[name]
                faults.append(Fault(pointer, "required", node.children[name].schema))
                taken.append(f"{pointer}/{name}")
                continue
        elif kind == "extra":
            key = f"zz{len(faults)}"
            if not _overlaps(pointer, [t for t in taken if not t.startswith(pointer + "/")]):
                value[key] = 0
                faults.append(Fault(f"{pointer}/{key}", "additionalProperties", None))
                taken.append(f"{pointer}/{key}")
                continue
        else:
            continue
        if faults and faults[-1].pointer == pointer:
            taken.append(pointer)
    return FaultyCall(schema, arguments, faults)


def _set(document: Any, pointer: str, value: Any) -> None:
    *path, last = pointer.split("/")[1:]
    for token in path:
        document = document[int(token)] if isinstance(document, list) else document[token]
    if isinstance(document, list):
        document[int(last)] = value
    else:
        document[last] = value
