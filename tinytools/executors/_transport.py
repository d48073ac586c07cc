"""One routed call: send it to its executor, wait without hanging, read the answer back.

`Route` is what `Dispatcher` keeps per tool that leaves the process (`tinytools.executors`
decides which). The job goes out and the answer comes back as bytes pickled here, so the
parameter whose value cannot travel is named, and any failure of the executor's future (a dead
worker, a lost scheduler, a shut-down pool) is known to be the executor's, never the tool's.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import os
import pickle
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from tinytools._encoding import Unencodable
from tinytools._errors import RetryableError, ToolError, TransferError
from tinytools._public import publish
from tinytools._results import ToolCall
from tinytools._run.threads import Raised, unheard
from tinytools._run.tracing import current_traceparent
from tinytools._tool import Tool
from tinytools.executors._failures import ExecutorError, RemoteToolError
from tinytools.executors._pools import SharedPool, reap
from tinytools.executors._worker import PROTOCOL, Remote, ToolRef, call_tool

if TYPE_CHECKING:
    import asyncio

__all__ = ["Route"]


class Route:
    """Where one tool's calls go, and how they get there and back."""

    def __init__(
        self,
        tool: Tool[..., Any],
        name: str,
        executor: concurrent.futures.Executor | SharedPool,
        ref: ToolRef | None,
        remote: dict[str, Remote],
    ):
        self.tool = tool
        self.name = name
        """The executor's name (``default``, ``process`` or the application's)."""
        self.executor = executor
        self.ref = ref
        """The tool by reference; None for an in-process executor (a thread pool)."""
        self.remote = remote
        """Parameter -> stand-in for each ``remote=True`` injected value."""
        self.guard = not tool.idempotent
        """Whether a Dask rerun after a worker died must stand down."""
        self.positional = tuple(slot.name for slot in tool.slots or () if slot.positional_only)
        """The names of the arguments passed by position, for errors."""

    async def run(
        self, call: ToolCall, args: list[Any], kwargs: dict[str, Any], fn: Callable[..., Any] | None = None
    ) -> Any:
        """Send one call and wait for its answer; the output, or the exception to handle.

        ``fn`` stands in for the tool's function on an in-process executor (a streaming tool's
        pieces are sent from the pool's thread).

        Raises:
            TransferError: A value cannot be pickled for the executor.
            ExecutorError: The executor failed (the worker died, it is shut down, ...).
            ToolError: The tool raised one (a `RetryableError` stays retryable).
            RemoteToolError: The tool raised anything else.
        """
        if self.ref is None:  # a thread of this process: the caller's contextvars go with the call
            work = self.tool.fn if fn is None else fn
            submitted = self._submit(contextvars.copy_context().run, work, *args, **kwargs)
            return await _bridge(submitted, remote=False, on_broken=self.reap, name=self.tool.name)
        job = self.pack(call, args, kwargs)
        answer = await _bridge(self._submit(call_tool, job), remote=True, on_broken=self.reap, name=self.tool.name)
        return self.unpack(call, answer)

    def _submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        try:
            future = self.executor.submit(fn, *args, **kwargs)
        except Exception as exc:  # shut down, broken: the call was not made
            if isinstance(exc, concurrent.futures.BrokenExecutor):
                self.reap()
            reason = f"executor {self.name!r} refused the call: {type(exc).__name__}: {exc}"
            raise ExecutorError("executor_unavailable", reason, may_have_acted=False) from exc
        future.add_done_callback(self._reap_if_broken)
        return future

    def _reap_if_broken(self, done: concurrent.futures.Future[Any]) -> None:
        if not done.cancelled() and isinstance(done.exception(), concurrent.futures.BrokenExecutor):
            self.reap()

    def reap(self) -> None:
        """Kill the workers left in process pools of this route that a dead worker broke.

        CPython can start a worker for a submission just as its pool breaks, miss it when it
        terminates the others, then wait for it forever, and the interpreter hangs at exit. A
        broken pool runs nothing more, so its workers are of no use. This runs both where the
        future fails and in the thread that reads the failure, after its submission returned.
        """
        broken_pools = getattr(self.executor, "broken_pools", None)
        for pool in broken_pools() if broken_pools is not None else [self.executor]:
            reap(pool)

    def pack(self, call: ToolCall, args: list[Any], kwargs: dict[str, Any]) -> bytes:
        """Pickle the job, naming the parameter whose value cannot travel."""
        guard = f"tinytools-started-{os.urandom(12).hex()}" if self.guard else None
        try:
            job = (call.id, self.ref, args, kwargs, guard, perf_counter(), current_traceparent())
            return pickle.dumps(job, protocol=PROTOCOL)
        except Exception as exc:
            raise self._transfer_error(args, kwargs, exc) from exc

    def _transfer_error(self, args: list[Any], kwargs: dict[str, Any], error: Exception) -> TransferError:
        parameter = ""
        named = dict(zip(self.positional, args, strict=False)) | kwargs
        for name, value in named.items():
            problem = _pickle_problem(value)
            if problem is not None:
                parameter, error = name, problem
                break
        return TransferError(
            tool=self.tool.name,
            parameter=parameter,
            executor=self.name,
            reason=f"{type(error).__name__}: {error}",
            injected=parameter in self.tool.injected,
        )

    def unpack(self, call: ToolCall, answer: bytes) -> Any:
        """The output from a worker's answer, or the exception it stands for."""
        call_id, kind, value = pickle.loads(answer)
        if kind == "returned" and call_id == call.id:
            return value
        if kind == "tool_error":
            message, code, retryable = value
            raise (RetryableError if retryable else ToolError)(message, code=code)
        if kind == "exception":
            raise RemoteToolError(f"{value[0]} in a worker:\n{value[1]}")
        if kind == "unencodable":
            raise ToolError(Unencodable(*value).describe(self.tool.name), code="invalid_output")
        if kind == "rerun":
            reason = "the cluster ran the call again after its worker died; the second attempt stood down"
            raise ExecutorError("worker_lost", reason, may_have_acted=True)
        if kind == "unavailable":
            raise ExecutorError("executor_error", f"the worker could not run the tool: {value}", may_have_acted=False)
        raise ExecutorError("executor_error", f"answer for call {call_id!r}, not {call.id!r}", may_have_acted=True)


def _pickle_problem(value: Any) -> Exception | None:
    try:
        pickle.dumps(value, protocol=PROTOCOL)
    except Exception as exc:
        return exc
    return None


async def _bridge(
    future: concurrent.futures.Future[Any], *, remote: bool, on_broken: Callable[[], None], name: str
) -> Any:
    """Await an executor's future; cancelling the wait cancels the future.

    From a remote executor every exception is the executor's (the worker function never
    raises): a dead worker, a lost scheduler, a future the executor cancelled. They become
    `ExecutorError`. From a thread pool what the future raised is the tool's own, whatever its
    class (an exit propagates, as from a tool run inline), unless it says the pool is broken.
    """
    import asyncio  # imported on first use: it alone costs more than importing tinytools

    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[Any] = loop.create_future()

    def hand_back(done: concurrent.futures.Future[Any]) -> None:
        if waiter.done():
            return
        if done.cancelled():
            error = ExecutorError("worker_lost", "the executor cancelled the call", may_have_acted=True)
            waiter.set_exception(error)
            return
        exc = done.exception()
        if exc is None:
            waiter.set_result(done.result())
        elif not remote and not isinstance(exc, concurrent.futures.BrokenExecutor):
            waiter.set_result(Raised(exc))  # the tool's own, raised below (a future refuses some, see there)
        else:
            if isinstance(exc, concurrent.futures.BrokenExecutor):
                on_broken()
            code = "worker_lost" if _is_lost(exc) else "executor_error"
            waiter.set_exception(ExecutorError(code, _described(exc), may_have_acted=True))

    def done(finished: concurrent.futures.Future[Any]) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for this call any more
            loop.call_soon_threadsafe(hand_back, finished)

    future.add_done_callback(done)
    try:
        value = await waiter
    except asyncio.CancelledError:
        if not future.cancel() and not remote:  # running on its thread: an exit it raises is nobody's to hear

            def ended(done: concurrent.futures.Future[Any]) -> None:
                exc = None if done.cancelled() else done.exception()
                if exc is not None:
                    unheard(name, Raised(exc))

            future.add_done_callback(ended)
        raise
    if value.__class__ is Raised:  # raised here, as by a tool run inline: a future refuses a StopIteration,
        raise value.exception  # and a GeneratorExit thrown into the task would close the frames awaiting it
    return value


def _described(exc: BaseException) -> str:
    """``Type: text`` of an exception for the log, whatever its ``__str__`` does."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:  # a __str__ may raise anything, even a GeneratorExit
        return type(exc).__name__


def _is_lost(exc: BaseException) -> bool:
    """Whether an exception from an executor's future says a worker or the cluster went away."""
    return (
        isinstance(exc, (concurrent.futures.BrokenExecutor, OSError))
        or type(exc).__module__.split(".")[0] == "distributed"
    )


publish("tinytools.executors", Route)
