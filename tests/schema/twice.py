"""Load a module of definitions twice: as written, and with ``from __future__ import annotations``."""

from __future__ import annotations
import __future__

import importlib
import sys
import types
from pathlib import Path


def both(name: str) -> list[types.ModuleType]:
    """``name`` imported as written, and a copy of it compiled with postponed annotations.

    The copy is registered in ``sys.modules`` (as ``<name>_future``) so that its classes'
    annotations resolve against it, as they would in a module of the application's.
    """
    plain = importlib.import_module(name)
    future_name = f"{name}_future"
    if future_name not in sys.modules:
        path = Path(plain.__file__ or "")
        code = compile(
            path.read_text(), str(path), "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True
        )
        module = types.ModuleType(future_name)
        module.__file__ = str(path)
        sys.modules[future_name] = module
        exec(code, module.__dict__)
    return [plain, sys.modules[future_name]]
