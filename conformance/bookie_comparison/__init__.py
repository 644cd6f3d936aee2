"""The reference bookie compared with real BookKeeper bookies: the search's corpus replayed on
both, every answer compared step by step (``tools/compare_bookies.py`` runs it;
docs/adapters/refbookie.md, docs/findings/reference-bookie-vs-4.18.0.md).

- ``answers``: what one replay answered, step by step, in words that compare across runs;
- ``differences``: the step-by-step comparison of two replays, and the grouping of differences;
- ``corpus``: the choice sequences to replay, built from the model alone (no cluster);
- ``replay``: a corpus replayed on one target of real or reference bookies;
- ``report``: the Markdown report;
- ``run``: the whole comparison, configuration by configuration, within a time budget.
"""
