"""Artifact stores: content-addressed and immutable, safe on disk, and failing one call only.

Both stores return what was put under its SHA-256 key; `FileArtifactStore` refuses hostile keys,
never lets metadata or a symlinked shard folder lead a write outside its root, and refuses
corrupt data and tampered or corrupt metadata. A store that fails to put an artifact (an
over-budget output moved aside, or an artifact a tool returned) fails only that call, with
``artifact_store_failed``; the other calls of its batch succeed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    ArtifactRef,
    ArtifactStore,
    Dispatcher,
    FileArtifactStore,
    MemoryArtifactStore,
    Toolbox,
    ToolCall,
    ToolOutput,
    tool,
)


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


def test_storing_bytes_again_returns_the_reference_kept(store: ArtifactStore) -> None:
    first = store.put(b"hello", "text/plain", {"call_id": "c1"})
    again = store.put(b"hello", "image/png", {"call_id": "c2"})
    assert again == first  # what is stored, not what the second call asked for
    assert (again.media_type, again.metadata) == ("text/plain", {"call_id": "c1"})
    if isinstance(store, FileArtifactStore):
        assert store.ref(first.key) == again


def test_writers_racing_to_store_the_same_bytes_all_get_the_one_reference_kept(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    start = threading.Barrier(16)
    refs: list[ArtifactRef] = []

    def write(number: int) -> None:
        start.wait()
        refs.append(store.put(b"same bytes", f"text/x-{number}", {"writer": number}))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(refs) == 16 and all(ref == store.ref(refs[0].key) for ref in refs)
    assert not list(tmp_path.rglob(".tmp-*"))


def test_storing_bytes_whose_kept_metadata_is_corrupt_raises(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path / "store")
    first = store.put(b"hello", "text/plain")
    _replace(tmp_path / "store" / first.key[:2] / f"{first.key}.json", "{not json")
    with pytest.raises(OSError, match="corrupt"):
        store.put(b"hello", "text/plain")


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


# --- a failing artifact store ------------------------------------------------------------------


class FullStore:
    """An artifact store whose disk is full."""

    def put(self, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        raise OSError("disk full")

    def get(self, key: str) -> bytes:
        raise KeyError(key)


@tool
def big() -> str:
    """Return more than the inline budget."""
    return "x" * 1000


@tool
def attach() -> ToolOutput:
    """Return a small value and an artifact to store."""
    return ToolOutput("ok", artifacts=[(b"data", "text/plain")])


@tool
def small() -> int:
    """Return one."""
    return 1


STORE_TOOLS = Toolbox([big, attach, small])


@pytest.mark.parametrize("how", ["dispatch", "dispatch_many", "adispatch_many"])
@pytest.mark.parametrize("name", ["big", "attach"], ids=["over-budget", "tool-artifact"])
def test_a_failing_artifact_store_fails_only_that_call(name: str, how: str) -> None:
    dispatcher = Dispatcher(STORE_TOOLS, artifacts=FullStore(), max_inline_output_bytes=100)
    calls = [ToolCall("c1", name), ToolCall("c2", "small")]
    if how == "dispatch":
        results = [dispatcher.dispatch(calls[0])]
    elif how == "dispatch_many":
        results = dispatcher.dispatch_many(calls)
    else:
        results = asyncio.run(dispatcher.adispatch_many(calls))
    first = results[0]
    assert first.call_id == "c1"
    assert (first.status, first.error and first.error.code) == ("outcome_unknown", "artifact_store_failed")
    first.validate()
    if len(results) > 1:
        assert [(r.call_id, r.status, r.output) for r in results[1:]] == [("c2", "succeeded", 1)]


# --- FileArtifactStore: a symlinked shard folder, tampered metadata ---------------------------


def test_a_symlinked_shard_folder_cannot_lead_a_put_outside_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    data = b"payload"
    (root / hashlib.sha256(data).hexdigest()[:2]).symlink_to(outside, target_is_directory=True)
    store = FileArtifactStore(root)
    with contextlib.suppress(Exception):  # refusing is fine; writing outside is not
        store.put(data, "text/plain")
    assert list(outside.iterdir()) == []


def _replace(path: Path, text: str) -> None:
    """Put ``text`` at ``path`` whatever the file's mode (the folder is ours)."""
    path.parent.chmod(0o700)
    path.unlink()
    path.write_text(text)


@pytest.mark.parametrize("tampering", ["size", "key", "invalid-json", "not-an-object", "empty"])
def test_tampered_or_corrupt_metadata_is_refused(tmp_path: Path, tampering: str) -> None:
    store = FileArtifactStore(tmp_path / "store")
    first = store.put(b"hello", "text/plain", {"writer": "first"})
    again = store.put(b"hello", "image/png", {"writer": "second"})
    assert again.key == first.key
    # a second put leaves the first metadata as it was
    assert store.ref(first.key) == first
    meta = tmp_path / "store" / first.key[:2] / f"{first.key}.json"
    assert meta.is_file()
    stored = json.loads(meta.read_text())
    text = {
        "size": json.dumps({**stored, "size": 999}),
        "key": json.dumps({**stored, "key": "0" * 64}),
        "invalid-json": "{not json",
        "not-an-object": "[]",
        "empty": "",
    }[tampering]
    _replace(meta, text)
    with pytest.raises(KeyError):
        store.ref(first.key)
