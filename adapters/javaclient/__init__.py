"""The real BookKeeper Java client, driven from Python through py4j (issue 8).

Modules: ``errors`` (typed errors, BKException codes), ``distribution`` (a BookKeeper
distribution's version and classpath), ``gateway`` (the JVM: start, calls with deadlines, kill
by PID), ``client`` (``BookKeeper`` and ``LedgerHandle`` operations), ``jacoco_agent``,
``jacoco_exec``, ``jacoco_cli`` (JaCoCo's agent in the client's JVM, its execution data, its
CLI's report). See docs/adapters/javaclient.md.
"""

from adapters.javaclient.client import (
    BookKeeperJavaClient,
    ClientOptions,
    JavaDigestType,
    JavaLedger,
    JavaLedgerEntry,
)
from adapters.javaclient.distribution import (
    BookKeeperVersion,
    distribution_classpath,
    distribution_version,
)
from adapters.javaclient.errors import (
    BKError,
    BKLedgerClosed,
    BKLedgerFenced,
    BKNoSuchEntry,
    BKNoSuchLedger,
    BKNotEnoughBookies,
    DistributionError,
    JavaCallTimeout,
    JavaClientError,
    JavaException,
    JvmGone,
    JvmStartError,
)
from adapters.javaclient.gateway import JvmGateway, JvmOptions

__all__ = [
    "BKError",
    "BKLedgerClosed",
    "BKLedgerFenced",
    "BKNoSuchEntry",
    "BKNoSuchLedger",
    "BKNotEnoughBookies",
    "BookKeeperJavaClient",
    "BookKeeperVersion",
    "ClientOptions",
    "DistributionError",
    "JavaCallTimeout",
    "JavaClientError",
    "JavaDigestType",
    "JavaException",
    "JavaLedger",
    "JavaLedgerEntry",
    "JvmGateway",
    "JvmGone",
    "JvmOptions",
    "JvmStartError",
    "distribution_classpath",
    "distribution_version",
]
