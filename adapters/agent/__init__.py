"""The fault agent: a gRPC service next to a bookie or a ZooKeeper server that kills,
pauses, restarts (journal on or off), wipes and partitions it on request, and its client.

* :mod:`.config` - flags and TOML settings, validated (loopback by default, safe data dirs);
* :mod:`.supervisor` - the managed process (start, kill, pause, restart, wipe);
* :mod:`.firewall` - partitions with nft or iptables rules the agent owns;
* :mod:`.identity` - the cluster INSTANCEID fault calls must name;
* :mod:`.service`, :mod:`.server` - the gRPC servicer (token, fault gate, audit log), serving;
* :mod:`.client` - :class:`~adapters.agent.client.AgentClient`, typed, with deadlines;
* ``proto/`` - ``agent.proto`` and the code grpcio-tools generates from it.

Run it with ``python -m adapters.agent serve``; see docs/adapters/agent.md.
"""
