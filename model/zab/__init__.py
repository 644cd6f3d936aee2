"""The Zab properties (seed 002) and ZooKeeper's client guarantees as checkers over observed
histories: what the servers logged, who led which epoch, and what the clients saw."""
