"""Handles: the signed names of pending calls, ``<entry key>.<step>.<signature>``.

A handle names one step of one journal entry, signed with the dispatcher's key (HMAC-SHA256), so
another process with the same key and journal can resume the call, and nobody without the key can
forge one. A handle whose entry moved on reads where the call is now.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from tinytools._errors import PendingError

__all__ = ["Handles", "signing_key"]


class Handles:
    """Makes and reads the handles of one dispatcher's pending calls."""

    __slots__ = ("secret",)

    def __init__(self, secret: bytes):
        self.secret = secret
        """The key that signs them (see `signing_key`)."""

    def handle(self, key: str, step: int) -> str:
        """The signed handle of an entry at one step."""
        body = f"{key}.{step}"
        return f"{body}.{self._sign(body)}"

    def _sign(self, body: str) -> str:
        digest = hmac.new(self.secret, body.encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(digest).decode()

    def read_handle(self, handle: object) -> tuple[str, int]:
        """The entry key and step a handle names.

        Raises:
            TypeError: ``handle`` is not text (a pending result's ``pending.handle``).
            PendingError: The handle is not one this dispatcher's key signed (``bad_handle``).
        """
        if not isinstance(handle, str):
            raise TypeError(f"handle must be a pending result's handle (text), not {type(handle).__name__}")
        parts = handle.rsplit(".", 2) if handle.isascii() else []  # every handle made here is ASCII
        if (
            len(parts) != 3
            or not parts[1].isdigit()
            or not hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}"), parts[2])
        ):
            raise PendingError("the handle is not one this dispatcher's signing key made", code="bad_handle")
        return parts[0], int(parts[1])


def signing_key(given: bytes | str | None) -> bytes:
    """The key that signs handles: the one given, or a random one of this dispatcher.

    Raises:
        TypeError: It is neither bytes nor text.
        ValueError: It is empty (every handle would be forgeable).
    """
    if given is None:
        return os.urandom(32)
    if not isinstance(given, (bytes, bytearray, str)):
        raise TypeError(f"signing_key must be bytes or text, not {type(given).__name__}")
    if not given:
        raise ValueError("signing_key must not be empty: anyone could forge a handle; pass a secret, or None")
    return given.encode() if isinstance(given, str) else bytes(given)
