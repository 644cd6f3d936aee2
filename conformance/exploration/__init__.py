"""The model explorer's runtime: what the pure explorers of ``model/search/`` leave to the
caller, because the model starts no process and writes no file.

- ``parallel_bfs``: the sharded breadth-first search run in forked worker processes;
- ``spill``: levels of a breadth-first search kept on disk past a size, as TLC keeps its queue;
- ``worker_processes``: ending those workers (and the portfolio's, ``conformance/search/``).
"""
