"""What the model can read of a result, for tests that check what crosses the model boundary.

`model_facing(result)` gathers every string the model can be shown for a result: its text,
its error message, the text of each content block, what each provider's ``write_results``
writes for it and what each text format's ``render_result`` renders for it, with the
unescaped and decoded forms of the string literals written inside them.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from tinytools import ToolResult
from tinytools.formats import ToolFormat, render_result
from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses

WRITERS = (openai, openai_responses, anthropic, gemini, mcp)
FORMATS = (ToolFormat.json(), ToolFormat.xml(), ToolFormat.ptype([]))
ENTRY_POINTS = ("dispatch", "Dispatcher.dispatch", "Dispatcher.adispatch_many")
"""The entry points (named as in `paths.run_call`) these tests run each call through."""
DISPATCHER_ENTRY_POINTS = ("Dispatcher.dispatch", "Dispatcher.adispatch_many")
"""The entry points that take dispatcher options (an inline budget, an artifact store)."""

_JSON_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_PYTHON_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'", re.DOTALL)


def strings_in(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value: strings, dict keys, nested items."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)


def decoded_literals(text: str) -> list[str]:
    """The strings of the JSON and Python string literals written inside ``text`` (best effort).

    A secret written escaped (``\\"``, ``\\\\``, ``\\'``, ``\\xa0``) is still readable by the model,
    so the decoded form is model-facing too.
    """
    found: list[str] = []
    for pattern in (_JSON_LITERAL, _PYTHON_LITERAL):
        for match in pattern.finditer(text):
            literal = match.group(0)
            for decode in (json.loads, ast.literal_eval):
                try:
                    value = decode(literal)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
                if isinstance(value, str):
                    found.append(value)
                    break
    return found


def written(writer: Any, result: ToolResult) -> list[str]:
    """A provider writer's output for ``result``: its JSON text and every plain string in it."""
    output = writer.write_results([result])
    return [json.dumps(output, ensure_ascii=False), *strings_in(output)]


def rendered(result: ToolResult, format: ToolFormat) -> list[str]:
    """A text format's rendering of ``result``, with its unescaped and decoded forms."""
    text = render_result(result, format)
    return [text, html.unescape(text)]


def model_facing(result: ToolResult) -> list[str]:
    """Every string the model can be shown for ``result``."""
    texts = [result.text()]
    if result.error is not None:
        texts.append(result.error.message)
    for block in result.content or ():
        data = msgspec.to_builtins(block)
        texts.append(json.dumps(data, ensure_ascii=False))
        texts.extend(strings_in(data))
    for writer in WRITERS:
        texts.extend(written(writer, result))
    for format in FORMATS:
        texts.extend(rendered(result, format))
    decoded = [literal for text in texts for literal in decoded_literals(text)]
    return texts + decoded


WINDOW = 8
REDACTED = "[redacted]"


def leaks(secret: str, text: str) -> bool:
    """True when any 8 consecutive characters of ``secret`` (all of it, when shorter) are in ``text``."""
    assert secret, "an empty secret cannot be checked"
    if len(secret) < WINDOW:
        return secret in text
    return any(secret[i : i + WINDOW] in text for i in range(len(secret) - WINDOW + 1))


def leaked(secrets: list[str], texts: list[str]) -> list[tuple[str, str]]:
    """(secret, where) for each text a secret leaks into; ``where`` is the text around the leak."""
    found = []
    for secret in secrets:
        for text in texts:
            if leaks(secret, text):
                windows = [secret[i : i + WINDOW] for i in range(max(1, len(secret) - WINDOW + 1))]
                at = min(text.find(window) for window in windows if window in text)
                found.append((secret, text[max(0, at - 60) : at + 60]))
    return found


def assert_no_leak(result: ToolResult, *secrets: str) -> None:
    found = leaked(list(secrets), model_facing(result))
    assert not found, f"secret leaked into model-facing text: {found[:3]}"
