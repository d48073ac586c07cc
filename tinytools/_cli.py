"""The ``tinytools`` command: print a module's tool schemas, or dispatch one call to them.

tinytools schema path/to/tools.py            every tool in a file
tinytools schema pkg.module:toolbox          one toolbox (or one tool) in a module
tinytools schema tools.py --provider openai --strict     in a provider's shape
tinytools call tools.py '{"name": "add", "arguments": {"a": 1, "b": 2}}'
tinytools serve-mcp tools.py                 serve the tools as an MCP server over stdio
tinytools serve-mcp tools.py --http 127.0.0.1:8000 --inject app:make_inject     over HTTP
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from tinytools._errors import SchemaError
from tinytools._events import ToolEvent, ToolOutputChunk, ToolProgress
from tinytools._exports import PROVIDERS, export
from tinytools._results import ToolCall
from tinytools._run.dispatcher import Dispatcher
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox

__all__ = ["load_toolbox", "main"]


class TargetError(Exception):
    """A TARGET that names no tools."""


class UsageError(TargetError):
    """A command written the wrong way: reported with that command's syntax."""


CALL_SYNTAX = """tinytools call TARGET '{"name": "TOOL", "arguments": {...}}'"""
"""How `tinytools call` is written: one JSON object names the tool and holds its arguments."""
CALL_EXAMPLE = (
    "example:\n  tinytools call examples/quickstart.py "
    """'{"name": "search_docs", "arguments": {"query": "tools"}}'"""
)


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
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
            return loaded  # the tools and the --inject factory share one module, and its classes
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


_CHOICES = [name.replace("_", "-") for name in PROVIDERS]
"""``--provider`` choices: the registry's names, written with dashes."""
_STRICT = [name.replace("_", "-") for name, provider in PROVIDERS.items() if provider.strict]


def _or(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def _schema(args: argparse.Namespace) -> int:
    toolbox = load_toolbox(args.target)
    if args.provider is None:
        _print_json(toolbox.schemas())
        return 0
    options = {"strict": True} if args.strict else {}
    try:
        _print_json(export(toolbox, args.provider.replace("-", "_"), **options))
    except SchemaError as exc:
        raise TargetError(str(exc)) from None
    return 0


def _serve_mcp(args: argparse.Namespace) -> int:
    from tinytools.providers import mcp

    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's channel
        toolbox = load_toolbox(args.target)
        inject = _load_inject(args.inject) if args.inject else None
    if args.http is None:
        mcp.serve(toolbox, name=args.name, inject=inject)
        return 0
    from tinytools.providers.mcp._http import serve_http

    host, _, port = args.http.rpartition(":")
    if not host or not port.isdigit():
        raise TargetError(f"--http takes HOST:PORT, not {args.http!r}")
    serve_http(toolbox, host.strip("[]"), int(port), name=args.name, inject=inject)
    return 0


def _load_inject(location: str) -> Any:
    """The factory ``module:factory`` names: the server calls it per session, as ``inject=`` of the Python API."""
    module_name, _, attribute = location.partition(":")
    if not attribute:
        raise TargetError(f"--inject takes module:factory, not {location!r}")
    factory = getattr(_load_module(module_name), attribute, None)
    if not callable(factory):
        raise TargetError(f"--inject: {location!r} is not a function")
    return factory


def _call(args: argparse.Namespace) -> int:
    toolbox = load_toolbox(args.target)
    try:
        request = msgspec.json.decode(args.call)
    except msgspec.DecodeError as exc:
        raise UsageError(f"the call is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("name"), str):
        raise UsageError('the call must be a JSON object like {"name": "...", "arguments": {...}}')
    call = ToolCall(str(request.get("id", "cli")), request["name"], request.get("arguments", {}))
    with ProgressDisplay(sys.stderr) as display:
        result = Dispatcher(toolbox, on_event=display.show).dispatch(call)
    _print_json(result)
    return 0 if result.status == "succeeded" else 1


class ProgressDisplay:
    """Shows a tool's progress on stderr.

    A tqdm bar on a terminal when tqdm is installed (``pip install "tinytools[progress]"``);
    plain lines otherwise.
    """

    def __init__(self, stream: Any):
        self.stream = stream
        self.bar: Any = None
        self.tqdm: Any = None
        if stream.isatty():
            with contextlib.suppress(ImportError):
                from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]

                self.tqdm = tqdm

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()

    def show(self, event: ToolEvent) -> None:
        """Render a `ToolProgress` event, or a streamed piece as it comes; other events are ignored."""
        if isinstance(event, ToolOutputChunk):
            text = event.data if isinstance(event.data, str) else msgspec.json.encode(event.data).decode()
            self.stream.write(f"{event.name}> {text}" if text.endswith("\n") else f"{event.name}> {text}\n")
            self.stream.flush()
            return
        if not isinstance(event, ToolProgress):
            return
        if self.tqdm is None:
            total = f"/{event.total:g}" if event.total is not None else ""
            message = f" {event.message}" if event.message else ""
            self.stream.write(f"{event.name}: {event.done:g}{total}{message}\n")
            self.stream.flush()
            return
        if self.bar is None:
            self.bar = self.tqdm(total=event.total, desc=event.name, file=self.stream)
        if event.total is not None:
            self.bar.total = event.total
        self.bar.n = event.done
        if event.message:
            self.bar.set_postfix_str(event.message, refresh=False)
        self.bar.refresh()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="tinytools", description="Inspect and call tinytools tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    schema = commands.add_parser("schema", help="print the schemas of the tools in TARGET")
    schema.add_argument("target", help="path/to/file.py or pkg.module, optionally :name")
    schema.add_argument("--provider", choices=_CHOICES, help="print the tools in this provider's shape")
    schema.add_argument("--strict", action="store_true", help=f"strict mode (with --provider {_or(_STRICT)})")
    schema.set_defaults(run=_schema, parser=schema)
    call = commands.add_parser(
        "call",
        help="dispatch one call to the tools in TARGET",
        usage=CALL_SYNTAX,
        epilog=CALL_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    call.add_argument("target", help="path/to/file.py or pkg.module, optionally :name")
    call.add_argument("call", help='JSON: {"name": ..., "arguments": ...}')
    call.set_defaults(run=_call, parser=call)
    serve = commands.add_parser("serve-mcp", help="serve the tools in TARGET as an MCP server (stdio, or --http)")
    serve.add_argument("target", help="path/to/file.py or pkg.module, optionally :name")
    serve.add_argument("--name", default="tinytools", help="the server name reported to clients")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve over streamable HTTP (stateless) instead of stdio")
    serve.add_argument(
        "--inject",
        metavar="MODULE:FACTORY",
        help="injected values: FACTORY(context) (or FACTORY()) returns them, called per session when a tool needs them",
    )
    serve.set_defaults(run=_serve_mcp, parser=serve)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, which shows that command's syntax
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "strict", False) and args.provider not in _STRICT:
        parser.error(f"--strict needs --provider {_or(_STRICT)}")
    try:
        status: int = args.run(args)
    except UsageError as exc:
        args.parser.error(str(exc))  # the command's syntax, then the message; exits 2
    except TargetError as exc:
        parser.exit(2, f"tinytools: error: {exc}\n")
    return status
