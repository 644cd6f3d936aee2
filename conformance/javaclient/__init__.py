"""The real BookKeeper Java client in the model's roles: the recovering client (issue 8) and
the writer (issue 15), each one value of :class:`~.role.Role` (issue 28).

Modules: ``session`` (the cluster, proxies, routing and JVM of every role), ``controller``
(what the proxies do to each frame), ``observed`` (the proxies' frame log as the client's
events, and the spec's action each shows), ``model_replay`` (the judges' base and their
``Judgement``), ``role``/``roles`` (the abstraction and its values: ``recovery_role``,
``writer_role``, with their plans, stories and guidance), ``search`` (Hypothesis over a role's
plans, and shrinking), ``run`` (the run directory of a search or replay), ``scenario`` and
``schedule`` (``bkconform scenario defect1-java-client``), ``upgrades`` (the rolling upgrade
and downgrade scenarios). See docs/javaclient-search.md and
docs/javaclient-scenario.md.

Nothing heavy is imported here: the scenario command loads the JVM adapter only when chosen.
"""

#: The scenario's name on the command line.
SCENARIO_NAME = "defect1-java-client"
#: The upstream reports' scenarios and the hypotheses tried like them (:mod:`.reports`), named
#: here so that the command line knows them without loading the Java client's modules.
REPORT_SCENARIOS = (
    "bk-3005-java-client",
    "bk-4097-java-client",
    "bk-4651-java-client",
    "bk-4812-java-client",
    "fence-lost-on-restart-java-client",
    "fence-lost-after-checkpoint-java-client",
    "fence-lost-on-clean-restart-java-client",
    "throttle-stale-ensemble-java-client",
)

#: The rolling upgrade and downgrade of the bookies under the Java client (:mod:`.upgrades`).
UPGRADE_SCENARIOS = ("rolling-upgrade-java-client", "rolling-downgrade-java-client")

__all__ = ["REPORT_SCENARIOS", "SCENARIO_NAME", "UPGRADE_SCENARIOS"]
