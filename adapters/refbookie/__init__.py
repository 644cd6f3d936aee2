"""The reference bookie: a TEST DOUBLE that speaks the bookie wire protocol (v3 and v2).

It is *not* BookKeeper. It reproduces the bookie behaviours documented in the protocol
reference and pinned by the golden captures (fencing, master keys, READ_LAC quirks, limbo), so
that CI can run conformance scenarios without a JVM. Nothing may depend on its quirks. See
``docs/adapters/refbookie.md``.
"""

from adapters.refbookie.config import BookieConfig, config_from_properties, load_config
from adapters.refbookie.errors import ConfigError, RefBookieError, StartupError
from adapters.refbookie.integrity import LedgerSummary, MetadataSource, StaticMetadata
from adapters.refbookie.server import BookieServer

__all__ = [
    "BookieConfig",
    "BookieServer",
    "ConfigError",
    "LedgerSummary",
    "MetadataSource",
    "RefBookieError",
    "StartupError",
    "StaticMetadata",
    "config_from_properties",
    "load_config",
]
