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
