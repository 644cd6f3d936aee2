"""The kernel for searching a real system (issue 48): what every search of a live system
shares, written once.

- :mod:`.role`: :class:`~.role.LiveRole`, what a searched system is to the search (its plans
  and how they shrink, how one is carried out, how its run is judged);
- :mod:`.search`: the one search-and-shrink loop (generate-only Hypothesis, the stop rules,
  greedy shrinking on the live system, progress at least every 10 s);
- :mod:`.faults`: the one fault injector (:class:`~.faults.FaultInjector`), composed of one
  :class:`~.faults.FaultHandler` per fault kind, and :class:`~.faults.FaultEvent`, what it
  writes into a run's record for each fault it injected or healed.

The Java client's roles (:mod:`conformance.javaclient.search`) and the guided ZooKeeper search
(:mod:`conformance.zab.guided`) are values of :class:`~.role.LiveRole`; the Java client's
session faults and the Zab fault schedules are handler sets of the one injector.
"""
