"""One exception hierarchy for tinytools.

Two families hang off the root. Definition errors are the developer's: `@tool`, `Toolbox`
and `InputSchema.parse` raise them at once. Call errors are the model's: by default the
dispatcher turns them into a `ToolResult`, and they escape only where the application chose a
``"fail"`` policy. `ToolError` is different again: a tool raises it on purpose to tell the
model something.

    TinyToolsError
    ├── ToolDefinitionError (ValueError)      a tool, toolbox or schema cannot be defined
    │   └── SchemaError                       a JSON Schema cannot be enforced exactly
    ├── InjectionError (LookupError)          the application did not supply an injected value
    ├── TransferError (TypeError)             a value cannot travel to the executor a tool runs on
    ├── ResultError (ValueError)              a ToolResult that breaks its own rules
    ├── JournalError (RuntimeError)           the journal cannot be used: unreachable, foreign, corrupt
    ├── PendingError                          a pending call cannot be resumed as asked
    ├── NeedsInput                            raised by a tool that waits for the user's answer
    ├── WaitsElsewhere                        raised by a tool whose call goes on outside (a remote pending call)
    ├── CancelledCall                         raised by a cooperative tool that stops when cancelled
    ├── ExecutorError                         the executor, not the tool, failed a call (tinytools.executors)
    ├── RemoteToolError                       what a tool raised in an executor's worker (tinytools.executors)
    ├── CallError                             a tool call the model got wrong
    │   ├── ArgumentsError (ValueError)       arguments failed to decode or validate
    │   └── ToolNotFound (LookupError)        no tool of that name
    └── ToolError                             raised by a tool; its message reaches the model
        └── RetryableError                    an idempotent tool asks to be tried again
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tinytools._public import publish

__all__ = [
    "ECHO_LIMIT",
    "MAX_LISTED",
    "ArgumentsError",
    "CallError",
    "CancelledCall",
    "InjectionError",
    "JournalError",
    "NeedsInput",
    "PendingError",
    "ResultError",
    "RetryableError",
    "SchemaError",
    "TinyToolsError",
    "ToolDefinitionError",
    "ToolDefinitionWarning",
    "ToolError",
    "ToolNotFound",
    "TransferError",
    "WaitsElsewhere",
    "argument_place",
    "counted",
    "echo",
    "failure_like",
    "kept",
    "schema_failure",
    "shorten",
    "together",
    "unless_failed",
]

ECHO_LIMIT = 200
"""Longest name or value echoed into a model-facing message, in characters."""

MAX_LISTED = 10
"""Most problems one invalid call lists (`ArgumentsError.errors`); the rest are counted."""


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@functools.cache
def _writers() -> tuple[Callable[[str], str], Callable[[Any], str]]:
    """``json.dumps(value, ensure_ascii=False)`` for one string, and for any value: loaded by the first echo."""
    import json.encoder

    return json.encoder.encode_basestring, json.encoder.JSONEncoder(ensure_ascii=False).encode


def echo(value: Any) -> str:
    """JSON text of ``value`` (as ``json.dumps(value, ensure_ascii=False)``), cut to the echo limit."""
    kind = type(value)
    try:
        if kind is str:
            text = _writers()[0](value[:ECHO_LIMIT])
        elif kind is int or (kind is float and math.isfinite(value)):
            text = repr(value)  # what json.dumps writes; raises ValueError for a huge int
        else:
            text = _writers()[1](value)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except ValueError:  # an int beyond the str() digit limit
            text = f"<{kind.__name__} too long to show>"
        except Exception:  # nested too deeply, or a __repr__ that fails
            text = f"<{kind.__name__}>"
    if not text.isascii():  # a lone surrogate would make the message impossible to encode
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= ECHO_LIMIT else shorten(text)


_PLURALS = {"property": "properties"}


def counted(number: object, noun: str) -> str:
    """``number`` and ``noun``, in the plural unless the number is one: "1 character", "2 items"."""
    plural = noun if number == 1 else _PLURALS.get(noun, noun + "s")
    return f"{number} {plural}"


class TinyToolsError(Exception):
    """The root of every exception tinytools raises.

    Each pickles and copies with its attributes (a worker process's error reaches its parent),
    whatever its constructor asks for.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (type(self), self.args), self.__dict__  # the state as pickle and copy set it


def _rebuilt(cls: type[TinyToolsError], args: tuple[Any, ...]) -> TinyToolsError:
    """An error unpickled or copied, with its arguments, its constructor not run again (its attributes follow)."""
    error = cls.__new__(cls, *args)
    error.args = args
    return error


class ToolDefinitionError(TinyToolsError, ValueError):
    """A tool or toolbox cannot be defined as written.

    Attributes:
        tool: The tool's (or function's) name, when known.
        parameter: The offending parameter, when there is one.
        reason: What is wrong and, where there is one, the fix.
    """

    def __init__(self, reason: str, *, tool: str | None = None, parameter: str | None = None):
        self.tool = tool
        self.parameter = parameter
        self.reason = reason
        super().__init__(reason)

    def __str__(self) -> str:
        where = []
        if self.tool is not None:
            where.append(f"tool {self.tool!r}")
        if self.parameter is not None:
            where.append(f"parameter {self.parameter!r}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class SchemaError(ToolDefinitionError):
    """A JSON Schema that tinytools cannot enforce exactly, so refuses.

    Attributes:
        pointer: JSON pointer to the offending place in the schema.
    """

    def __init__(
        self,
        reason: str,
        *,
        pointer: str = "",
        tool: str | None = None,
        parameter: str | None = None,
    ):
        self.pointer = pointer
        super().__init__(reason, tool=tool, parameter=parameter)

    def __str__(self) -> str:
        base = super().__str__()
        return f"schema at {self.pointer or '/'}: {base}"


class InjectionError(TinyToolsError, LookupError):
    """An injected parameter has no value: a configuration error of the application.

    Attributes:
        tool: The tool being called.
        parameter: The injected parameter that had no value.
        key: The key it is looked up by in ``inject=``.
    """

    def __init__(self, *, tool: str, parameter: str, key: str):
        self.tool = tool
        self.parameter = parameter
        self.key = key
        super().__init__(tool, parameter, key)

    def __str__(self) -> str:
        return (
            f"tool {self.tool!r}, parameter {self.parameter!r}: no injected value; "
            f"pass inject={{{self.key!r}: ...}} to dispatch"
        )


class TransferError(TinyToolsError, TypeError):
    """A call's value cannot be pickled for the executor its tool runs on: the application's to fix.

    Attributes:
        tool: The tool being called.
        parameter: The parameter whose value cannot travel ("" when none alone is to blame).
        executor: The executor's name (``default``, ``process`` or the application's).
        reason: Why pickling failed.
        injected: Whether the parameter is injected (not sent by the model).
    """

    def __init__(self, *, tool: str, parameter: str, executor: str, reason: str, injected: bool):
        self.tool = tool
        self.parameter = parameter
        self.executor = executor
        self.reason = reason
        self.injected = injected
        super().__init__(tool, parameter, executor, reason)

    def __str__(self) -> str:
        what = "the injected value" if self.injected else "the value"
        fix = (
            "mark it Injected(..., remote=True) and register its factory with @provide(...), or keep"
            if self.injected
            else "make its type picklable, or keep"
        )
        return (
            f"tool {self.tool!r}, parameter {self.parameter!r}: {what} cannot be sent to executor "
            f"{self.executor!r} ({self.reason}); {fix} the tool in this process with @tool(executor='inline')"
        )


class ResultError(TinyToolsError, ValueError):
    """A `ToolResult` that is malformed or over its byte budget."""


class CallError(TinyToolsError):
    """A tool call the model got wrong; normally turned into a result, not raised."""


class ArgumentsError(CallError, ValueError):
    """Arguments that could not be decoded or failed validation.

    The message is built from the fields, so code should read the fields.

    Attributes:
        tool: The tool the arguments were for (None until known).
        parameter: The top-level argument at fault, or None for the whole object.
        pointer: JSON pointer into the arguments where the fault is.
        keyword: The JSON Schema keyword that failed (``"type"``, ``"required"``, ...),
            or ``"json"`` when the arguments could not be decoded.
        reason: A short statement of what was expected and what came.
        schema: The schema of the value at fault, as the enforced schema writes it (for a missing
            property, the property's); None when no one subschema describes it.
        unlisted: Failures found beyond those `errors` lists (see `MAX_LISTED`).

    The fields describe the first failure (the first the validator met, or, for one it explains
    by what lies below, such as an ``anyOf`` given a model, the first of those). A call with
    several problems (arguments missing, unexpected, or failing their schema, and each problem
    inside an argument's objects and arrays, at any depth) keeps one error per problem in `errors`.
    """

    tool: str | None
    parameter: str | None
    pointer: str
    keyword: str
    reason: str
    schema: Any
    unlisted: int = 0
    _listed: tuple[ArgumentsError, ...] = ()
    """Every problem, when the call had more than one (`attach`): `errors` reads it."""

    def __init__(
        self,
        reason: str,
        *,
        pointer: str = "",
        keyword: str = "",
        parameter: str | None = None,
        tool: str | None = None,
        schema: Any = None,
    ):
        self.tool = tool
        self.parameter = parameter
        self.pointer = pointer
        self.keyword = keyword
        self.reason = reason
        self.schema = schema
        super().__init__(reason)  # args == (reason,) however reason was passed: pickle and copy need it

    @property
    def errors(self) -> tuple[ArgumentsError, ...]:
        """One error per problem, the first failure's first; ``(self,)`` when it is the only one.

        At most `MAX_LISTED`; `unlisted` counts the rest.
        """
        return self._listed or (self,)

    def attach(self, errors: tuple[ArgumentsError, ...], unlisted: int = 0) -> None:
        """Record every problem found beside this first failure (see `errors`)."""
        self._listed = errors
        self.unlisted = unlisted

    def __str__(self) -> str:
        listed = self._listed
        if listed:
            body = "; ".join(map(str, listed)) + (f"; and {self.unlisted} more" if self.unlisted else "")
            return f"tool {shorten(self.tool)!r}: {body}" if self.tool is not None else body
        if self.parameter is not None:
            place = argument_place(self.tool, self.parameter)
            return f"{place}{shorten(self.pointer or '/')}: {self.reason}"
        where = [f"tool {shorten(self.tool)!r}"] if self.tool is not None else []
        if self.pointer:
            where.append(f"at {self.pointer}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


def argument_place(tool: str | None, parameter: str) -> str:
    """What comes before an argument's JSON pointer in every text about it: ``tool 'x', argument 'a' at ``.

    `ArgumentsError` and the message the model reads (`tinytools._run.argument_messages`) both
    begin so; names are cut to `ECHO_LIMIT` characters.
    """
    named = f"tool {shorten(tool)!r}, " if tool is not None else ""
    return f"{named}argument {shorten(parameter)!r} at "


def schema_failure(reason: str, pointer: str, keyword: str, parameter: str | None, schema: Any) -> ArgumentsError:
    """`ArgumentsError(reason, pointer=..., ...)`, made without the keyword call (an invalid call's hot path).

    ``args`` is ``(reason,)``, set by ``BaseException.__new__``, as the constructor sets it.
    """
    error = _new_exception(ArgumentsError, reason)
    error.__dict__ = {
        "tool": None,
        "parameter": parameter,
        "pointer": pointer,
        "keyword": keyword,
        "reason": reason,
        "schema": schema,
    }
    return error


def together(first: ArgumentsError, more: Sequence[ArgumentsError]) -> ArgumentsError:
    """``first``, listing ``more`` after the problems it lists already: at most `MAX_LISTED`, the rest counted."""
    if not more:
        return first
    listed = [*first.errors, *more]
    shown = tuple(listed[:MAX_LISTED])
    first.attach(shown, first.unlisted + len(listed) - len(shown))
    return first


def failure_like(fields: dict[str, Any], reason: str) -> ArgumentsError:
    """`schema_failure` with another's fields (its ``__dict__``, kept) and ``reason``: a copy costs less than a dict."""
    error = _new_exception(ArgumentsError, reason)
    error.__dict__ = own = fields.copy()
    own["reason"] = reason
    return error


_new_exception = ArgumentsError.__new__

_T = TypeVar("_T")
_E = TypeVar("_E", bound=BaseException)


def kept(error: _E) -> _E:
    """An exception caught to be kept (returned, stored), cut from the frames it was raised through.

    A kept exception's traceback and context would hold those frames, and a frame holding the
    exception makes a reference cycle: one per bad call, waiting for the garbage collector.
    """
    error.__traceback__ = None
    error.__context__ = None
    return error


def unless_failed(result: _T | ArgumentsError) -> _T:
    """``result``, or raise it when it is the `ArgumentsError` a non-raising check returned.

    Pass the check's return value straight in, not a variable of the caller's: the raised
    error's traceback holds the frames it passes, and a frame whose local names the error
    would make a reference cycle on every bad call.
    """
    if not isinstance(result, ArgumentsError):
        return result
    try:
        raise result
    finally:
        result = None  # type: ignore[assignment]  # this frame holds no cycle either


class ToolNotFound(CallError, LookupError):
    """A call named a tool that is not in the toolbox.

    Attributes:
        name: The requested name.
        available: The names that were available.
        suggestion: The available name the requested one is a near miss of, or None.
    """

    def __init__(self, name: str, available: list[str], suggestion: str | None = None):
        self.name = name
        self.available = available
        self.suggestion = suggestion
        super().__init__(name)

    def __str__(self) -> str:
        listed = ", ".join(self.available) if self.available else "(none)"
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion is not None else ""
        return f"unknown tool {shorten(self.name)!r}{hint}; available tools: {listed}"


class ToolError(TinyToolsError):
    """Raised by a tool to tell the model something; its message is kept in the result.

    Attributes:
        message: The text the model sees.
        code: A short machine-readable code, ``"tool_error"`` unless the tool says otherwise.
    """

    def __init__(self, message: str, *, code: str = "tool_error"):
        self.message = message
        self.code = code
        super().__init__(message)


class RetryableError(ToolError):
    """Raised by an idempotent tool to ask for another attempt, with backoff.

    When no attempt is left (or the tool is not idempotent) its message reaches the model
    like any `ToolError`'s.
    """


class NeedsInput(TinyToolsError):
    """Raised by a tool that cannot go on without an answer from the user.

    The call ends its turn ``pending`` (kind ``input``) with ``message`` and the answer's JSON
    ``schema``; `Dispatcher.resume` validates the answer and runs the tool again, which reads
    the answers so far through an injected `Ask`. A tool should ask before it acts: what it did
    before asking, it does again.

    Attributes:
        message: What the user is asked.
        schema: The JSON Schema the answer must match (any JSON value when None).
        ttl: Seconds the question may wait (by default the dispatcher's ``pending_ttl``).
        state: Text the tool keeps with the question, shown to no one: the run of the tool that
            the answer resumes reads it as `Ask.state` (such as a remote server's request state).
        name: What the tool calls the question (`PendingRequest.name`), such as ``"user_name"``.
    """

    def __init__(
        self,
        message: str,
        schema: dict[str, Any] | None = None,
        *,
        ttl: float | None = None,
        state: str | None = None,
        name: str | None = None,
    ):
        self.message = message
        self.schema = schema
        self.ttl = ttl
        self.state = state
        self.name = name
        super().__init__(message)


class WaitsElsewhere(TinyToolsError):
    """Raised by a tool whose call went on outside this dispatcher, such as a remote server's pending call.

    The call ends its turn ``pending`` (kind ``external``) with ``message``: the application
    learns the outcome where the call went on and finishes it with `Dispatcher.resume` and the
    output (checked against the tool's output schema), or with ``error=``.

    Attributes:
        message: What the call waits for, as the other side said it.
        ttl: Seconds it may wait (by default the dispatcher's ``pending_ttl``).
    """

    def __init__(self, message: str, *, ttl: float | None = None):
        self.message = message
        self.ttl = ttl
        super().__init__(message)


class PendingError(TinyToolsError):
    """A pending call cannot be resumed as asked (the call stays as it was).

    Its handle fails verification or is unknown to the journal, or the answer does not match
    the requested schema.

    Attributes:
        code: ``bad_handle``, ``unknown_handle`` or ``invalid_answer``.
        pointer: For an invalid answer, the JSON pointer of the failing value.
    """

    def __init__(self, message: str, *, code: str, pointer: str | None = None):
        self.code = code
        self.pointer = pointer
        super().__init__(message)


class JournalError(TinyToolsError, RuntimeError):
    """The journal cannot be used: unreachable, another program's tables, another format, or a corrupt entry."""


class CancelledCall(TinyToolsError):
    """Raised by `CancellationToken.raise_if_cancelled` inside a tool that stops early."""


class ToolDefinitionWarning(UserWarning):
    """A tool was defined, but the model will read less about it than the application may think.

    For example: it has no description at all, or a parameter's default cannot be shown as JSON.
    """


publish(
    "tinytools",
    TinyToolsError,
    ToolDefinitionError,
    SchemaError,
    InjectionError,
    TransferError,
    ResultError,
    ArgumentsError,
    ToolNotFound,
    ToolError,
    RetryableError,
    NeedsInput,
    PendingError,
    JournalError,
    CancelledCall,
    WaitsElsewhere,
    ToolDefinitionWarning,
)
