"""An executable model of the Zab protocol specification (``protocol-spec/Zab.tla`` of
apache/zookeeper, seeds 002 and 003): its state, every action of its ``Next``, its ten
invariants, and switches for the three naive readings of the paper that model checking found
wrong (seed 003). Pure: no I/O, no clock, no ambient randomness."""
