"""Generated protobuf classes for BookKeeper's v3 wire protocol (see ``generate.py``)."""
