from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import ArtifactStore, FileArtifactStore, MemoryArtifactStore


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ArtifactStore:
    return MemoryArtifactStore() if request.param == "memory" else FileArtifactStore(tmp_path / "store")


def test_content_addressed_and_immutable(store: ArtifactStore) -> None:
    ref = store.put(b"hello", "text/plain", {"a": 1})
    assert ref.key == ref.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert (ref.size, ref.media_type, ref.metadata) == (5, "text/plain", {"a": 1})
    again = store.put(b"hello", "text/plain", {"b": 2})
    assert again.key == ref.key
    assert store.get(ref.key) == b"hello"
    assert isinstance(store, ArtifactStore)


def test_missing_key_raises_key_error(store: ArtifactStore) -> None:
    with pytest.raises(KeyError):
        store.get("0" * 64)


@pytest.mark.parametrize(
    "key",
    ["../../etc/passwd", "/etc/passwd", "..", "", "A" * 64, "ab/" + "c" * 61, "a" * 63 + "\x00", "a" * 65],
)
def test_hostile_keys_are_refused(tmp_path: Path, key: str) -> None:
    store = FileArtifactStore(tmp_path / "store")
    store.put(b"x", "text/plain")
    with pytest.raises(KeyError):
        store.get(key)


def test_metadata_cannot_steer_paths(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = FileArtifactStore(root)
    ref = store.put(b"data", "../../../evil", {"key": "../../../evil", "path": "/tmp/evil"})
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert written == {Path("store") / ref.key[:2] / ref.key, Path("store") / ref.key[:2] / f"{ref.key}.json"}
    assert store.ref(ref.key) == ref


def test_corrupted_file_is_not_served(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    ref = store.put(b"original", "text/plain")
    (tmp_path / ref.key[:2] / ref.key).write_bytes(b"tampered")
    with pytest.raises(KeyError):
        store.get(ref.key)


def test_concurrent_writers(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    payloads = [bytes([n % 7]) * (1000 + n % 7) for n in range(64)]  # many duplicates
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            ref = store.put(data, "application/octet-stream")
            assert store.get(ref.key) == data
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not list(tmp_path.rglob(".tmp-*"))
    for data in set(payloads):
        assert store.get(hashlib.sha256(data).hexdigest()) == data


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=2000))
def test_get_returns_what_put_stored(data: bytes) -> None:
    store = MemoryArtifactStore()
    assert store.get(store.put(data, "application/octet-stream").key) == data
