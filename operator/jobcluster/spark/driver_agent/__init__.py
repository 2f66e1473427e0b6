"""jobcluster's agent inside the PySpark program's process: streaming queries' checkpoints, savepoints and progress.

``python -m jobcluster.spark.driver_agent PROGRAM ARGS`` runs PROGRAM as
``python PROGRAM ARGS`` would, with the agent installed first (see
:mod:`agent`). Importing this package imports neither PySpark nor the agent:
the JobMaster only needs :mod:`settings` and the gateway of :mod:`endpoint`.
"""
