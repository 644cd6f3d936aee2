"""ZooKeeper's quorum traffic (the leader-follower port), decoded and under our control (issue
31). ``packets``: the jute ``QuorumPacket``, its types and what their data holds, and one
connection direction's stream of frames (a raw snapshot after a SNAP included). ``proxy``: a
proxy on every learner's connection to every other server (``ZooKeeperEnsemble(...,
quorum_proxy=...)``) that logs, holds and drops packets by rule. See docs/zab.md.
"""
