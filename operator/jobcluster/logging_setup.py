"""One log format for every jobcluster process (entrypoint, TaskExecutors)."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s - %(message)s"


def configure_process_logging(level: int = logging.INFO) -> None:
    """Log to stderr, which the process's launcher sends to its log file."""
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def set_process_log_level(name: str) -> None:
    """The level of every logger of this process (``jobcluster.log.level``: ``DEBUG``, ``INFO``, ``WARNING`` or
    ``ERROR``), once its configuration is read; what was logged before keeps the default, INFO."""
    logging.getLogger().setLevel(logging.getLevelName(name))
