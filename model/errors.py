"""The root of the model layer's errors: :class:`ModelError`.

Every exception class defined under ``model/`` derives from it (``tests/test_error_families.py``
checks), so a caller catches whatever the model refused with one ``except ModelError``. The
builtin a class also subclasses says what kind of refusal it is to callers that only know the
builtins: a configuration the specification rules out is a ``ValueError``
(:class:`~model.bookkeeper.config.ConfigError`), a scripted step the model does not allow an
``AssertionError`` (:class:`~model.bookkeeper.scripted.ScriptError`).

The model is pure: nothing it raises is worth trying again, so its errors carry no
``retriable`` flag (the adapters' and conformance's do; docs/architecture.md, Errors).
"""

from __future__ import annotations


class ModelError(Exception):
    """Root of every error raised by ``model``."""
