"""Ranked search over tools: BM25 over each tool's name, description and parameters.

A tool is a document of four fields, each its own weight: the words of its name (``get_weather``
→ get, weather; ``searchFlights`` → search, flights), its description, its parameters' names and
its parameters' descriptions. Words are lower-cased, common English words are dropped, and
plural and verb endings are folded (``flights``, ``booked``, ``booking`` → ``flight``, ``book``),
so a query matches the forms a description uses. Scores are BM25 with the fields' weighted term
counts (BM25F): each term's share of each tool's score is computed once, when the index is built,
so a query only adds up the shares of its own terms.

Our own code, standard library only: BM25 is a few dozen lines, a query over 10,000 tools takes
well under a millisecond, and the libraries that implement it bring numpy or scipy.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, NamedTuple

from tinytools._context import Discovery
from tinytools._schema.annotations import Param
from tinytools._tool import SEARCHES, Tool, make_tool

__all__ = ["SEARCH_TOOL", "Document", "ToolIndex", "document_of", "search_tool", "words"]

SEARCH_TOOL = "search_tools"
"""The name of the tool the model searches deferred tools with."""

K1 = 1.2
"""How fast a term's repeats stop adding to the score."""
B = 0.75
"""How much a long document is discounted."""
WEIGHTS = {"name": 3.0, "description": 1.0, "parameters": 1.5, "parameter_descriptions": 0.5}
"""How much a word counts in each field."""

_TOKEN = re.compile(r"[^\W_]+")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP = frozenset(
    [
        *("a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from"),
        *("given", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our"),
        *("please", "set", "that", "the", "their", "them", "then", "there", "these", "this", "to"),
        *("use", "used", "using", "want", "was", "we", "what", "when", "which", "will", "with"),
        *("would", "you", "your"),
    ]
)


def _split(text: str) -> list[str]:
    pieces: list[str] = []
    for token in _TOKEN.findall(text):
        pieces += _WORD.findall(token) if token.isascii() else [token]
    return pieces


class Document(NamedTuple):
    """What the index reads of one tool."""

    name: str
    description: str
    parameters: Sequence[str]
    parameter_descriptions: Sequence[str]


def _fold(word: str) -> str:
    """A word with its plural or verb ending folded, so that its forms meet."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":  # stopped, stopping → stop
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_FOLDED: dict[str, str] = {}
"""Each word seen, lower-cased and folded ('' for a common word): the vocabulary repeats."""
_MAX_FOLDED = 200_000


def words(text: str, *, remember: bool = True) -> list[str]:
    """The folded words of ``text``, common words left out.

    An ASCII token is split at case changes and digits (``searchFlights2`` → search, flights,
    2); any other (``réservé``, ``予約``) is one word, lower-cased. ``remember`` keeps new words
    in the process's fold cache (a query's words are not kept: a model could fill it).
    """
    raw = _WORD.findall(text) if text.isascii() else _split(text)
    found = list(map(_FOLDED.get, raw))
    if None in found:  # words not seen before: fold them once
        for index, word in enumerate(found):
            if word is None:
                lower = raw[index].lower()
                found[index] = word = "" if lower in _STOP else _fold(lower)
                if remember and len(_FOLDED) < _MAX_FOLDED:
                    _FOLDED[raw[index]] = word
    return [word for word in found if word]


class ToolIndex:
    """A BM25 index of documents, searched by free text."""

    __slots__ = ("_best", "_postings", "size")

    def __init__(self, documents: Iterable[Document]):
        counts: list[dict[str, float]] = []
        lengths: list[float] = []
        frequency: dict[str, int] = {}
        name_w, text_w, param_w, param_text_w = (WEIGHTS[field] for field in WEIGHTS)
        for document in documents:
            weighted: dict[str, float] = {}
            for weight, text in (
                (name_w, document.name),
                (text_w, document.description),
                (param_w, " ".join(document.parameters)),
                (param_text_w, " ".join(document.parameter_descriptions)),
            ):
                for word in words(text):
                    weighted[word] = weighted.get(word, 0.0) + weight
            for word in weighted:
                frequency[word] = frequency.get(word, 0) + 1
            counts.append(weighted)
            lengths.append(sum(weighted.values()))
        self.size = len(counts)
        """How many documents are indexed."""
        average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
        size = self.size
        idf = {word: math.log(1 + (size - n + 0.5) / (n + 0.5)) for word, n in frequency.items()}
        postings: dict[str, dict[int, float]] = {word: {} for word in frequency}
        scale = K1 + 1
        for number, weighted in enumerate(counts):
            norm = K1 * (1 - B + B * lengths[number] / average)
            for word, tf in weighted.items():
                postings[word][number] = idf[word] * tf * scale / (tf + norm)
        self._postings = postings
        self._best = {word: max(shares.values()) for word, shares in postings.items()}

    def search(self, query: str, k: int = 5, *, among: frozenset[int] | None = None) -> list[tuple[int, float]]:
        """The ``k`` best documents for ``query`` as (number, score), best first; ties keep index order.

        ``among`` limits the result to those document numbers. Terms are added rarest first;
        once the ``k``-th best score so far is beyond what the remaining terms could give a
        document they alone match, those terms only add to the documents already found (the
        result is the same, for less work).
        """
        if k < 1:
            return []
        postings, best = self._postings, self._best
        terms = sorted(
            (word for word in set(words(query, remember=False)) if word in postings),
            key=lambda word: len(postings[word]),
        )
        scores: dict[int, float] = {}
        for position, word in enumerate(terms):
            rest = terms[position:]
            if (
                among is None
                and len(scores) >= k
                and sum(best[w] for w in rest) < heapq.nlargest(k, scores.values())[-1]
            ):
                for later in rest:  # in the same order as above: the same sums, to the last bit
                    shares = postings[later]
                    for number in scores:
                        scores[number] += shares.get(number, 0.0)
                break
            for number, share in postings[word].items():
                scores[number] = scores.get(number, 0.0) + share
        found = scores.items() if among is None else ((n, s) for n, s in scores.items() if n in among)
        return heapq.nsmallest(k, found, key=lambda item: (-item[1], item[0]))


def document_of(tool: Tool[..., Any]) -> Document:
    """What the index reads of a tool: its name, description, and parameters' names and descriptions."""
    properties = tool.input_schema.get("properties", {})
    described = [str(schema.get("description", "")) for schema in properties.values() if isinstance(schema, dict)]
    return Document(tool.name, tool.description, list(properties), described)


def search_tool(k: int) -> Tool[..., Any]:
    """The ``search_tools`` tool (see `Toolbox.search_tool`): it searches whichever toolbox runs it.

    Raises:
        ValueError: ``k`` is below 1.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k is how many tools a search returns, at least 1, not {k!r}")

    def search_tools(
        query: Annotated[str, Param("Words for what the tool should do, such as 'book a flight'.")],
        discovery: Discovery,
    ) -> list[dict[str, Any]]:
        """Find tools that are not listed yet by what they do; the tools found can be called next."""
        return [item.definition() for item in discovery.find(query, k)]

    search_tools.__dict__[SEARCHES] = True
    return make_tool(search_tools, name=SEARCH_TOOL)
