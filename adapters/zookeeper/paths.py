"""Where BookKeeper keeps things in ZooKeeper: ledger id <-> znode path, and the reserved names.

Ledger paths follow ``util/StringUtils.java`` (reference section 2.2):

* short hierarchical (legacy): ``"%010d"`` split 2-4-4 -> ``<root>/00/0000/L0001``;
* long hierarchical: ``"%019d"`` split 3-4-4-4-4 -> ``<root>/000/0000/0000/0000/L0001``;
* hybrid hierarchical (layout ``"hierarchical"``, BookKeeper's default): short below
  ``Integer.MAX_VALUE`` (2**31-1), long from there on;
* flat: ``<root>/L%010d``.

The *layout* names used across this adapter are the metadata service URI's ledger manager
names: ``"hierarchical"`` (hybrid paths), ``"longhierarchical"`` (long paths only) and ``"flat"``.
"""

from __future__ import annotations

import re

from adapters.zookeeper.errors import InvalidLedgerId, InvalidLedgerPath

LAYOUTS = ("hierarchical", "longhierarchical", "flat")
"""Ledger manager layouts this adapter reads and writes."""

DEFAULT_LEDGERS_ROOT = "/ledgers"
MAX_LEDGER_ID = 2**63 - 1
SHORT_LEDGER_ID_LIMIT = 2**31 - 1
"""``Integer.MAX_VALUE``: hybrid paths and ``idgen`` ids are short strictly below this."""
MAX_SHORT_PATH_LEDGER_ID = 10**10 - 1
"""Largest id the 10-digit short and flat encodings can hold."""

LEDGER_NODE_PREFIX = "L"
AVAILABLE_NODE = "available"
READONLY_NODE = "readonly"
COOKIES_NODE = "cookies"
LAYOUT_NODE = "LAYOUT"
INSTANCEID_NODE = "INSTANCEID"
UNDERREPLICATION_NODE = "underreplication"
IDGEN_NODE = "idgen"
LONG_IDGEN_NODE = "idgen-long"
IDGEN_PREFIX = "ID-"
HIGH_ORDER_BITS_PREFIX = "HOB-"

RESERVED_ZNODE_NAMES = frozenset(
    {
        AVAILABLE_NODE,
        COOKIES_NODE,
        LAYOUT_NODE,
        INSTANCEID_NODE,
        UNDERREPLICATION_NODE,
        IDGEN_NODE,
        LONG_IDGEN_NODE,
    }
)
"""Children of the ledgers root that are never ledgers (``AbstractZkLedgerManager.isSpecialZnode``);
names starting with ``ID-`` are reserved too (see :func:`is_reserved_znode`)."""

_ROOT = re.compile(r"(/[^/\x00-\x1f\x7f-\x9f]+)+")
_DIGITS = re.compile(r"[0-9]+")


def is_reserved_znode(name: str) -> bool:
    """True for a ledgers-root child BookKeeper treats as special rather than as a ledger."""
    return name in RESERVED_ZNODE_NAMES or name.startswith(IDGEN_PREFIX)


def check_ledgers_root(ledgers_root: str) -> str:
    """Return ``ledgers_root`` if it is an absolute znode path without a trailing ``/``.

    :raises InvalidLedgerPath: otherwise.
    """

    if not isinstance(ledgers_root, str) or not _ROOT.fullmatch(ledgers_root):
        raise InvalidLedgerPath(
            f"ledgers root must be an absolute znode path like '/ledgers', not {ledgers_root!r}"
        )
    if any(part in (".", "..") for part in ledgers_root.split("/")):
        raise InvalidLedgerPath(f"ledgers root must not contain '.' or '..': {ledgers_root!r}")
    return ledgers_root


def check_layout(layout: str) -> str:
    """Return ``layout`` if it is one of :data:`LAYOUTS`; raise ``InvalidLedgerPath`` otherwise."""

    if layout not in LAYOUTS:
        raise InvalidLedgerPath(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    return layout


def check_ledger_id(ledger_id: int) -> int:
    """Return ``ledger_id`` if it is an int in ``[0, 2**63-1]``; raise ``InvalidLedgerId``."""

    if isinstance(ledger_id, bool) or not isinstance(ledger_id, int):
        raise InvalidLedgerId(f"ledger id must be an int, not {type(ledger_id).__name__}")
    if not 0 <= ledger_id <= MAX_LEDGER_ID:
        raise InvalidLedgerId(f"ledger id {ledger_id} is outside [0, 2**63-1]")
    return ledger_id


def short_hierarchical_ledger_path(ledger_id: int, ledgers_root: str = DEFAULT_LEDGERS_ROOT) -> str:
    """``<root>/NN/NNNN/LNNNN`` from ``"%010d" % ledger_id``."""
    digits = _padded(ledger_id, 10)
    return f"{check_ledgers_root(ledgers_root)}/{digits[0:2]}/{digits[2:6]}/L{digits[6:10]}"


def long_hierarchical_ledger_path(ledger_id: int, ledgers_root: str = DEFAULT_LEDGERS_ROOT) -> str:
    """``<root>/NNN/NNNN/NNNN/NNNN/LNNNN`` from ``"%019d" % ledger_id``."""
    digits = _padded(ledger_id, 19)
    return (
        f"{check_ledgers_root(ledgers_root)}/{digits[0:3]}/{digits[3:7]}/{digits[7:11]}"
        f"/{digits[11:15]}/L{digits[15:19]}"
    )


def hybrid_hierarchical_ledger_path(
    ledger_id: int, ledgers_root: str = DEFAULT_LEDGERS_ROOT
) -> str:
    """Short path below 2**31-1, long path from there on (``HierarchicalLedgerManager``)."""
    if check_ledger_id(ledger_id) < SHORT_LEDGER_ID_LIMIT:
        return short_hierarchical_ledger_path(ledger_id, ledgers_root)
    return long_hierarchical_ledger_path(ledger_id, ledgers_root)


def flat_ledger_path(ledger_id: int, ledgers_root: str = DEFAULT_LEDGERS_ROOT) -> str:
    """``<root>/L%010d`` (``FlatLedgerManager``)."""
    return f"{check_ledgers_root(ledgers_root)}/L{_padded(ledger_id, 10)}"


def ledger_path(
    ledger_id: int, ledgers_root: str = DEFAULT_LEDGERS_ROOT, layout: str = "hierarchical"
) -> str:
    """The znode path BookKeeper uses for ``ledger_id`` under ``layout``."""
    if check_layout(layout) == "hierarchical":
        return hybrid_hierarchical_ledger_path(ledger_id, ledgers_root)
    if layout == "longhierarchical":
        return long_hierarchical_ledger_path(ledger_id, ledgers_root)
    return flat_ledger_path(ledger_id, ledgers_root)


def ledger_id_from_path(
    path: str, ledgers_root: str = DEFAULT_LEDGERS_ROOT, layout: str = "hierarchical"
) -> int:
    """The inverse of :func:`ledger_path`.

    Only canonical paths are accepted, i.e. ``ledger_path(result, ledgers_root, layout) == path``;
    a short-form path for an id >= 2**31-1 under ``"hierarchical"`` is rejected, for example.

    :raises InvalidLedgerPath: ``path`` is not the path of any ledger under ``layout``.
    """

    prefix = check_ledgers_root(ledgers_root) + "/"
    check_layout(layout)
    if not isinstance(path, str) or not path.startswith(prefix):
        raise InvalidLedgerPath(f"{path!r} is not under the ledgers root {ledgers_root!r}")
    parts = path[len(prefix) :].split("/")
    if not parts[-1].startswith(LEDGER_NODE_PREFIX):
        raise InvalidLedgerPath(f"{path!r}: a ledger znode name starts with 'L'")
    parts[-1] = parts[-1][len(LEDGER_NODE_PREFIX) :]
    if not all(_DIGITS.fullmatch(part) for part in parts):
        raise InvalidLedgerPath(f"{path!r}: ledger path components must be decimal digits")
    try:
        ledger_id = check_ledger_id(int("".join(parts)))
        canonical = ledger_path(ledger_id, ledgers_root, layout)
    except InvalidLedgerId as exc:
        raise InvalidLedgerPath(f"{path!r}: {exc}") from exc
    if canonical != path:
        raise InvalidLedgerPath(
            f"{path!r} is not the {layout} path of ledger {ledger_id} (that is {canonical!r})"
        )
    return ledger_id


def id_generator_prefix(
    ledgers_root: str = DEFAULT_LEDGERS_ROOT, layout: str = "hierarchical"
) -> str:
    """Prefix of the ``EPHEMERAL_SEQUENTIAL`` nodes that allocate short ledger ids.

    ``<root>/idgen/ID-`` for the hierarchical layouts; ``<root>/ID-`` for flat, whose factory
    passes no idgen znode name to ``ZkLedgerIdGenerator``.
    """
    root = check_ledgers_root(ledgers_root)
    if check_layout(layout) == "flat":
        return f"{root}/{IDGEN_PREFIX}"
    return f"{root}/{IDGEN_NODE}/{IDGEN_PREFIX}"


def long_id_generator_path(ledgers_root: str = DEFAULT_LEDGERS_ROOT) -> str:
    """``<root>/idgen-long``: its ``HOB-NNNNNNNNNN`` children allocate ids >= 2**31-1."""
    return f"{check_ledgers_root(ledgers_root)}/{LONG_IDGEN_NODE}"


def _padded(ledger_id: int, width: int) -> str:

    digits = f"{check_ledger_id(ledger_id):0{width}d}"
    if len(digits) > width:
        raise InvalidLedgerId(f"ledger id {ledger_id} does not fit the {width}-digit path encoding")
    return digits
