"""Timestamps in the forms the API server expects.

Why: pod and node status, container states and conditions carry RFC 3339 times
to the second; a Lease's ``renewTime`` is a MicroTime and needs microseconds.
"""

from __future__ import annotations

import datetime as dt


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
