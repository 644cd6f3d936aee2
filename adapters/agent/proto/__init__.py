"""Generated gRPC modules of the fault agent (see ``generate.py``)."""
