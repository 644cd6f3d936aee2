"""Small helpers over the protobuf runtime shared by the encodings in this package."""

from __future__ import annotations

from google.protobuf.message import Message


def missing_required_fields(message: Message) -> list[str]:
    """Dotted names of unset ``required`` fields, nested messages included (empty: complete)."""
    if message.IsInitialized():
        return []
    # FindInitializationErrors is public protobuf API but absent from the type stubs.
    errors: list[str] = message.FindInitializationErrors()  # type: ignore[attr-defined]
    return errors
