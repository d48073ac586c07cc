"""Artifact stores: where outputs too large to inline, and files a tool produces, are kept.

Stores are content-addressed: the key is the hex SHA-256 of the bytes, so writing the same
bytes twice yields the same key and a stored artifact never changes. `FileArtifactStore`
writes atomically (a temporary file, then a rename) and only ever touches paths it derives
from a validated key under its root, so neither a key nor metadata can reach outside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Any, Protocol, runtime_checkable

import msgspec

from tinytools.results import ArtifactRef

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

    Nothing outside the root is ever written or read: every file is reached through the
    descriptor of its shard folder, opened without following a symbolic link, so a shard folder
    replaced by a link is refused rather than followed. Stored files are read-only, and a
    reference is checked against its key and its bytes when it is read back.

    Args:
        root: The directory; created if missing.
    """

    def __init__(self, root: str | os.PathLike[str]):
        from pathlib import Path  # imported here: pathlib is a cost `import tinytools` need not pay

        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` atomically; storing bytes that are already there changes nothing.

        Raises:
            OSError: The store cannot be written (full, read-only, a shard folder that is a link).
        """
        ref = _reference(bytes(data), media_type, metadata)
        shard = self._shard(ref.key, create=True)
        try:
            if not _exists(ref.key, shard):
                _write(shard, f"{ref.key}.json", msgspec.json.encode(ref))
                _write(shard, ref.key, bytes(data))
        finally:
            os.close(shard)
        return ref

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``, checked against it.

        Raises:
            KeyError: ``key`` is not a stored artifact's key (or not a key at all).
        """
        data = self._read(key, key)
        if _sha256(data) != key:
            raise KeyError(key)
        return data

    def ref(self, key: str) -> ArtifactRef:
        """The reference (with metadata) of a stored artifact, checked against its key and bytes.

        Raises:
            KeyError: Nothing is stored under ``key``, or what is stored does not match it.
        """
        try:
            ref = msgspec.json.decode(self._read(key, f"{key}.json"), type=ArtifactRef)
        except msgspec.DecodeError:  # ValidationError is one too
            raise KeyError(key) from None
        if ref.key != key or ref.sha256 != key or ref.size != len(self.get(key)):
            raise KeyError(key)
        return ref

    def _shard(self, key: str, *, create: bool = False) -> int:
        """The descriptor of ``key``'s shard folder, never through a link.

        Raises:
            KeyError: ``key`` is not a key, or (reading) its shard folder does not exist.
            OSError: The folder is a link, or cannot be made.
        """
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise KeyError(key)
        root = os.open(self.root, os.O_RDONLY | _DIRECTORY)
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(key[:2], 0o755, dir_fd=root)
            return os.open(key[:2], os.O_RDONLY | _DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
        except FileNotFoundError:
            raise KeyError(key) from None
        finally:
            os.close(root)

    def _read(self, key: str, name: str) -> bytes:
        shard = self._shard(key)
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=shard)
        except FileNotFoundError:
            raise KeyError(key) from None
        except OSError as exc:  # a link where a file belongs
            raise KeyError(key) from exc
        finally:
            os.close(shard)
        with os.fdopen(handle, "rb") as file:
            return file.read()


_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _exists(key: str, shard: int) -> bool:
    try:
        os.stat(key, dir_fd=shard, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write(shard: int, name: str, data: bytes) -> None:
    """Write ``name`` in the shard folder atomically (a temporary file, then a rename), read-only."""
    temporary = f".tmp-{os.urandom(8).hex()}"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444, dir_fd=shard)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, name, src_dir_fd=shard, dst_dir_fd=shard)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=shard)
        raise
