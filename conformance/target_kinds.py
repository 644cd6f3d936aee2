"""The kinds of target, in a module of their own: the pytest plugin names them when pytest
loads it, before any test asks for a target, and must not import the adapters then."""

from __future__ import annotations

#: Every kind of target, everywhere a target is chosen (CLI, pytest plugin, Spark shards).
TARGET_KINDS = ("model", "local", "docker", "external")
