"""Exports are the same bytes in every process, and a fingerprint and a diff say when they are not.

Five subprocesses, each with another ``PYTHONHASHSEED`` and another import order, export the tools
of ``stable_tools`` for every provider (with ``revealed=`` too) and print the fingerprints and the
bytes' SHA-256: all five print the same, set defaults and hand-written schemas whose keywords came
in hash order included. Equal schemas written in another keyword order export the same bytes. A
changed description changes the fingerprint of every provider, and `Toolbox.diff` names the tool
and the pointer.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinytools import Tool, Toolbox, tool
from tinytools import _exports as stable

from .servers import server_env

PROVIDERS = ["openai", "openai_responses", "anthropic", "gemini", "mcp"]
ORDERS = [
    "import tinytools",
    "import pydantic, enum, dataclasses",
    "import tinytools.providers.gemini, tinytools.providers.anthropic",
    "import tests.providers.stable_tools",
    "import tinytools.providers, tinytools.providers.openai",
]
SCRIPT = """
{first}
import hashlib, json
from tinytools import _exports as stable
from tests.providers import stable_tools
box = stable_tools.toolbox()
out = {{}}
for provider in {providers!r}:
    for revealed in ((), ("convert",)):
        declarations = stable.export(box, provider, revealed=revealed)
        out[provider + str(len(revealed))] = [box.fingerprint(provider, revealed=revealed),
                                              hashlib.sha256(stable.sent(declarations)).hexdigest()]
print(json.dumps(out))
"""


def _fingerprints(seed: int, first: str, description: str | None = None) -> dict[str, list[str]]:
    env = {**os.environ, **server_env(), "PYTHONHASHSEED": str(seed)}
    if description is not None:
        env["STABLE_DESCRIPTION"] = description
    code = SCRIPT.format(first=first, providers=PROVIDERS)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return dict(json.loads(done.stdout))


def test_exports_are_byte_identical_across_hash_seeds_and_import_orders() -> None:
    seen = [_fingerprints(seed, first) for seed, first in zip((0, 1, 7, 42, 123456), ORDERS, strict=True)]
    assert all(other == seen[0] for other in seen[1:])
    assert len({value[0] for value in seen[0].values()}) == len(seen[0])  # each provider's bytes differ


def test_a_set_default_is_written_in_one_order() -> None:
    from tests.providers import stable_tools

    schema = stable_tools.plan_trip.input_schema
    assert schema["properties"]["labels"]["default"] == ["cheap", "direct", "fast", "green", "late"]
    assert schema["properties"]["modes"]["default"] == ["boat", "plane", "train"]
    assert schema["properties"]["rooms"]["default"] == [[3, 5, 1 << 40], [-2, 8]]  # sets inside a list too
    defs = schema["$defs"]
    assert defs["Stop"]["properties"]["tags"]["default"] == ["aisle", "lounge", "quiet", "window"]  # pydantic's
    assert defs["Budget"]["properties"]["cards"]["default"] == ["amex", "diners", "jcb", "visa"]  # a dataclass field's


@pytest.mark.parametrize("provider", PROVIDERS)
def test_equal_schemas_written_in_another_keyword_order_export_the_same_bytes(provider: str) -> None:
    from tests.providers.stable_tools import LOOKUP_INPUT, LOOKUP_OUTPUT

    def reversed_keywords(schema: object) -> object:
        if not isinstance(schema, dict):
            return [reversed_keywords(item) for item in schema] if isinstance(schema, list) else schema
        return {
            key: {name: reversed_keywords(sub) for name, sub in schema[key].items()}
            if key in ("properties", "$defs")
            else reversed_keywords(schema[key])
            for key in reversed(list(schema))
        }

    def made(schema: object, output: object) -> Toolbox:
        return Toolbox([Tool.from_schema("lookup", "Look up.", schema, lambda code: code, output_schema=output)])  # type: ignore[arg-type]

    options = {"output_schema": True} if provider == "openai_responses" else {}
    first = stable.sent(stable.export(made(LOOKUP_INPUT, LOOKUP_OUTPUT), provider, **options))
    second = stable.sent(
        stable.export(made(reversed_keywords(LOOKUP_INPUT), reversed_keywords(LOOKUP_OUTPUT)), provider, **options)
    )
    assert first == second
    kept = made(reversed_keywords(LOOKUP_INPUT), None)["lookup"].input_schema
    assert list(kept) == ["type", "properties", "required", "additionalProperties", "$defs"]
    assert list(kept["properties"]) == ["code", "near"]  # the author's order: providers generate in it
    assert list(kept["properties"]["code"]) == ["type", "minLength", "maxLength", "pattern", "description"]
    output_key = {"mcp": b'"outputSchema"', "gemini": b'"responseJsonSchema"', "openai_responses": b'"output_schema"'}
    assert provider not in output_key or output_key[provider] in first  # the output schema is compared too


def test_a_changed_description_changes_every_fingerprint() -> None:
    before = _fingerprints(3, ORDERS[0])
    after = _fingerprints(3, ORDERS[0], description="Plan a journey.")
    assert all(before[key][0] != after[key][0] for key in before)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_diff_names_what_was_added_removed_and_changed(provider: str) -> None:
    @tool
    def a(x: int) -> int:
        """First."""
        return x

    @tool
    def b(y: str) -> str:
        """Second."""
        return y

    @tool
    def c(z: bool) -> bool:
        """Third."""
        return z

    old = stable.export(Toolbox([a, b]), provider)
    assert Toolbox([a, b]).diff(old, provider).same
    changed = tool(b.fn, description="Second, changed.")
    found = Toolbox([a, changed, c]).diff(old, provider)
    assert (found.added, found.removed, list(found.changed)) == (["c"], [], ["b"])
    assert found.changed["b"].endswith("description")
    assert Toolbox([b, a]).diff(old, provider).moved
    assert Toolbox([a]).diff(old, provider).removed == ["b"]


def test_the_bytes_are_what_a_request_carries() -> None:
    box = Toolbox([tool(lambda q: q, name="echo", description="Echo.")])
    declarations = stable.export(box, "anthropic")
    assert stable.sent(declarations) == json.dumps(declarations, separators=(",", ":")).encode()
    assert box.fingerprint("anthropic") == hashlib.sha256(stable.sent(declarations)).hexdigest()[:16]
    with pytest.raises(ValueError, match="provider is one of"):
        box.fingerprint("nope")


def test_examples_are_checked_at_definition_and_sent_as_anthropic_input_examples() -> None:
    import pydantic
    from anthropic.types import ToolParam

    from tinytools import ToolDefinitionError
    from tinytools.providers import anthropic

    def book(city: str, nights: int = 1) -> str:
        """Book a room."""
        return city

    made = tool(book, examples=[{"city": "Rome"}, {"city": "Oslo", "nights": 3}])
    (declared,) = anthropic.export_tools([made], strict=True, cache_control={"type": "ephemeral"})
    assert declared["input_examples"] == [{"city": "Rome"}, {"city": "Oslo", "nights": 3}]
    assert declared["strict"] is True and declared["cache_control"] == {"type": "ephemeral"}
    pydantic.TypeAdapter(ToolParam).validate_python(declared)
    for bad, words in (
        ([{"city": "Rome", "nights": "3"}], "example 0 does not match"),
        ([{"town": "Rome"}], "example 0 does not match"),
        ([{"city": "Rome"}, "Oslo"], "example 1 is not an object"),
        ({"city": "Rome"}, "takes a list"),
    ):
        with pytest.raises(ToolDefinitionError, match=words):
            tool(book, examples=bad)
    assert "input_examples" not in anthropic.export_tools([tool(book)])[0]


def test_a_prefixed_toolbox_is_one_responses_namespace_and_its_calls_come_back_whole() -> None:
    import pydantic
    from openai.types.responses import FunctionToolParam, NamespaceToolParam, ResponseFunctionToolCall

    from tinytools import Dispatcher
    from tinytools.providers import openai_responses

    @tool
    def lookup(customer: str) -> dict[str, str]:
        """Find a customer."""
        return {"customer": customer}

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    box = Toolbox.merge(Toolbox([lookup]).prefixed("crm_"), [ping])
    declared = openai_responses.export_tools(box, namespaces=True, output_schema=True)
    assert [entry["type"] for entry in declared] == ["namespace", "function"]
    space = declared[0]
    assert space["name"] == "crm_" and [t["name"] for t in space["tools"]] == ["lookup"]
    assert space["tools"][0]["output_schema"] == lookup.output_schema
    pydantic.TypeAdapter(NamespaceToolParam).validate_python(space)
    pydantic.TypeAdapter(FunctionToolParam).validate_python(declared[1])
    call = ResponseFunctionToolCall.model_validate(
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "lookup",
            "namespace": "crm_",
            "arguments": '{"customer": "acme"}',
        }
    )
    (read,) = openai_responses.read_calls([call])
    assert read.name == "crm_lookup"
    assert Dispatcher(box).dispatch(read).output == {"customer": "acme"}
    flat = openai_responses.export_tools(box)
    assert [entry["name"] for entry in flat] == ["crm_lookup", "ping"] and "output_schema" not in flat[0]


GOLDEN = Path(__file__).with_name("stable_exports.json")
"""The fingerprints of `stable_tools` exported for every provider, as this project writes them.

CI runs this file on the oldest and the newest supported Python as well as the main one: the same
file of fingerprints proves the same bytes on each. A change that is meant to change declarations
rewrites it: ``TINYTOOLS_WRITE_GOLDEN=1 python -m pytest tests/providers/test_stable.py``.
"""


def test_exports_are_the_same_bytes_on_every_supported_python() -> None:
    found = _fingerprints(0, ORDERS[0])
    if os.environ.get("TINYTOOLS_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    assert found == json.loads(GOLDEN.read_text()), f"Python {sys.version.split()[0]} exports other bytes"


FIRST_USES = """
import importlib, threading
import tinytools

@tinytools.tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

box = tinytools.Toolbox([add])
gate = threading.Barrier(2)
errors = []

def first_use(use):
    gate.wait()
    try:
        use()
    except BaseException as exc:
        errors.append(repr(exc))

uses = (lambda: importlib.import_module("tinytools.providers.mcp"), lambda: box.fingerprint("mcp"))
threads = [threading.Thread(target=first_use, args=(use,)) for use in uses]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
"""


def test_two_threads_first_use_of_the_mcp_package_and_its_exports_at_once_works() -> None:
    # the exports' module lives inside the package that imports it: importing it first took its
    # lock before the package's, and with another thread importing the package, the two waited on
    # each other (one in twelve fresh processes raised importlib's deadlock error)
    for _ in range(40):  # a fresh process each time: the first use is what races
        ran = subprocess.run([sys.executable, "-c", FIRST_USES], capture_output=True, text=True, timeout=60)
        assert ran.stdout.strip() == "[]", ran.stdout + ran.stderr
