"""Every error of the Java-client adapter, under :class:`JavaClientError`.

BookKeeper's own exceptions come back as :class:`BKError` subclasses chosen by
``BKException.getCode()`` (the codes of ``org.apache.bookkeeper.client.api.BKException.Code``),
so callers write ``except BKLedgerFenced`` instead of parsing Java class names.
"""

from __future__ import annotations

from adapters.errors import AdapterError


class JavaClientError(AdapterError):
    """Root of the Java-client adapter's errors."""


class DistributionError(JavaClientError):
    """A BookKeeper distribution (or jar list) that cannot give a classpath or a version."""


class JvmStartError(JavaClientError):
    """The JVM did not start, or its py4j gateway did not answer in time."""


class JvmGone(JavaClientError):
    """The JVM is closed or died; the message says which and, if known, its exit code."""

    retriable = True


class JavaCallTimeout(JavaClientError, TimeoutError):
    """A call into the JVM did not return within its deadline (it may still run there)."""

    retriable = True


class JacocoError(JavaClientError):
    """JaCoCo could not give the client's execution data or its report: no agent in the JVM,
    unreadable exec data, unreadable class files, or the JaCoCo CLI failed."""


class JavaException(JavaClientError):
    """A Java exception that is not a BookKeeper ``BKException``."""

    def __init__(self, java_class: str, message: str, *, stack: str = "") -> None:
        super().__init__(f"{java_class}: {message}" if message else java_class)
        self.java_class = java_class
        self.java_message = message
        self.stack = stack


class BKError(JavaException):
    """A ``BKException`` from the real client; ``code`` is its ``getCode()``."""

    #: The ``BKException.Code`` this class stands for (None: the generic class).
    CODE: int | None = None

    def __init__(self, java_class: str, message: str, code: int, *, stack: str = "") -> None:
        super().__init__(java_class, message, stack=stack)
        self.code = code


class BKReadError(BKError):
    CODE = -1


class BKDigestMatch(BKError):
    CODE = -5


class BKNotEnoughBookies(BKError):
    CODE = -6


class BKNoSuchLedger(BKError):
    CODE = -7


class BKBookieHandleNotAvailable(BKError):
    CODE = -8


class BKZooKeeperError(BKError):
    CODE = -9


class BKLedgerRecovery(BKError):
    CODE = -10


class BKLedgerClosed(BKError):
    CODE = -11


class BKWriteError(BKError):
    CODE = -12


class BKNoSuchEntry(BKError):
    CODE = -13


class BKIncorrectParameter(BKError):
    CODE = -14


class BKMetadataVersion(BKError):
    CODE = -17


class BKClientClosed(BKError):
    CODE = -19


class BKAddEntryQuorumTimeout(BKError):
    CODE = -21


class BKTimeout(BKError):
    CODE = -23


class BKIllegalOp(BKError):
    CODE = -100


class BKLedgerFenced(BKError):
    CODE = -101


class BKUnauthorizedAccess(BKError):
    CODE = -102


class BKWriteOnReadOnlyBookie(BKError):
    CODE = -104


class BKTooManyRequests(BKError):
    CODE = -105


class BKUnexpectedCondition(BKError):
    CODE = -999


BK_ERRORS_BY_CODE: dict[int, type[BKError]] = {
    cls.CODE: cls for cls in BKError.__subclasses__() if cls.CODE is not None
}


def bk_error_for(code: int, java_class: str, message: str, *, stack: str = "") -> BKError:
    """The :class:`BKError` subclass for ``code`` (the generic class for codes not listed)."""
    return BK_ERRORS_BY_CODE.get(code, BKError)(java_class, message, code, stack=stack)


__all__ = [
    "BK_ERRORS_BY_CODE",
    "BKAddEntryQuorumTimeout",
    "BKBookieHandleNotAvailable",
    "BKClientClosed",
    "BKDigestMatch",
    "BKError",
    "BKIllegalOp",
    "BKIncorrectParameter",
    "BKLedgerClosed",
    "BKLedgerFenced",
    "BKLedgerRecovery",
    "BKMetadataVersion",
    "BKNoSuchEntry",
    "BKNoSuchLedger",
    "BKNotEnoughBookies",
    "BKReadError",
    "BKTimeout",
    "BKTooManyRequests",
    "BKUnauthorizedAccess",
    "BKUnexpectedCondition",
    "BKWriteError",
    "BKWriteOnReadOnlyBookie",
    "BKZooKeeperError",
    "DistributionError",
    "JacocoError",
    "JavaCallTimeout",
    "JavaClientError",
    "JavaException",
    "JvmGone",
    "JvmStartError",
    "bk_error_for",
]
