"""ZooKeeper's quorum traffic (the leader-follower port), decoded (issue 31). ``packets``: the
jute ``QuorumPacket``, its types and what their data holds, and one connection direction's
stream of frames (a raw snapshot after a SNAP included). The proxy that holds, drops and
reorders these packets between servers is the next increment (docs/zab.md)."""
