"""The peers' own test cases, ported: each definition read with and without postponed annotations.

The modules of `tests.schema.peers` hold the definitions and the table (`CASES`). Every case
runs twice: on its module as written, and on a copy compiled with
``from __future__ import annotations``. A case asserts tinytools' behaviour: the peer's where
tinytools agrees or issue 17 fixes it, our documented design where it differs.
"""

from __future__ import annotations
import __future__

import importlib
import importlib.util
import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.schema import peers
from tests.schema.peers import ABSENT, Case
from tinytools import Toolbox, ToolCall, ToolDefinitionError, dispatch, tool
from tinytools._errors import ToolDefinitionWarning

MODULES = ["openai_agents", "pydantic_ai", "langchain", "fastmcp", "mcp_sdk", "mcp_sdk_returns", "uncovered_shapes"]
NEED_PYDANTIC = ["openai_agents_fields", "frameworks_fields", "mcp_sdk_fields"]
HAS_PYDANTIC = importlib.util.find_spec("pydantic") is not None


def _module(name: str, *, postponed: bool = False) -> types.ModuleType:
    """A module of `tests.schema.peers`, or a copy compiled as if it began with the future import."""
    if not postponed:
        return importlib.import_module(f"tests.schema.peers.{name}")
    qualified = f"tests.schema.peers.{name}_postponed"
    if qualified not in sys.modules:
        path = Path(peers.__file__).with_name(f"{name}.py")
        module = types.ModuleType(qualified)
        module.__file__ = str(path)
        sys.modules[qualified] = module  # before running it, as an import would: dataclasses look themselves up
        flags = __future__.annotations.compiler_flag
        exec(compile(path.read_text(), str(path), "exec", flags=flags, dont_inherit=True), module.__dict__)
    return sys.modules[qualified]


def _all_cases() -> list[tuple[str, Case]]:
    names = MODULES + (NEED_PYDANTIC if HAS_PYDANTIC else [])  # without pydantic, its cases cannot even be defined
    return [(name, case) for name in names for case in _module(name).CASES]


ALL_CASES = _all_cases()


def _ids(cases: list[tuple[str, Case]]) -> list[str]:
    """The definition's name, numbered from its second case on: `oa_sum`, `oa_sum-2`."""
    seen: dict[str, int] = {}
    ids = []
    for _, case in cases:
        seen[case.name] = seen.get(case.name, 0) + 1
        ids.append(case.name if seen[case.name] == 1 else f"{case.name}-{seen[case.name]}")
    return ids


def _at(schema: Any, pointer: str) -> Any:
    """The value a JSON pointer leads to, or ABSENT."""
    value = schema
    for token in pointer.split("/")[1:] if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(value, dict) or token not in value:
            return ABSENT
        value = value[token]
    return value


def _same(actual: Any, expected: Any) -> bool:
    """Equal, and of the same types all the way down (3 is not 3.0, a dict is not a model)."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, dict):
        return actual.keys() == expected.keys() and all(_same(actual[key], expected[key]) for key in actual)
    if isinstance(actual, (list, tuple)):
        return len(actual) == len(expected) and all(map(_same, actual, expected))
    return bool(actual == expected)


@pytest.mark.parametrize("postponed", [False, True], ids=["annotations", "postponed"])
@pytest.mark.parametrize(("module_name", "case"), ALL_CASES, ids=_ids(ALL_CASES))
def test_peer_case(module_name: str, case: Case, postponed: bool) -> None:
    module = _module(module_name, postponed=postponed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolDefinitionWarning)  # most peer tests define tools with no docstring
        if case.undefinable:
            with pytest.raises(ToolDefinitionError):
                tool(getattr(module, case.name), **case.options)
            return
        made = tool(getattr(module, case.name), **case.options)
    for pointer, expected in case.facts.items():
        assert _at(made.input_schema, pointer) == expected, pointer
    for pointer, expected in case.output.items():
        found = made.output_schema if pointer == "" else _at(made.output_schema or {}, pointer)
        assert found == expected, pointer
    if case.description is not None:
        assert made.description == case.description
    if case.call is not None:
        _check_call(case, made, module)


def _check_call(case: Case, made: Any, module: types.ModuleType) -> None:
    arguments = case.call if isinstance(case.call, str) else json.dumps(case.call)
    peers.RECEIVED.clear()
    result = dispatch(ToolCall(id="c1", name=made.name, arguments=arguments), Toolbox([made]), inject=dict(case.inject))
    if case.refused is not None:
        assert (result.status, result.error and result.error.code) == ("failed", case.refused)
        assert case.says is None or (result.error is not None and case.says in result.error.message)
        assert not peers.RECEIVED, "a refused call must not run"
        return
    assert result.status == "succeeded", result.error
    if case.receives is not None:
        expected = case.receives(module) if callable(case.receives) else case.receives
        assert peers.RECEIVED, "the function did not run"
        assert _same(peers.RECEIVED[-1], dict(expected)), (peers.RECEIVED[-1], expected)
    if case.result is not None:
        assert _same(result.output, case.result), result.output


def test_the_postponed_copy_really_postpones() -> None:
    assert _module("fastmcp").fm_add.__annotations__["a"] is int
    assert _module("fastmcp", postponed=True).fm_add.__annotations__["a"] == "int"


def test_the_port_is_large_enough_and_every_case_has_a_verdict() -> None:
    definitions = {(name, case.name) for name, case in ALL_CASES}
    assert len(definitions) >= 150 or not HAS_PYDANTIC
    for _, case in ALL_CASES:
        assert case.verdict in ("AGREES", "DIFFERS", "FIXED_IN_17"), case
        assert case.verdict == "AGREES" or case.why, case
