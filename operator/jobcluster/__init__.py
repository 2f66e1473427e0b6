"""jobcluster: PySpark pipelines deployed as per-job clusters, with Apache Flink's deployment architecture."""

__version__ = "0.1.0"
