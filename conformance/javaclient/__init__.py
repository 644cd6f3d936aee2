"""The real BookKeeper Java client as the model's recovering client (issue 8).

Modules: ``observed`` (the proxies' frame log as the client's events), ``story`` (those events
replayed as the model's steps; the frame check against the spec's client; the verdict),
``schedule`` (what the proxies do to which frame), ``scenario`` (the live run on a local
cluster from a BookKeeper distribution), ``search`` (Hypothesis over proxy schedules),
``command`` (``bkconform scenario defect1-java-client``). See docs/javaclient-scenario.md.

Nothing heavy is imported here: the scenario command loads the JVM adapter only when chosen.
"""

#: The scenario's name on the command line.
SCENARIO_NAME = "defect1-java-client"

__all__ = ["SCENARIO_NAME"]
