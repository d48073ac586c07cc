from __future__ import annotations

import pytest

from tinytools.docstrings import parse_docstring

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
