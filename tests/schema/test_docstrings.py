from __future__ import annotations

import inspect

import docstring_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools.schema.docstrings import parse_docstring

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


def _render(style: str, summary: str, body: str, params: list[tuple[str, str]], returns: str) -> str:
    lines = [summary, ""] + ([body, ""] if body else [])
    if style == "google":
        lines += ["Args:"] + [f"    {name}: {text}" for name, text in params]
        lines += ["", "Returns:", f"    {returns}"] if returns else []
    elif style == "numpy":
        lines += ["Parameters", "----------"] + [f"{name} : int\n    {text}" for name, text in params]
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
    text = "\n\n".join(_render(style, summary, body, params, returns) for style in styles)

    def fn() -> None: ...

    fn.__doc__ = text
    parsed = parse_docstring(fn)
    assert (parsed.description, parsed.parameters, parsed.returns) == _guessed(inspect.cleandoc(text))
