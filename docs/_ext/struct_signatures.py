"""A griffe extension for the API reference: a msgspec Struct gets the constructor signature it has at run time.

griffe reads a Struct's fields as class attributes and shows no way to build one; msgspec makes
the ``__init__`` when the class is created, so the signature is read from the class itself.
"""

from __future__ import annotations

import inspect
from typing import Any

import griffe
import msgspec


class StructSignatures(griffe.Extension):
    """Give each msgspec Struct an ``__init__`` whose parameters are its fields, in order."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if "__init__" in cls.members:
            return
        try:
            runtime = griffe.dynamic_import(cls.path)
        except ImportError:
            return
        if not (isinstance(runtime, type) and issubclass(runtime, msgspec.Struct)):
            return
        parameters = [griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)]
        for parameter in inspect.signature(runtime).parameters.values():
            field = cls.members.get(parameter.name)
            default = None if parameter.default is inspect.Parameter.empty else repr(parameter.default)
            parameters.append(
                griffe.Parameter(
                    parameter.name,
                    annotation=getattr(field, "annotation", None),
                    kind=griffe.ParameterKind(parameter.kind.description),
                    default=default,
                )
            )
        init = griffe.Function("__init__", parameters=griffe.Parameters(*parameters), parent=cls)
        cls.set_member("__init__", init)
