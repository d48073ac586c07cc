"""Artifact stores: where outputs too large to inline, and files a tool produces, are kept.

Stores are content-addressed: the key is the hex SHA-256 of the bytes, so writing the same
bytes twice yields the same key and a stored artifact never changes. The first ``put`` of some
bytes decides their media type and metadata; a later ``put`` of the same bytes stores nothing
and returns the reference kept, so a reference always describes what is stored. `FileArtifactStore`
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

from tinytools._public import publish
from tinytools._results import ArtifactRef

__all__ = ["ArtifactStore", "FileArtifactStore", "MemoryArtifactStore"]

_KEY = re.compile(r"[0-9a-f]{64}")


@runtime_checkable
class ArtifactStore(Protocol):
    """Keeps bytes and gives back a reference to them."""

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` and return the reference of what is stored.

        Bytes already stored keep the media type and metadata they were first stored with,
        and the reference returned says so.
        """
        ...

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``; raises `KeyError` when there are none."""
        ...


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _reference(data: bytes, media_type: str, metadata: dict[str, Any] | None) -> ArtifactRef:
    return ArtifactRef.of(data, media_type, metadata)


class MemoryArtifactStore:
    """An artifact store in this process's memory (for tests and short runs)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._refs: dict[str, ArtifactRef] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """Store ``data`` and return the reference of what is stored.

        Storing the same bytes again changes nothing: the reference returned is the one kept,
        with the media type and metadata of the first ``put``.
        """
        ref = _reference(bytes(data), media_type, metadata)
        with self._lock:
            self._data.setdefault(ref.key, bytes(data))
            return self._refs.setdefault(ref.key, ref)

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
        """Store ``data`` atomically and return the reference of what is stored.

        Storing bytes that are already there changes nothing: the reference returned is the one
        kept, with the media type and metadata of the first ``put`` (of writers racing to store
        the same bytes, the first to write its metadata).

        Raises:
            OSError: The store cannot be written (full, read-only, a shard folder that is a link),
                or the metadata it keeps for these bytes is corrupt.
        """
        ref = _reference(bytes(data), media_type, metadata)
        shard = self._shard(ref.key, create=True)
        try:
            if not _exists(ref.key, shard):
                _write(shard, f"{ref.key}.json", msgspec.json.encode(ref), replace=False)
                _write(shard, ref.key, bytes(data))
            return _kept(shard, ref)
        finally:
            os.close(shard)

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


def _kept(shard: int, ref: ArtifactRef) -> ArtifactRef:
    """The reference stored for the bytes ``ref`` describes (read from the shard folder).

    Raises:
        OSError: The metadata file is missing, is a link, or does not describe these bytes.
    """
    handle = os.open(f"{ref.key}.json", os.O_RDONLY | os.O_NOFOLLOW, dir_fd=shard)
    with os.fdopen(handle, "rb") as file:
        text = file.read()
    try:
        kept = msgspec.json.decode(text, type=ArtifactRef)
    except msgspec.DecodeError:
        kept = None
    if kept is None or (kept.key, kept.sha256, kept.size) != (ref.key, ref.sha256, ref.size):
        raise OSError(f"the metadata kept for artifact {ref.key} is corrupt")
    return kept


def _write(shard: int, name: str, data: bytes, *, replace: bool = True) -> None:
    """Write ``name`` in the shard folder atomically (a temporary file, then a rename), read-only.

    With ``replace=False`` a file already there stays as it is: the first writer wins.
    """
    temporary = f".tmp-{os.urandom(8).hex()}"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444, dir_fd=shard)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if replace:
            os.replace(temporary, name, src_dir_fd=shard, dst_dir_fd=shard)
        else:
            with contextlib.suppress(FileExistsError):  # another writer's stands
                os.link(temporary, name, src_dir_fd=shard, dst_dir_fd=shard, follow_symlinks=False)
            os.unlink(temporary, dir_fd=shard)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=shard)
        raise


publish("tinytools", ArtifactStore, MemoryArtifactStore, FileArtifactStore)
