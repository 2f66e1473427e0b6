"""One log format for every jobcluster process (entrypoint, TaskExecutors)."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s - %(message)s"


def configure_process_logging(level: int = logging.INFO) -> None:
    """Log to stderr, which the process's launcher sends to its log file."""
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
