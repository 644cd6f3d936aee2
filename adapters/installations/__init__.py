"""Where the installations the suite runs come from: Java, ZooKeeper and BookKeeper.

This package is meant to become the one place that locates them. Today it holds BookKeeper:
:mod:`adapters.installations.bookkeeper` validates a ``BOOKKEEPER_HOME`` and installs a
BookKeeper version from Maven Central into a per-user cache. Java
(:mod:`adapters.cluster.java`) and ZooKeeper (:mod:`adapters.cluster.zookeeper`) are still
located where the local provider first needed them.

Nothing here is imported by ``adapters/__init__``: importing the package downloads nothing.
"""
