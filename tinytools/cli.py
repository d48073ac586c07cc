"""The ``tinytools`` command: print a module's tool schemas, or dispatch one call to them.

tinytools schema path/to/tools.py            every tool in a file
tinytools schema pkg.module:toolbox          one toolbox (or one tool) in a module
tinytools call tools.py '{"name": "add", "arguments": {"a": 1, "b": 2}}'
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from tinytools.dispatch import dispatch
from tinytools.results import ToolCall
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

__all__ = ["load_toolbox", "main"]


class TargetError(Exception):
    """A TARGET that names no tools."""


def load_toolbox(target: str) -> Toolbox:
    """Load the tools a TARGET names: ``file.py`` or ``pkg.module``, with an optional ``:name``.

    Without a name, a module's single `Toolbox` is used if it has one, else every `Tool` in it.

    Raises:
        TargetError: Nothing loadable, or no tools found.
    """
    location, _, attribute = target.partition(":")
    module = _load_module(location)
    if attribute:
        found = getattr(module, attribute, None)
        if isinstance(found, Toolbox):
            return found
        if isinstance(found, Tool):
            return Toolbox([found])
        raise TargetError(f"{location} has no tool or toolbox named {attribute!r}")
    values = list(vars(module).values())
    boxes = [value for value in values if isinstance(value, Toolbox)]
    if len(boxes) == 1:
        return boxes[0]
    tools = [value for value in values if isinstance(value, Tool)]
    if not tools:
        raise TargetError(f"no tools found in {location}; decorate functions with @tool")
    return Toolbox(tools)


def _load_module(location: str) -> ModuleType:
    path = Path(location)
    if location.endswith(".py") or path.exists():
        if not path.is_file():
            raise TargetError(f"no such file: {location}")
        name = f"tinytools_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"cannot load {location}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(location)
    except ImportError as exc:
        raise TargetError(f"cannot import {location!r}: {exc}") from None


def _print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")


def _schema(args: argparse.Namespace) -> int:
    _print_json(load_toolbox(args.target).schemas())
    return 0


def _call(args: argparse.Namespace) -> int:
    toolbox = load_toolbox(args.target)
    try:
        request = msgspec.json.decode(args.call)
    except msgspec.DecodeError as exc:
        raise TargetError(f"the call is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("name"), str):
        raise TargetError('the call must be a JSON object like {"name": "...", "arguments": {...}}')
    call = ToolCall(str(request.get("id", "cli")), request["name"], request.get("arguments", {}))
    result = dispatch(call, toolbox)
    _print_json(result)
    return 0 if result.status == "succeeded" else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="tinytools", description="Inspect and call tinytools tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    schema = commands.add_parser("schema", help="print the schemas of the tools in TARGET")
    schema.add_argument("target", help="path/to/file.py or pkg.module, optionally :name")
    schema.set_defaults(run=_schema)
    call = commands.add_parser("call", help="dispatch one call to the tools in TARGET")
    call.add_argument("target", help="path/to/file.py or pkg.module, optionally :name")
    call.add_argument("call", help='JSON: {"name": ..., "arguments": ...}')
    call.set_defaults(run=_call)
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except TargetError as exc:
        parser.exit(2, f"tinytools: error: {exc}\n")
    return status
