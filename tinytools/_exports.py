"""The provider registry, and what an export's bytes are: a short hash of them, and what changed.

`PROVIDERS` names every provider adapter once: the name ``provider=`` takes (``Toolbox.fingerprint``,
``Toolbox.diff``, ``tinytools schema --provider``), the module that exports for it (imported only
when used: ``import tinytools`` loads no adapter), and whether it has a strict mode. A new
provider is its module and one line here.

A provider caches a prompt by its bytes, the tool declarations first. The same tools exported
twice give the same bytes in any process: every adapter builds its dicts in a fixed order, and
the schemas come from the signatures in parameter order. `sent` is those bytes (compact JSON, keys
in the order the adapter wrote them, as an SDK sends them); `fingerprint` a short hash of them;
`diff` which tools were added, removed or changed since an earlier export, and where.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from tinytools._public import publish

if TYPE_CHECKING:
    from tinytools._tool import Tool

__all__ = ["PROVIDERS", "ExportDiff", "Provider", "adapter", "diff", "export", "fingerprint", "sent"]


class Provider(NamedTuple):
    """One provider adapter, as the registry knows it."""

    module: str
    """The module whose ``export_tools`` writes this provider's declarations."""
    strict: bool = False
    """Whether ``export_tools(..., strict=True)`` renders OpenAI-style strict schemas."""


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("tinytools.providers.openai", strict=True),
    "openai_responses": Provider("tinytools.providers.openai_responses", strict=True),
    "anthropic": Provider("tinytools.providers.anthropic", strict=True),
    "gemini": Provider("tinytools.providers.gemini"),
    "mcp": Provider("tinytools.providers.mcp._wire"),
}
"""Every provider, by the name ``provider=`` takes."""


class ExportDiff(msgspec.Struct, frozen=True):
    """What changed between two exports of tool declarations."""

    added: list[str]
    """Tools in the new export only, in its order."""
    removed: list[str]
    """Tools in the old export only, in its order."""
    changed: dict[str, str]
    """Tools in both whose declaration differs, and the JSON pointer of the first difference."""
    moved: bool = False
    """Whether the tools both have come in another order (a cache miss too)."""

    @property
    def same(self) -> bool:
        """Whether the two exports are the same declarations, in the same order."""
        return not (self.added or self.removed or self.changed or self.moved)


def adapter(provider: str) -> ModuleType:
    """The module that exports for ``provider``, imported on first use.

    Raises:
        ValueError: ``provider`` is not one of `PROVIDERS`.
    """
    found = PROVIDERS.get(provider)
    if found is None:
        raise ValueError(f"provider is one of {', '.join(PROVIDERS)}, not {provider!r}")
    # its package first: importing a submodule takes the submodule's import lock before its
    # package's, the reverse of another thread importing the package (whose code imports the
    # submodule), and two first uses at once would deadlock
    importlib.import_module(found.module.rpartition(".")[0])
    return importlib.import_module(found.module)


def export(tools: Iterable[Tool[..., Any]], provider: str, **options: Any) -> Any:
    """The tools exported for ``provider`` with the adapter's ``options``.

    Raises:
        ValueError: ``provider`` is not one of `PROVIDERS`.
    """
    return adapter(provider).export_tools(tools, **options)


def sent(declarations: Any) -> bytes:
    """The bytes of declarations as a request carries them: compact JSON, keys in written order."""
    return json.dumps(declarations, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def fingerprint(tools: Iterable[Tool[..., Any]], provider: str = "openai", **options: Any) -> str:
    """A short, stable hash (16 hex digits of SHA-256) of the bytes the export sends.

    Equal in every process for the same tools and options; different when any byte differs.
    """
    import hashlib  # loaded by the first fingerprint, not by `import tinytools`

    return hashlib.sha256(sent(export(tools, provider, **options))).hexdigest()[:16]


def diff(tools: Iterable[Tool[..., Any]], previous: Any, provider: str = "openai", **options: Any) -> ExportDiff:
    """What changed from ``previous`` (an earlier export for ``provider``) to the export now."""
    old, new = _by_name(previous), _by_name(export(tools, provider, **options))
    changed = {name: _first_difference(old[name], new[name], "") for name in new if name in old}
    both_old = [name for name in old if name in new]
    both_new = [name for name in new if name in old]
    return ExportDiff(
        added=[name for name in new if name not in old],
        removed=[name for name in old if name not in new],
        changed={name: where for name, where in changed.items() if where is not None},
        moved=both_old != both_new,
    )


def _by_name(declarations: Any) -> dict[str, Any]:
    """Each declaration by its tool's name, for any provider's shape."""
    entries = declarations
    if isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], Mapping):
        inner = entries[0].get("functionDeclarations", entries[0].get("function_declarations"))
        if isinstance(inner, list):  # Gemini: one Tool holding every declaration
            entries = inner
    named: dict[str, Any] = {}
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, Mapping):
            continue
        function = entry.get("function")
        name = function.get("name") if isinstance(function, Mapping) else entry.get("name")
        named[name if isinstance(name, str) else f"#{position} ({entry.get('type', '?')})"] = entry
    return named


def _first_difference(old: Any, new: Any, pointer: str) -> str | None:
    """The JSON pointer of the first place two values differ (key order counts), or None."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        if list(old) != list(new):
            common = [key for key in old if key in new]
            if common != [key for key in new if key in old]:
                return pointer or "/"
            extra = next(key for key in (*old, *new) if (key in old) != (key in new))
            return f"{pointer}/{_escape(extra)}"
        for key in old:
            found = _first_difference(old[key], new[key], f"{pointer}/{_escape(key)}")
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            found = _first_difference(a, b, f"{pointer}/{index}")
            if found is not None:
                return found
        return None if len(old) == len(new) else f"{pointer}/{min(len(old), len(new))}"
    same = type(old) is type(new) and old == new
    return None if same else (pointer or "/")


def _escape(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


publish("tinytools.providers", ExportDiff, sent)
