"""How often a job cluster's JobManager may start: a bound on the Deployment's restarts, as YARN bounds attempts.

Why: the JobManager runs as a Deployment, which replaces a pod that is deleted,
evicted or lost with its node, and whose kubelet restarts a container that
exits or is OOM-killed, without end. Each new start runs the job again (a batch
job from its beginning, a streaming job from its checkpoints); one that fails
at every start would loop in CrashLoopBackOff for ever. YARN bounds its
ApplicationMaster the same way (Flink's ``yarn.application-attempts`` with
``yarn.application-attempt-failures-validity-interval``): at most ``limit``
starts within ``interval`` seconds, the first start included; older starts
no longer count, so a long streaming job survives node losses spread over time.

The start times live on the Deployment (annotation
``jobcluster.io/jobmanager-starts``, epoch seconds, JSON), beside the attempt
number: they outlive every pod. Pure functions, tested without a cluster.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_ATTEMPTS, KUBERNETES_JOB_MANAGER_ATTEMPTS_INTERVAL
from jobcluster.backends.kubernetes.labels import ANNOTATION_STARTS
from jobcluster.config.configuration import Configuration


@dataclass(frozen=True)
class JobManagerAttempts:
    """At most ``limit`` JobManager starts within ``interval`` seconds."""

    limit: int = int(KUBERNETES_JOB_MANAGER_ATTEMPTS.default)
    interval: float = float(KUBERNETES_JOB_MANAGER_ATTEMPTS_INTERVAL.default)


def job_manager_attempts(config: Configuration) -> JobManagerAttempts:
    """The bound of ``jobcluster.kubernetes.jobmanager.attempts`` and ``...attempts-interval``."""
    return JobManagerAttempts(config.get(KUBERNETES_JOB_MANAGER_ATTEMPTS), config.get(KUBERNETES_JOB_MANAGER_ATTEMPTS_INTERVAL))


def recorded_starts(deployment: Mapping[str, Any]) -> list[float]:
    """The start times the Deployment records (epoch seconds); none for a missing or garbled annotation."""
    text = ((deployment.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_STARTS)
    try:
        starts = json.loads(text) if text else []
    except ValueError:
        return []
    return [float(t) for t in starts if isinstance(t, int | float)] if isinstance(starts, list) else []


def admit_start(starts: list[float], now: float, bound: JobManagerAttempts) -> tuple[list[float], str | None]:
    """``(the starts to record, None)`` when a JobManager starting at ``now`` is within ``bound``; else
    ``(the counted starts, why not)``. Starts ``bound.interval`` seconds old or older no longer count."""
    recent = sorted(t for t in starts if now - t < bound.interval)
    if len(recent) < bound.limit:
        return [*recent, now], None
    first = now - recent[0]
    why = (
        f"the JobManager started {len(recent) + 1} times within {first:.0f} s, more than "
        f"{KUBERNETES_JOB_MANAGER_ATTEMPTS.key}={bound.limit} allows within "
        f"{KUBERNETES_JOB_MANAGER_ATTEMPTS_INTERVAL.key}={bound.interval:.0f} s: the job cluster is removed. "
        "Why the earlier ones ended: the cluster's events (kubectl get events) and the last JobManager's log"
    )
    return recent, why


def starts_annotation(starts: list[float]) -> dict[str, str]:
    """The annotation that records ``starts`` (whole seconds, enough for a bound of minutes)."""
    return {ANNOTATION_STARTS: json.dumps([round(t) for t in starts])}
