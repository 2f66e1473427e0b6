"""The YARN client's bounded connection settings and the report predicates (no cluster)."""

from jobcluster.backends.yarn.submission import is_deployed
from jobcluster.backends.yarn.yarn_client import ApplicationReport, bounded_connect_settings


def test_an_unreachable_resourcemanager_is_given_up_within_the_connect_timeout():
    settings = bounded_connect_settings(30.0)
    max_wait = int(settings["yarn.resourcemanager.connect.max-wait.ms"])
    attempt = int(settings["ipc.client.connect.timeout"])
    # RMProxy stops retrying after max-wait; the last attempt may still take one IPC connect timeout.
    assert max_wait + attempt <= 30_000
    assert settings["ipc.client.connect.max.retries"] == "0"  # no retries inside each RMProxy attempt
    assert settings["ipc.client.connect.max.retries.on.timeouts"] == "0"
    assert 0 < int(settings["yarn.resourcemanager.connect.retry-interval.ms"]) <= 1000


def test_terminal_states():
    def report(state: str) -> ApplicationReport:
        return ApplicationReport("application_1_0001", "n", "jobcluster", "default", state, "UNDEFINED", "", "", -1, "")

    assert [s for s in ("NEW", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED") if report(s).is_terminal] == [
        "FINISHED",
        "FAILED",
        "KILLED",
    ]


def test_deployment_ends_at_running_or_an_early_finish():
    def report(state: str) -> ApplicationReport:
        return ApplicationReport("application_1_0001", "n", "jobcluster", "default", state, "UNDEFINED", "", "", -1, "")

    assert [s for s in ("NEW", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED") if is_deployed(report(s))] == [
        "RUNNING",
        "FINISHED",
    ]
