"""Application reports from the ResourceManager's REST API (the shape a Hadoop 3.3 ResourceManager answers)."""

from jobcluster.backends.yarn.rm_rest import report_of

RUNNING = {
    "id": "application_1795510783832_0001",
    "user": "root",
    "name": "waits",
    "queue": "default",
    "state": "RUNNING",
    "finalStatus": "UNDEFINED",
    "trackingUrl": "http://localhost:56077/proxy/application_1795510783832_0001/",
    "diagnostics": "",
    "applicationType": "jobcluster",
    "applicationTags": "flinkjob-uid:abc,jobcluster-job-id:e0ce7a72642e4eaba51181c30335623f",
    "startedTime": 1795510847606,
    "finishedTime": 0,
    "amRPCAddress": "localhost:35729",
}


def test_a_running_application_names_its_rest_endpoint_and_tags():
    report = report_of(RUNNING)
    assert (report.application_id, report.state, report.final_status) == ("application_1795510783832_0001", "RUNNING", "UNDEFINED")
    assert (report.host, report.rpc_port) == ("localhost", 35729)
    assert report.tags == ("flinkjob-uid:abc", "jobcluster-job-id:e0ce7a72642e4eaba51181c30335623f")
    assert not report.is_terminal and report.finish_time == ""


def test_an_application_before_its_master_registered_or_after_it_ended():
    accepted = report_of({**RUNNING, "state": "ACCEPTED", "amRPCAddress": "N/A", "applicationTags": ""})
    assert accepted.rpc_port == -1 and accepted.tags == ()
    ended = report_of({**RUNNING, "state": "FINISHED", "finalStatus": "FAILED", "finishedTime": 1795510907606, "diagnostics": "boom"})
    assert ended.is_terminal and ended.finish_time == "2026-11-24T09:01:47Z" and ended.diagnostics == "boom"
