from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import NamedTuple, TypedDict

import docstring_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools._schema.docstrings import Docstring, describe_class, parse_docstring

GOOGLE = """Find books.

Searches the catalogue.

Args:
    query: Words to look for.
    limit: How many
        results at most.

Returns:
    The matches.
"""

NUMPY = """Find books.

Searches the catalogue.

Parameters
----------
query : str
    Words to look for.
limit : int
    How many results at most.
"""

REST = """Find books.

Searches the catalogue.

:param query: Words to look for.
:param limit: How many results at most.
"""

EPYDOC = """Find books.

Searches the catalogue.

@param query: Words to look for.
@param limit: How many results at most.
"""


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, REST, EPYDOC], ids=["google", "numpy", "rest", "epydoc"])
def test_styles(doc: str) -> None:
    def fn(query: str, limit: int) -> None: ...

    fn.__doc__ = doc
    parsed = parse_docstring(fn)
    assert parsed.description == "Find books.\n\nSearches the catalogue."
    assert parsed.parameters == {
        "query": "Words to look for.",
        "limit": "How many results at most.",
    }


def test_no_docstring() -> None:
    def fn() -> None: ...

    parsed = parse_docstring(fn)
    assert parsed.description == ""
    assert parsed.parameters == {}


def test_docstring_reaches_the_schema() -> None:
    from tinytools import tool

    def search(query: str, limit: int = 5) -> None: ...

    search.__doc__ = NUMPY
    made = tool(search)
    assert made.description == "Find books.\n\nSearches the catalogue."
    assert made.input_schema["properties"]["limit"] == {
        "type": "integer",
        "description": "How many results at most.",
        "default": 5,
    }


WORDS = st.text("abcdefgh ", min_size=1, max_size=12).map(str.strip).filter(bool)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


def _render(
    style: str, summary: str, body: str, params: list[tuple[str, str]], returns: str, *, empty_sections: bool = True
) -> str:
    lines = [summary, ""] + ([body, ""] if body else [])
    if style == "google":
        lines += ["Args:"] if params or empty_sections else []
        lines += [f"    {name}: {text}" for name, text in params]
        lines += ["", "Returns:", f"    {returns}"] if returns else []
    elif style == "numpy":
        lines += ["Parameters", "----------"] if params or empty_sections else []
        lines += [f"{name} : int\n    {text}" for name, text in params]
        lines += ["", "Returns", "-------", "int", f"    {returns}"] if returns else []
    elif style == "rest":
        lines += [f":param {name}: {text}" for name, text in params] + ([f":returns: {returns}"] if returns else [])
    else:
        lines += [f"@param {name}: {text}" for name, text in params] + ([f"@return: {returns}"] if returns else [])
    return "\n".join(lines)


def _guessed(text: str) -> tuple[str, dict[str, str], str | None]:
    """What docstring-parser reads when it tries every style itself."""
    parsed = docstring_parser.parse(text)
    parts = [part.strip() for part in (parsed.short_description, parsed.long_description) if part]
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return "\n\n".join(parts), params, returns


@settings(max_examples=500, deadline=None)
@given(
    styles=st.lists(st.sampled_from(["google", "numpy", "rest", "epydoc"]), min_size=1, max_size=2),
    summary=WORDS,
    body=st.one_of(
        st.just(""),
        WORDS,
        st.just("Example: use it"),
        st.sampled_from(["a --- b", "Args", "@ home", ":)", "Note:", "x : int", "-", "Todo:\n    x"]),
        st.sampled_from([".. deprecated:: 1.0\n    Use b.", ".. note:: x", ".. versionadded:: 2"]),
    ),
    params=st.lists(st.tuples(NAMES, WORDS), max_size=3, unique_by=lambda p: p[0]),
    returns=st.one_of(st.just(""), WORDS),
)
def test_reading_one_style_gives_what_trying_every_style_gives(
    styles: list[str], summary: str, body: str, params: list[tuple[str, str]], returns: str
) -> None:
    empty = len(styles) == 1  # empty sections amid two styles would swallow the other style's text
    text = "\n\n".join(_render(style, summary, body, params, returns, empty_sections=empty) for style in styles)
    # an empty section is read as if it were not there, where guessing keeps its title as text
    oracle = "\n\n".join(_render(style, summary, body, params, returns, empty_sections=False) for style in styles)

    def fn() -> None: ...

    fn.__doc__ = text
    parsed = parse_docstring(fn)
    assert (parsed.description, parsed.parameters, parsed.returns) == _guessed(inspect.cleandoc(oracle))


def _documented(doc: str) -> tuple[str, dict[str, str]]:
    def fn() -> None: ...

    fn.__doc__ = doc
    parsed = parse_docstring(fn)
    return parsed.description, parsed.parameters


def test_google_args_without_a_summary_keeps_every_description() -> None:
    def add(a: int, b: int) -> int:
        """Args:
        a: The first addend.
        b (int): The second,
            on two lines.
        """
        return a + b

    assert parse_docstring(add).parameters == {"a": "The first addend.", "b": "The second, on two lines."}
    assert parse_docstring(add).description == ""


def test_args_none_means_no_parameters_not_a_description() -> None:
    def ping() -> str:
        """Check the service.

        Args:
            None

        Returns:
            The word pong.
        """
        return "pong"

    def bare() -> None:
        """Args:
        None
        """

    assert parse_docstring(ping) == Docstring("Check the service.", {}, "The word pong.")
    assert parse_docstring(bare) == Docstring()


def test_the_tool_description_carries_no_section_text() -> None:
    from tinytools import tool

    def lookup(key: str) -> str:
        """Args:
            key: What to look up.

        Returns:
            The value.
        """
        return key

    made = tool(lookup)
    assert "Args" not in made.description
    assert made.input_schema["properties"]["key"] == {"type": "string", "description": "What to look up."}


def _as_written(style: str, summary: str, body: str, params: list[tuple[str, str, str]], layout: str) -> str:
    """A docstring as it sits in a function body: opening line unindented, the rest at 4 spaces.

    ``flush`` is what ruff's formatter makes of an opening ``Args:``: its lines moved level with it.
    """
    lines = ([summary, ""] + ([body, ""] if body else [])) if summary else []
    for name, text, more in params:
        tail = [more] if more else []
        if style == "google":
            lines += ([] if any(line == "Args:" for line in lines) else ["Args:"]) + [f"    {name} (int): {text}"]
            lines += [f"        {line}" for line in tail]
        elif style == "numpy":
            lines += ([] if "Parameters" in lines else ["Parameters", "----------"]) + [f"{name} : int"]
            lines += [f"    {line}" for line in [text, *tail]]
        else:
            lines += [f":param {name}: {text}"] + [f"    {line}" for line in tail]
    head, *rest = lines
    if layout == "flush" and head == "Args:":
        rest = [line.removeprefix("    ") for line in rest]
    closing = layout != "inline"
    return "\n".join([head] + [f"    {line}" if line else "" for line in rest]) + ("\n    " if closing else "")


@settings(max_examples=300, deadline=None)
@given(
    style=st.sampled_from(["google", "numpy", "rest"]),
    summary=st.one_of(st.just(""), WORDS),
    body=st.one_of(st.just(""), WORDS),
    params=st.lists(
        st.tuples(NAMES, WORDS, st.one_of(st.just(""), WORDS)), min_size=1, max_size=3, unique_by=lambda p: p[0]
    ),
    layout=st.sampled_from(["closing", "inline", "flush"]),
)
def test_every_style_with_or_without_a_summary(
    style: str, summary: str, body: str, params: list[tuple[str, str, str]], layout: str
) -> None:
    description, parameters = _documented(_as_written(style, summary, body, params, layout))
    assert description == "\n\n".join(part for part in (summary, body if summary else "") if part)
    assert not any(mark in description for mark in ("Args:", "Parameters", "---", ":param"))
    assert parameters == {name: " ".join(f"{text} {more}".split()) for name, text, more in params}


@dataclasses.dataclass
class Point:
    x: int
    """Across, in metres."""
    y: int = 0


class Address(TypedDict):
    """Where a parcel goes.

    Attributes:
        street: Street and number.
        city: Named in the section.
    """

    street: str
    city: str
    """Named in the body."""


class Shade(enum.Enum):
    DARK = 1
    """Almost black."""
    LIGHT = 2


def test_a_dataclass_has_no_description_of_its_own_but_its_fields_do() -> None:
    assert (Point.__doc__ or "").startswith("Point(x: ")  # what dataclasses generate is not documentation
    assert describe_class(Point) == Docstring("", {"x": "Across, in metres."})


def test_a_section_and_attribute_docstrings_with_the_attribute_winning() -> None:
    assert describe_class(Address) == Docstring(
        "Where a parcel goes.", {"street": "Street and number.", "city": "Named in the body."}
    )


def test_enum_members_and_named_tuples() -> None:
    class Pair(NamedTuple):
        left: int
        """The left one."""
        right: int

    assert Pair.__doc__ == "Pair(left, right)"
    assert describe_class(Pair) == Docstring("", {"left": "The left one."})
    assert describe_class(Shade) == Docstring("", {"DARK": "Almost black."})


def test_msgspec_struct() -> None:
    import msgspec

    class Parcel(msgspec.Struct):
        """A parcel.

        Args:
            weight: In grams.
        """

        weight: int
        size: str = "S"
        """One of S, M, L."""

    assert describe_class(Parcel) == Docstring("A parcel.", {"weight": "In grams.", "size": "One of S, M, L."})


def test_pydantic_model() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        """An order.

        Attributes:
            number: From the section.
        """

        number: int
        """The order number."""
        note: str = pydantic.Field(default="", description="pydantic's own description, read by the schema")

    assert Order.__doc__
    assert describe_class(Order) == Docstring("An order.", {"number": "The order number."})


def test_bases_document_inherited_fields_but_not_the_subclass() -> None:
    @dataclasses.dataclass
    class Labelled(Point):
        label: str = ""
        """Shown beside the point."""
        x: int = 1
        """Overridden: across, in feet."""

    assert describe_class(Labelled) == Docstring(
        "", {"x": "Overridden: across, in feet.", "label": "Shown beside the point."}
    )


def test_a_typed_dict_inherits_its_bases_documentation() -> None:
    import typing_extensions  # typing's own TypedDict forgets its bases before Python 3.12

    class Parcel(typing_extensions.TypedDict):
        """A parcel.

        Attributes:
            weight: In grams.
        """

        weight: int

    class Labelled(Parcel):
        label: str
        """Printed on the parcel."""

    assert Labelled.__mro__ == (Labelled, dict, object)  # the base is not in the MRO, yet its fields are documented
    assert describe_class(Labelled) == Docstring("", {"weight": "In grams.", "label": "Printed on the parcel."})


def test_same_named_classes_in_two_functions_are_told_apart() -> None:
    def first() -> type:
        class Box(TypedDict):
            size: int
            """First box."""

        return Box

    def second() -> type:
        class Box(TypedDict):
            size: int
            """Second box."""

        return Box

    assert describe_class(first()).parameters == {"size": "First box."}
    assert describe_class(second()).parameters == {"size": "Second box."}


def test_a_class_without_source_keeps_its_docstring() -> None:
    namespace: dict[str, object] = {"__name__": "made_in_exec"}
    exec(
        'class Shape:\n    """A shape.\n\n    Attributes:\n        sides: How many.\n    """\n'
        '    sides: int\n    "lost"\n',
        namespace,
    )
    assert describe_class(namespace["Shape"]) == Docstring("A shape.", {"sides": "How many."})  # type: ignore[arg-type]
    repl: dict[str, object] = {"__name__": "__main__"}  # a REPL's module has no file
    exec("class Blank:\n    a: int\n    'lost too'\n", repl)
    assert describe_class(repl["Blank"]) == Docstring()  # type: ignore[arg-type]
