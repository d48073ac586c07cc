"""Arguments the application wrote: an approver's edit, the call a before-middleware put in place.

They are read against the tool's canonical schema, the one the application works with: an
approver is shown the arguments with strict mode's nulls already restored, and edits those. A
before-middleware is shown the model's call as it came, so in strict mode it may write the strict
form back (``null`` for a value left out): arguments the canonical schema refuses but the strict
one takes are restored as the model's are. Whatever the canonical schema accepts, the strict form
means the same (`tinytools._schema.strict_mode`), so trying it second changes no result of the first.

Arguments that fail are the application's mistake, not the model's: its call was valid, so the
pipeline does not ask it to repair them (see `tinytools._run.pipeline`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinytools._errors import ArgumentsError, kept
from tinytools._run.plans import Read
from tinytools._schema.strict_json import decoded_arguments

if TYPE_CHECKING:
    from tinytools._run.call_state import CallState

__all__ = ["read_edit"]


def read_edit(state: CallState, *, strict_form: bool) -> Read | ArgumentsError:
    """Decode and validate the arguments of ``state.call``, written by the application (see the module).

    Args:
        state: The call, its arguments the application's.
        strict_form: Whether, in strict mode, arguments in the strict form are taken too (a
            middleware's, written from the model's call; not an approver's, written from restored ones).
    """
    plan = state.plan
    strict = plan.strict
    if strict is None:  # the schema the dispatcher enforces is the canonical one
        try:
            return plan.read(state.call)
        except ArgumentsError as exc:
            return kept(exc)  # kept, not raised: no frame of this call in it
    try:
        arguments = decoded_arguments(state.call)  # a dict is copied: the application keeps its own
    except ArgumentsError as exc:
        return kept(exc)
    problem = plan.tool.schema.check(arguments)
    if problem is None:
        return Read(None, arguments)
    if strict_form and strict.check(arguments) is None:
        return Read(None, strict.restore(arguments))
    return problem
