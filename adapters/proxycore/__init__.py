"""The one proxy core the three proxies share (issue 48): what a proxy between clients and a
server does whatever the protocol, written once.

``codec``: how a protocol's byte stream splits into frames (a value per protocol).
``records``: the record log (ids, deliveries, connections) and bounded waits on it.
``rules``: live rules (match, action, how many frames more), tried in order.
``pending``: a frame not sent yet, and a lane that keeps one direction in order behind a held one.
``connection``: one client connection and its upstream connection.
``server``: listening, accepting, connecting upstream, pumping frames, closing everything.

The protocols are ``adapters.netproxy`` (BookKeeper frames), ``adapters.zkproxy`` (ZooKeeper
client packets) and ``adapters.zkquorum`` (ZooKeeper quorum packets): each is this core, its
codec, and what only it does (forged answers, session expiry, links between servers).
"""
