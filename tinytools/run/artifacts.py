"""Artifact stores: where outputs too large to inline, and files a tool produces, are kept.

Stores are content-addressed: the key is the hex SHA-256 of the bytes, so writing the same
bytes twice yields the same key and a stored artifact never changes. `FileArtifactStore`
writes atomically (a temporary file, then a rename) and only ever touches paths it derives
from a validated key under its root, so neither a key nor metadata can reach outside it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec

from tinytools.results import ArtifactRef

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ArtifactStore", "FileArtifactStore", "MemoryArtifactStore"]

_KEY = re.compile(r"[0-9a-f]{64}")


@runtime_checkable
class ArtifactStore(Protocol):
    """Keeps bytes and gives back a reference to them."""

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` and return its reference."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``; raises `KeyError` when there are none."""
        ...


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _reference(data: bytes, media_type: str, metadata: dict[str, Any] | None) -> ArtifactRef:
    digest = _sha256(data)
    return ArtifactRef(digest, len(data), media_type, digest, dict(metadata or {}))


class MemoryArtifactStore:
    """An artifact store in this process's memory (for tests and short runs)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._refs: dict[str, ArtifactRef] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` (again storing the same bytes changes nothing) and return its reference."""
        ref = _reference(bytes(data), media_type, metadata)
        with self._lock:
            self._data.setdefault(ref.key, bytes(data))
            self._refs.setdefault(ref.key, ref)
        return ref

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``.

        Raises:
            KeyError: Nothing is stored under ``key``.
        """
        with self._lock:
            return self._data[key]

    def __len__(self) -> int:
        return len(self._data)


class FileArtifactStore:
    """An artifact store in a directory: ``<root>/<key[:2]>/<key>`` plus a metadata file.

    Args:
        root: The directory; created if missing. Nothing outside it is ever written.
    """

    def __init__(self, root: str | os.PathLike[str]):
        from pathlib import Path  # imported here: pathlib is a cost `import tinytools` need not pay

        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise KeyError(key)
        return self.root / key[:2] / key

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` atomically; storing bytes that are already there changes nothing."""
        ref = _reference(bytes(data), media_type, metadata)
        path = self._path(ref.key)
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            self._write(path.with_suffix(".json"), msgspec.json.encode(ref))
            self._write(path, bytes(data))
        return ref

    def _write(self, path: Path, data: bytes) -> None:
        import tempfile

        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``, checked against it.

        Raises:
            KeyError: ``key`` is not a stored artifact's key (or not a key at all).
        """
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None
        if _sha256(data) != key:
            raise KeyError(key)
        return data

    def ref(self, key: str) -> ArtifactRef:
        """The reference (with metadata) of a stored artifact.

        Raises:
            KeyError: Nothing is stored under ``key``.
        """
        path = self._path(key).with_suffix(".json")
        try:
            return msgspec.json.decode(path.read_bytes(), type=ArtifactRef)
        except FileNotFoundError:
            raise KeyError(key) from None
