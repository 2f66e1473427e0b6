"""The FlinkJob operator: kopf handlers that run each FlinkJob as its own job cluster (see ``handlers.py``)."""
