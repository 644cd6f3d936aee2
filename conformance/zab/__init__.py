"""Zab conformance on a real ZooKeeper ensemble: generated client workloads and fault
schedules, the history they leave, and the checkers of ``model.zab`` over it."""
