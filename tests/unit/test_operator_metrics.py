"""The operator's FlinkJobs-by-state gauge: kept by counting transitions, it agrees with the states recorded."""

from __future__ import annotations

import random

from jobcluster.controller.metrics import LIFECYCLE_STATES, OperatorMetrics


def gauge(metrics: OperatorMetrics) -> dict[str, float | None]:
    sample = metrics.registry.get_sample_value
    return {state: sample("jobcluster_operator_flinkjobs", {"lifecycle_state": state}) for state in LIFECYCLE_STATES}


def test_the_flinkjobs_by_state_gauge_counts_each_flinkjob_once_in_its_last_state_whatever_the_order():
    metrics, rng = OperatorMetrics(), random.Random(7)
    assert set(gauge(metrics).values()) == {0.0}, "every state is shown from the start"
    states: dict[str, str] = {}
    for _ in range(2000):
        uid = f"u-{rng.randrange(50)}"
        lifecycle = rng.choice([*LIFECYCLE_STATES, None])
        metrics.job_state(uid, lifecycle)
        if lifecycle is None:
            states.pop(uid, None)
        else:
            states[uid] = lifecycle
    expected = {state: float(sum(1 for s in states.values() if s == state)) for state in LIFECYCLE_STATES}
    assert gauge(metrics) == expected
