#!/bin/sh
# Without a mounted /conf/bk_server.conf, write one from BK_<key> variables (the convention of
# the apache/bookkeeper image), so a compose file can configure either image the same way.
# The suite always mounts its own (adapters/cluster/containers.py).
set -eu
CONF=${BOOKIE_CONF:-/conf/bk_server.conf}
if [ ! -f "$CONF" ]; then
    mkdir -p "$(dirname "$CONF")"
    : "${BK_journalDirectories:=/data/journal}"
    : "${BK_ledgerDirectories:=/data/ledgers}"
    export BK_journalDirectories BK_ledgerDirectories
    env | sed -n 's/^BK_\([A-Za-z0-9_.]*\)=\(.*\)$/\1=\2/p' > "$CONF"
fi
exec "$@"
