"""The root of the conformance layer's errors: :class:`ConformanceError`, and the one rule that
decides whether anything is tried again: :func:`is_retriable`.

Every exception class defined under ``conformance/`` derives from :class:`ConformanceError`
(``tests/test_error_families.py`` checks), with one deliberate exception: the shard timeout
(:class:`conformance.distributed.shard.ShardTimeout`) is a ``BaseException`` and not an
``Exception``, so that the code it interrupts (Hypothesis, which catches the Exceptions raised
while it runs an example and shrinks them; a target's clean-up) lets it through at once.

A class that also subclasses a builtin does so for callers that know only the builtin: bad
input is also a ``ValueError`` (a plan or fault specification that cannot be read), a signal
to Hypothesis an ``AssertionError``.

Whether trying again could help is the error's own say, its ``retriable`` flag: a
:class:`~conformance.targets.base.TargetError` carries one per instance (set where an adapter's
error is turned into it), the other classes one per class. The shards retry on that flag alone
(docs/distributed.md, Retry; docs/architecture.md, Errors).
"""

from __future__ import annotations


class ConformanceError(Exception):
    """Root of every error raised by ``conformance``."""

    #: Whether the same thing could succeed if tried again. False unless a class (or, for a
    #: ``TargetError``, the place that raised it) says otherwise.
    retriable: bool = False


def is_retriable(exc: BaseException) -> bool:
    """Whether another attempt could help after ``exc``: its ``retriable`` flag. The errors of
    ``conformance`` and ``adapters`` carry one (and so does the shard timeout); anything else
    (a bug, bad input, an error of a library) has none and is not retriable."""
    return getattr(exc, "retriable", False) is True
