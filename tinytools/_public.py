"""`publish`: names defined in an internal module report the public module they are imported from.

``help()``, documentation tools and ``repr`` of classes read ``__module__``; a class defined in
``tinytools._results`` but imported as ``tinytools.ToolResult`` says ``tinytools``, so nothing a
user reads points into an internal path (pickling finds it there too). A module publishes its
names once all of them are defined: a class's annotations are first read in the module that wrote
them (msgspec and ``typing`` would otherwise look them up in the public module's names).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

__all__ = ["publish"]


def publish(module: str, *objects: Any) -> None:
    """Give each class or function ``module`` as its ``__module__``, its annotations read where it was written."""
    for obj in objects:
        if isinstance(obj, type):
            _resolve_annotations(obj)
        obj.__module__ = module


def _resolve_annotations(cls: type) -> None:
    """Turn a class's annotations written as text (``from __future__ import annotations``) into the types they name."""
    written = inspect.get_annotations(cls)
    if not written or not any(isinstance(value, str) for value in written.values()):
        return
    namespace = {**vars(sys.modules[cls.__module__]), cls.__name__: cls}
    resolved = {name: eval(value, namespace) if isinstance(value, str) else value for name, value in written.items()}
    type.__setattr__(cls, "__annotations__", resolved)
