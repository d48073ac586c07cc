"""What runs on the other side of an executor: resolve the tool, call it, pack the answer.

A job and its answer cross the boundary as bytes pickled here, so the executor only moves
bytes and this module knows exactly what failed to travel. The worker never raises: a tool's
exception, a value that will not pickle back and a tool that cannot be imported all come back
as answers, so an exception from the executor's future always means the executor itself failed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import pickle
import sys
import traceback
from collections.abc import Callable
from time import perf_counter
from typing import Any

from tinytools._context import Invocation
from tinytools._encoding import OutputEncoder
from tinytools._errors import RetryableError, ToolError
from tinytools._public import publish
from tinytools._results import ToolOutput
from tinytools._run.tracing import within_trace
from tinytools._tool import Tool
from tinytools.executors._factories import provided

__all__ = ["PROTOCOL", "Remote", "ToolRef", "call_tool", "pack_answer"]

PROTOCOL = 5
"""The pickle protocol of jobs and answers."""


@dataclasses.dataclass(frozen=True)
class ToolRef:
    """What travels instead of the tool's function: its module-level name, or it pickled.

    A module-level function goes by name. A ``functools.partial`` of one, or an instance with
    ``__call__`` of a module-level class, has no name of its own: it goes pickled (``carried``),
    and ``module``/``qualname`` name the function or class inside it.
    """

    module: str
    """The module that defines it (or the function or class a pickled one holds)."""
    qualname: str
    """Its qualified name in that module."""
    carried: bytes | None = None
    """The partial or callable instance, pickled once when the dispatcher was built; None for a name."""

    def resolve(self) -> Callable[..., Any]:
        """Import the module and find the function, or unpickle the one carried (cached per process).

        Raises:
            ImportError: The module cannot be imported here.
            AttributeError: The module has no such name.
        """
        found = _RESOLVED.get(self)
        if found is None:
            made = pickle.loads(self.carried) if self.carried is not None else _plain(self.lookup())
            found = _RESOLVED[self] = made
        return found

    def lookup(self) -> Any:
        """The object the name leads to (a `Tool` or a function)."""
        target: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            target = getattr(target, part)
        return target


_RESOLVED: dict[ToolRef, Callable[..., Any]] = {}


def _plain(target: Any) -> Callable[..., Any]:
    return target.fn if isinstance(target, Tool) else target


@dataclasses.dataclass(frozen=True)
class Remote:
    """Stands in for a ``remote=True`` injected value; the worker makes the real one."""

    key: str
    """The inject key."""
    factory: ToolRef
    """The registered factory, by name."""


def call_tool(job: bytes) -> bytes:
    """Run one pickled job and return its pickled answer ``(call_id, kind, value)``.

    Kinds: ``returned`` (the output), ``tool_error`` (message, code, retryable), ``exception``
    (type and traceback text), ``unencodable`` (the fields of an `Unencodable`), ``rerun`` (an earlier
    attempt of this non-idempotent call started on a worker that died) and ``unavailable``
    (the tool or an argument could not be loaded here; the tool did not run).
    """
    try:
        call_id, ref, args, kwargs, guard, clock, trace = pickle.loads(job)
        fn = ref.resolve()
    except Exception as exc:
        return pack_answer("", "unavailable", f"{type(exc).__name__}: {exc}")
    try:
        args = [_localised(value, clock) for value in args]
        kwargs = {name: _localised(value, clock) for name, value in kwargs.items()}
    except BaseException as exc:
        return _raised(call_id, exc)
    try:
        release = _claim(guard)
    except Exception as exc:
        return pack_answer(call_id, "unavailable", f"cannot mark the call as started: {type(exc).__name__}: {exc}")
    if release is None:
        return pack_answer(call_id, "rerun", None)
    try:
        with within_trace(trace):  # the caller's span is this tool's parent, as in the caller's process
            output = fn(*args, **kwargs)
    except BaseException as exc:
        return _raised(call_id, exc)
    finally:
        _quietly(release)
    return _returned(call_id, output)


def pack_answer(call_id: str, kind: str, value: Any) -> bytes:
    """Pickle one answer."""
    return pickle.dumps((call_id, kind, value), protocol=PROTOCOL)


def _localised(value: Any, clock: float) -> Any:
    """A remote value made here; an `Invocation` with its deadline moved onto this process's clock."""
    if value.__class__ is Remote:
        return provided(value.factory.resolve())
    if value.__class__ is Invocation and value.deadline is not None:
        return _replace(value, deadline=value.deadline - clock + perf_counter())
    return value


def _replace(value: Any, **changes: Any) -> Any:
    import msgspec

    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **changes)
    return dataclasses.replace(value, **changes)


def _raised(call_id: str, exc: BaseException) -> bytes:
    if isinstance(exc, ToolError):
        return pack_answer(call_id, "tool_error", (exc.message, exc.code, isinstance(exc, RetryableError)))
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return pack_answer(call_id, "exception", (kind, text))


def _returned(call_id: str, output: Any) -> bytes:
    """The output goes back as it is, to be encoded where the dispatcher and its encoders are.

    Only an output that does not pickle is made plain data here, by the built-in rules of
    `tinytools._encoding` (the application's encoders stay in the dispatcher's process, so they
    need not pickle); one that cannot be answers ``unencodable`` with what `Unencodable` says.
    """
    try:
        return pack_answer(call_id, "returned", output)
    except Exception:
        pass
    value = output.value if isinstance(output, ToolOutput) else output
    encoder = OutputEncoder()
    try:
        plain = encoder.to_builtins(value)
        if isinstance(output, ToolOutput):
            plain = ToolOutput(plain, content=output.content, artifacts=output.artifacts)
        return pack_answer(call_id, "returned", plain)
    except Exception:
        return pack_answer(call_id, "unencodable", tuple(encoder.locate(value)))


def _claim(guard: str | None) -> Callable[[], None] | None:
    """Mark a non-idempotent call as started on a Dask cluster; None if an earlier attempt was.

    Dask runs a task again when the worker running it dies. For a tool that may have acted,
    that is a retry nobody asked for, so the second attempt finds the mark and stands down.
    Elsewhere (a process pool never reruns a task) there is nothing to mark.
    """
    if guard is None or "distributed" not in sys.modules:
        return _nothing
    import distributed

    try:
        distributed.get_worker()
    except ValueError:  # not on a Dask worker
        return _nothing
    client: Any = distributed.get_client()
    try:  # one round trip that tests and sets (the scheduler logs the refusal of a rerun)
        client.publish_dataset(True, name=guard)
    except KeyError:
        client.unpublish_dataset(guard)
        return None

    def release() -> None:  # sent without waiting for the scheduler: the answer is ready
        import asyncio

        asyncio.run_coroutine_threadsafe(client.unpublish_dataset(guard, asynchronous=True), client.loop.asyncio_loop)

    return release


def _nothing() -> None:
    return None


def _quietly(release: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):  # the mark outlives the call; the answer matters more
        release()


publish("tinytools.executors", ToolRef)
