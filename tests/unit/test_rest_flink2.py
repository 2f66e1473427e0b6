"""Flink 2.3's paths (applications, a job's rescales) and the job's plan, checked against Flink's REST description.

Each test runs the real aiohttp endpoint in-process against the stand-in
dispatcher (tests/support/rest_standin.py) and checks a body's field names
and JSON types against the response schema of Flink's OpenAPI description
(``rest_v1_dispatcher.yml``, Flink 2.3-SNAPSHOT; and 1.20's for the plan),
reduced to what these tests read: ``data/flink-rest-2.3.json`` and
``data/flink-rest-1.20.json`` (every path and method; the responses checked
here and the schemas they use; where each comes from is in its ``_source``).
Where Flink's serializers write something else than the schema shows (an
ApplicationID is its hex string, not the object the spec derives from the
Java class), the wire's form is checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from jobcluster.jobgraph.job_status import JobStatus
from tests.support.rest_standin import JOB_ID, VERTEX_ID, StandInDispatcher
from tests.support.rest_standin import TOKEN as STANDIN_TOKEN
from tests.support.rest_standin import with_endpoint as _with_endpoint

TOKEN = {"Authorization": f"Bearer {STANDIN_TOKEN}"}
SPEC_DIR = Path(__file__).parent / "data"
#: Flink 2.3's ApplicationState names (org.apache.flink.api.common.ApplicationState): the spec types them as strings.
APPLICATION_STATES = {"CREATED", "RUNNING", "FAILING", "FAILED", "CANCELING", "CANCELED", "FINISHED"}
#: Schemas of AbstractIDs that Flink's serializers write as 32 hex digits, while the spec shows the Java object.
HEX_ID_SCHEMAS = {"ApplicationID", "RescaleUUID", "SlotSharingGroupId"}
OTHER_ID = "f" * 32


def _load(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((SPEC_DIR / name).read_text())
    return spec


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    """Flink 2.3-SNAPSHOT's description."""
    return _load("flink-rest-2.3.json")


@pytest.fixture(scope="module")
def spec_120() -> dict[str, Any]:
    return _load("flink-rest-1.20.json")


def response_schema(spec: dict[str, Any], path: str, method: str = "get") -> tuple[str, dict[str, Any]]:
    """The success status and the JSON schema of ``method path``'s response."""
    responses = spec["paths"][path][method]["responses"]
    (status,) = responses
    content = responses[status].get("content") or {"application/json": {"schema": {}}}
    return status, content["application/json"]["schema"]


def conforms(
    body: Any,
    schema: dict[str, Any],
    spec: dict[str, Any],
    where: str = "$",
    absent: frozenset[str] = frozenset(),
    nullable: frozenset[str] = frozenset(),
) -> None:
    """Assert that ``body`` has exactly the fields of ``schema`` (but those in ``absent``, which may be left out, as
    Flink's serializers leave out empty ones), each of its JSON type (null only for those in ``nullable``)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in HEX_ID_SCHEMAS:
            assert isinstance(body, str) and re.fullmatch(r"[0-9a-f]{32}", body), (where, body)
            return
        schema = spec["components"]["schemas"][name]
    if "enum" in schema:
        assert body in schema["enum"], (where, body, schema["enum"])
    if "pattern" in schema:
        assert isinstance(body, str) and re.fullmatch(schema["pattern"], body), (where, body)
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(body, dict), (where, body)
        properties = schema.get("properties")
        if properties is not None:
            assert set(body) <= set(properties), (where, set(body) - set(properties))
            assert set(properties) - set(body) <= absent, (where, set(properties) - set(body))
            for name, value in body.items():
                if value is None:
                    assert name in nullable, (f"{where}.{name}", "null")
                    continue
                conforms(value, properties[name], spec, f"{where}.{name}", absent, nullable)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, value in body.items():
                conforms(value, extra, spec, f"{where}.{name}", absent, nullable)
    elif kind == "array":
        assert isinstance(body, list), (where, body)
        for index, item in enumerate(body):
            conforms(item, schema["items"], spec, f"{where}[{index}]", absent, nullable)
    elif kind == "integer":
        assert type(body) is int, (where, body)
    elif kind == "number":
        assert type(body) in (int, float) or body == "NaN", (where, body)  # Flink's JSON writes a NaN double as "NaN"
    elif kind == "string":
        assert isinstance(body, str), (where, body)
    elif kind == "boolean":
        assert type(body) is bool, (where, body)


def test_the_checker_refuses_what_flinks_schema_does_not_allow(spec):
    _, schema = response_schema(spec, "/applications/overview")
    good = {"id": JOB_ID, "name": "n", "start-time": 1, "end-time": -1, "duration": 2, "status": "RUNNING", "jobs": {"RUNNING": 1}}
    conforms({"applications": [good]}, schema, spec)
    for bad in (
        good | {"start-time": "1"},  # a string for an integer
        good | {"jobs": {"RUNNING": True}},  # a boolean for an integer
        good | {"id": {"lowerPart": 1, "upperPart": 2}},  # the spec's object, not the wire's hex
        good | {"surplus": 1},  # a field Flink does not have
        {k: v for k, v in good.items() if k != "name"},  # a field left out
        good | {"name": None},  # a null where Flink always writes a value
    ):
        with pytest.raises(AssertionError):
            conforms({"applications": [bad]}, schema, spec)


def test_applications_overview_is_flinks_multiple_applications_details(spec):
    status, schema = response_schema(spec, "/applications/overview")

    def scenario(url, dispatcher):
        for prefix in ("", "/v1"):
            resp = requests.get(f"{url}{prefix}/applications/overview", timeout=5)
            assert resp.status_code == int(status)
            conforms(resp.json(), schema, spec)
        (app,) = requests.get(f"{url}/applications/overview", timeout=5).json()["applications"]
        # Flink's SingleJobApplication: the application's id is its job's, its name the job's in its own words.
        assert (app["id"], app["name"]) == (JOB_ID, "SingleJobApplication(wordcount)")
        assert (app["status"], app["jobs"]) == ("RUNNING", {"RUNNING": 1})
        assert (app["start-time"], app["end-time"], app["duration"]) == (1000, -1, 500)  # the stand-in's "now" is 1500
        dispatcher.finish(JobStatus.FINISHED, exit_code=0)
        body = requests.get(f"{url}/applications/overview", timeout=5).json()
        conforms(body, schema, spec)
        (app,) = body["applications"]
        assert (app["status"], app["jobs"], app["end-time"], app["duration"]) == ("FINISHED", {"FINISHED": 1}, 4000, 3000)

    _with_endpoint(scenario)


def test_no_application_before_the_job_is_there(spec):
    class NoJobYet(StandInDispatcher):
        def job_ids(self) -> list[str]:
            return []

    def scenario(url, dispatcher):
        assert requests.get(f"{url}/applications/overview", timeout=5).json() == {"applications": []}
        assert requests.get(f"{url}/applications/{JOB_ID}", timeout=5).status_code == 404

    _with_endpoint(scenario, NoJobYet())


def test_application_details_are_flinks_application_details_info(spec):
    status, schema = response_schema(spec, "/applications/{applicationid}")

    def scenario(url, dispatcher):
        resp = requests.get(f"{url}/v1/applications/{JOB_ID.upper()}", timeout=5)  # either case: the same id
        assert resp.status_code == int(status)
        details = resp.json()
        conforms(details, schema, spec)
        assert (details["id"], details["status"], details["start-time"], details["end-time"]) == (JOB_ID, "RUNNING", 1000, -1)
        assert set(details["timestamps"]) == APPLICATION_STATES
        assert details["timestamps"]["RUNNING"] == 1000 and details["timestamps"]["FINISHED"] == 0
        # its one job as /jobs/overview has it (Flink's JobDetails)
        assert details["jobs"] == requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"]
        for path, code in ((f"/applications/{OTHER_ID}", 404), ("/applications/not-an-id", 400), (f"/applications/{JOB_ID}0", 400)):
            refused = requests.get(url + path, timeout=5)
            assert refused.status_code == code, path
            assert isinstance(refused.json()["errors"][0], str)

    _with_endpoint(scenario)


@pytest.mark.parametrize(
    ("job_state", "application", "reached"),
    [
        ("INITIALIZING", "RUNNING", {"CREATED", "RUNNING"}),
        ("CREATED", "RUNNING", {"CREATED", "RUNNING"}),
        ("RESTARTING", "RUNNING", {"CREATED", "RUNNING"}),
        ("CANCELLING", "CANCELING", {"CREATED", "RUNNING", "CANCELING"}),
        ("CANCELED", "CANCELED", {"CREATED", "RUNNING", "CANCELING", "CANCELED"}),
        ("FAILED", "FAILED", {"CREATED", "RUNNING", "FAILING", "FAILED"}),
        ("FINISHED", "FINISHED", {"CREATED", "RUNNING", "FINISHED"}),
    ],
)
def test_the_applications_state_follows_its_jobs(spec, job_state, application, reached):
    _, schema = response_schema(spec, "/applications/{applicationid}")

    class Timed(StandInDispatcher):
        """Records when the job entered its state, as the JobMaster does (the terminal ones: the result's end time)."""

        def job_details(self, job_id: str) -> dict[str, Any]:
            details = super().job_details(job_id)
            details["timestamps"] |= {} if self.result else {self.state: 1400}
            return details

    dispatcher = Timed()
    if JobStatus(job_state).is_terminal:
        dispatcher.finish(JobStatus(job_state))
    else:
        dispatcher.state = job_state

    def scenario(url, dispatcher):
        details = requests.get(f"{url}/applications/{JOB_ID}", timeout=5).json()
        conforms(details, schema, spec)
        assert details["status"] == application
        assert {state for state, at in details["timestamps"].items() if at > 0} == reached
        if JobStatus(job_state).is_terminal:
            assert details["end-time"] == details["timestamps"][application] == 4000 and details["duration"] == 3000
        else:
            assert details["end-time"] == -1
        if application == "CANCELING":
            assert details["timestamps"]["CANCELING"] == 1400
        (entry,) = requests.get(f"{url}/applications/overview", timeout=5).json()["applications"]
        assert (entry["status"], entry["jobs"]) == (application, {job_state: 1})

    _with_endpoint(scenario, dispatcher)


def test_cancelling_the_application_cancels_its_job_with_the_token_only(spec):
    status, _ = response_schema(spec, "/applications/{applicationid}/cancel", "post")

    def scenario(url, dispatcher):
        path = f"{url}/applications/{JOB_ID}/cancel"
        for method in ("POST", "PUT"):  # PUT: what YARN's web proxy forwards
            refused = requests.request(method, path, timeout=5)
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert requests.post(path, headers={"Authorization": "Bearer wrong"}, timeout=5).status_code == 401
        assert dispatcher.cancelled == []
        assert requests.get(f"{url}/applications/{JOB_ID}", timeout=5).json()["status"] == "RUNNING"
        assert requests.post(f"{url}/applications/{OTHER_ID}/cancel", headers=TOKEN, timeout=5).status_code == 404
        assert requests.post(f"{url}/applications/nope/cancel", headers=TOKEN, timeout=5).status_code == 400
        assert dispatcher.cancelled == []
        done = requests.post(f"{url}/v1/applications/{JOB_ID}/cancel", headers=TOKEN, timeout=5)
        assert done.status_code == int(status) and done.json() == {}
        assert dispatcher.cancelled == [JOB_ID]
        assert requests.get(f"{url}/applications/{JOB_ID}", timeout=5).json()["status"] == "CANCELED"
        # Flink's: cancelling a cancelled application is accepted; the job is not asked again
        assert requests.put(f"{path}?token={STANDIN_TOKEN}", timeout=5).status_code == 202
        assert dispatcher.cancelled == [JOB_ID]

    _with_endpoint(scenario)


def test_an_application_that_ended_otherwise_is_not_cancelled():
    dispatcher = StandInDispatcher()
    dispatcher.finish(JobStatus.FINISHED, exit_code=0)

    def scenario(url, dispatcher):
        conflict = requests.post(f"{url}/applications/{JOB_ID}/cancel", headers=TOKEN, timeout=5)
        assert conflict.status_code == 409 and "FINISHED" in conflict.json()["errors"][0]
        assert dispatcher.cancelled == []

    _with_endpoint(scenario, dispatcher)


def test_application_exceptions_are_flinks_application_exceptions_info_with_history(spec):
    status, schema = response_schema(spec, "/applications/{applicationid}/exceptions")
    dispatcher = StandInDispatcher()
    dispatcher.failures = [{"timestamp": 1300, "cause": "the PySpark program exited with code 1"}]  # recovered from

    def scenario(url, dispatcher):
        path = f"{url}/applications/{JOB_ID}/exceptions"
        resp = requests.get(path, timeout=5)
        assert resp.status_code == int(status)
        conforms(resp.json(), schema, spec)
        assert resp.json() == {"exceptionHistory": {"entries": []}}  # the job recovered: the application did not fail
        cause = "the PySpark program exited with code 3\nTraceback (most recent call last):\nValueError: boom"
        dispatcher.failures.append({"timestamp": 3900, "cause": cause})
        dispatcher.finish(JobStatus.FAILED, cause, 3)
        body = requests.get(path, timeout=5).json()
        conforms(body, schema, spec)
        (entry,) = body["exceptionHistory"]["entries"]
        assert (entry["stacktrace"], entry["timestamp"], entry["jobId"]) == (cause, 3900, JOB_ID)
        assert (
            entry["exceptionName"]
            == requests.get(f"{url}/jobs/{JOB_ID}/exceptions", timeout=5).json()["exceptionHistory"]["entries"][0]["exceptionName"]
        )
        assert requests.get(f"{url}/applications/{OTHER_ID}/exceptions", timeout=5).status_code == 404

    _with_endpoint(scenario, dispatcher)


def test_application_jobmanager_config_is_the_clusters_configuration(spec):
    status, schema = response_schema(spec, "/applications/{applicationid}/jobmanager/config")
    configuration = {"taskmanager.numberOfTaskSlots": "2", "s3.secret-key": "hunter2"}

    def scenario(url, dispatcher):
        resp = requests.get(f"{url}/applications/{JOB_ID}/jobmanager/config", timeout=5)
        assert resp.status_code == int(status)
        entries = resp.json()
        conforms(entries, schema, spec)
        assert entries == requests.get(f"{url}/jobmanager/config", timeout=5).json()
        assert {"key": "s3.secret-key", "value": "******"} in entries and "hunter2" not in resp.text
        assert requests.get(f"{url}/applications/{OTHER_ID}/jobmanager/config", timeout=5).status_code == 404

    _with_endpoint(scenario, configuration=configuration)


def test_job_plan_is_flinks_job_plan_info_in_2_3_and_1_20(spec, spec_120):
    status, schema = response_schema(spec, "/jobs/{jobid}/plan")
    status_120, schema_120 = response_schema(spec_120, "/jobs/{jobid}/plan")

    class Named(StandInDispatcher):
        def job_details(self, job_id: str) -> dict[str, Any]:
            details = super().job_details(job_id)
            details["vertices"][0]["name"] = 'jobs/<wc>&"q".py'
            return details

    def scenario(url, dispatcher):
        resp = requests.get(f"{url}/v1/jobs/{JOB_ID}/plan", timeout=5)
        assert resp.status_code == int(status) == int(status_120)
        body = resp.json()
        conforms(body, schema, spec, absent=frozenset({"inputs"}))  # Flink leaves out a node's empty inputs
        conforms(body, schema_120, spec_120)
        plan = body["plan"]
        assert (plan["jid"], plan["name"], plan["type"]) == (JOB_ID, "wordcount", "BATCH")
        (node,) = plan["nodes"]
        assert (node["id"], node["parallelism"], node["operator"]) == (VERTEX_ID, 4, "PySpark program")
        assert "inputs" not in node  # the program reads from no other vertex
        assert node["description"] == "jobs/&lt;wc&gt;&amp;&quot;q&quot;.py"  # markup-safe, as Flink's plan generator writes it
        assert plan == requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()["plan"]
        assert requests.get(f"{url}/jobs/{OTHER_ID}/plan", timeout=5).status_code == 404
        assert requests.get(f"{url}/jobs/nope/plan", timeout=5).status_code == 400

    _with_endpoint(scenario, Named())


RESCALE_PATHS = ("config", "history", "overview", "summary", f"details/{'a' * 32}")
#: Fields of Flink 2.3's rescale schemas that its serializers leave out: 2.3.0 writes a vertex's rescale without
#: ``requiredParallelisms`` (a Flink 2.3.0 MiniCluster's answers, tests/unit/data/flink-rest-2.3.json's _source).
RESCALE_ABSENT = frozenset({"requiredParallelisms"})


def streaming(restore: dict[str, Any] | None = None) -> StandInDispatcher:
    """The stand-in's job as a streaming job (one query), restored as ``restore`` says (None: started afresh)."""
    dispatcher = StandInDispatcher()
    dispatcher.queries = [{"id": "q", "name": "wordcount", "committedBatchId": 7, "checkpoint": "file:/cp/wordcount", "history": []}]
    dispatcher.restore = restore
    return dispatcher


def test_a_batch_jobs_rescales_are_unknown_as_a_default_scheduler_jobs_are_in_flink():
    def scenario(url, dispatcher):
        assert requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()["schedulerType"] == "Default"
        assert requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"][0]["schedulerType"] == "Default"
        for path in RESCALE_PATHS:
            refused = requests.get(f"{url}/jobs/{JOB_ID}/rescales/{path}", timeout=5)
            assert refused.status_code == 404 and "Adaptive" in refused.json()["errors"][0], (path, refused.text)

    _with_endpoint(scenario)


@pytest.mark.parametrize(
    "restore",
    [None, {"path": "file:/sp/savepoint-012345-aaaaaaaaaaaa", "parallelism": 4, "restoredAt": 1300}],
    ids=["started afresh", "restored at its own parallelism"],
)
def test_a_streaming_job_not_restored_at_another_parallelism_has_no_rescale_in_flinks_shapes(spec, restore):
    config_status, config_schema = response_schema(spec, "/jobs/{jobid}/rescales/config")
    history_status, _ = response_schema(spec, "/jobs/{jobid}/rescales/history")
    _, overview_schema = response_schema(spec, "/jobs/{jobid}/rescales/overview")
    _, summary_schema = response_schema(spec, "/jobs/{jobid}/rescales/summary")
    properties = set(spec["components"]["schemas"]["JobRescaleConfigInfo"]["properties"])

    def scenario(url, dispatcher):
        # the one condition of Flink 2.3's dashboard's Rescales tab, with STREAMING
        details = requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()
        assert (details["job-type"], details["schedulerType"]) == ("STREAMING", "Adaptive")
        assert requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"][0]["schedulerType"] == "Adaptive"
        resp = requests.get(f"{url}/jobs/{JOB_ID}/rescales/config", timeout=5)
        assert resp.status_code == int(config_status)
        config = resp.json()
        # every field written; the adaptive scheduler's settings null (jobcluster's scheduler has none)
        conforms(config, config_schema, spec, nullable=frozenset(properties - {"rescaleHistoryMax"}))
        assert config["rescaleHistoryMax"] == 1 and config["schedulerExecutionMode"] is None
        history = requests.get(f"{url}/v1/jobs/{JOB_ID}/rescales/history", timeout=5)
        assert history.status_code == int(history_status) and history.json() == []
        overview = requests.get(f"{url}/jobs/{JOB_ID}/rescales/overview", timeout=5).json()
        conforms(overview, overview_schema, spec, nullable=frozenset({"completed", "failed", "ignored"}))
        # as a Flink 2.3.0 job of the adaptive scheduler with no rescale answers
        assert overview == {
            "rescalesCounts": {"ignored": 0, "inProgress": 0, "completed": 0, "failed": 0},
            "latest": {"completed": None, "failed": None, "ignored": None},
        }
        summary = requests.get(f"{url}/jobs/{JOB_ID}/rescales/summary", timeout=5).json()
        conforms(summary, summary_schema, spec)
        none = {"min": 0, "max": 0, "avg": 0, "p50": "NaN", "p90": "NaN", "p95": "NaN", "p99": "NaN", "p999": "NaN"}
        assert summary == {"rescalesCounts": overview["rescalesCounts"]} | {
            f"{kind}DurationStatsInMillis": none for kind in ("rescales", "completedRescales", "ignoredRescales", "failedRescales")
        }
        details = requests.get(f"{url}/jobs/{JOB_ID}/rescales/details/{'a' * 32}", timeout=5)
        assert details.status_code == 404 and "a" * 32 in details.json()["errors"][0]
        assert requests.get(f"{url}/jobs/{JOB_ID}/rescales/details/not-a-rescale", timeout=5).status_code == 400
        for path in RESCALE_PATHS:
            unknown = requests.get(f"{url}/jobs/{OTHER_ID}/rescales/{path}", timeout=5)
            assert unknown.status_code == 404 and isinstance(unknown.json()["errors"], list), path

    _with_endpoint(scenario, streaming(restore))


def test_a_restore_at_another_parallelism_is_the_jobs_one_rescale_its_initial_schedule(spec):
    _, history_schema = response_schema(spec, "/jobs/{jobid}/rescales/history")
    _, details_schema = response_schema(spec, "/jobs/{jobid}/rescales/details/{rescaleuuid}")
    _, overview_schema = response_schema(spec, "/jobs/{jobid}/rescales/overview")
    _, summary_schema = response_schema(spec, "/jobs/{jobid}/rescales/summary")
    # the savepoint was taken at parallelism 2; the stand-in's job runs with 4 (its start 1000, the restore read at 1300)
    restore = {"path": "file:/sp/savepoint-012345-aaaaaaaaaaaa", "parallelism": 2, "restoredAt": 1300}

    def scenario(url, dispatcher):
        (entry,) = requests.get(f"{url}/jobs/{JOB_ID}/rescales/history", timeout=5).json()
        conforms([entry], history_schema, spec)
        assert (entry["triggerCause"], entry["terminalState"], entry["terminatedReason"]) == ("INITIAL_SCHEDULE", "COMPLETED", "SUCCEEDED")
        assert (entry["startTimestampInMillis"], entry["endTimestampInMillis"], entry["rescaleAttemptId"]) == (1000, 1300, 1)
        assert (entry["vertices"], entry["slots"], entry["schedulerStates"]) == ({}, {}, []), "the history lists rescales brief"
        assert re.fullmatch("[0-9a-f]{32}", entry["rescaleUuid"]) and entry["rescaleUuid"] != entry["resourceRequirementsUuid"]

        resp = requests.get(f"{url}/jobs/{JOB_ID}/rescales/details/{entry['rescaleUuid'].upper()}", timeout=5)
        assert resp.status_code == 200
        full = resp.json()
        conforms(full, details_schema, spec, absent=RESCALE_ABSENT)
        assert full | {"vertices": {}, "slots": {}} == entry, "the history's entry is the details without vertices and slots"
        vertex = full["vertices"][VERTEX_ID]
        assert (vertex["jobVertexId"], vertex["jobVertexName"]) == (VERTEX_ID, "wordcount.py")
        assert (vertex["preRescaleParallelism"], vertex["postRescaleParallelism"], vertex["desiredParallelism"]) == (2, 4, 4)
        group = requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()["vertices"][0]["slotSharingGroupId"]
        assert vertex["slotSharingGroupId"] == group and (vertex["slotSharingGroupName"], list(full["slots"])) == ("default", [group])
        assert (full["slots"][group]["preRescaleSlots"], full["slots"][group]["postRescaleSlots"]) == (2, 4)

        overview = requests.get(f"{url}/jobs/{JOB_ID}/rescales/overview", timeout=5).json()
        conforms(overview, overview_schema, spec, nullable=frozenset({"failed", "ignored"}))
        assert overview["rescalesCounts"] == {"ignored": 0, "inProgress": 0, "completed": 1, "failed": 0}
        assert overview["latest"] == {"completed": entry, "failed": None, "ignored": None}
        summary = requests.get(f"{url}/jobs/{JOB_ID}/rescales/summary", timeout=5).json()
        conforms(summary, summary_schema, spec)
        took = {"min": 300, "max": 300, "avg": 300} | dict.fromkeys(("p50", "p90", "p95", "p99", "p999"), 300.0)
        assert summary["rescalesDurationStatsInMillis"] == summary["completedRescalesDurationStatsInMillis"] == took
        assert summary["failedRescalesDurationStatsInMillis"]["p50"] == "NaN"
        assert requests.get(f"{url}/jobs/{JOB_ID}/rescales/details/{'a' * 32}", timeout=5).status_code == 404

    _with_endpoint(scenario, streaming(restore))


def test_a_restore_from_a_savepoint_that_recorded_no_parallelism_is_no_rescale():
    """A savepoint of a jobcluster that did not record its parallelism: nothing to compare, so no rescale is claimed."""

    def scenario(url, dispatcher):
        assert requests.get(f"{url}/jobs/{JOB_ID}/rescales/history", timeout=5).json() == []

    _with_endpoint(scenario, streaming({"path": "file:/sp/old", "parallelism": None, "restoredAt": 1300}))


def test_the_job_names_its_application_as_flink_2_3_does():
    def scenario(url, dispatcher):
        details = requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()
        (application,) = requests.get(f"{url}/applications/overview", timeout=5).json()["applications"]
        assert details["application-id"] == application["id"] == JOB_ID

    _with_endpoint(scenario)


def test_every_new_path_is_in_flinks_description_of_its_version(spec, spec_120):
    """The paths this endpoint adds are Flink's: 2.3's all of them, and the plan 1.20's too."""
    added = [
        ("/applications/overview", "get"),
        ("/applications/{applicationid}", "get"),
        ("/applications/{applicationid}/cancel", "post"),
        ("/applications/{applicationid}/exceptions", "get"),
        ("/applications/{applicationid}/jobmanager/config", "get"),
        ("/jobs/{jobid}/plan", "get"),
        ("/jobs/{jobid}/rescales/config", "get"),
        ("/jobs/{jobid}/rescales/history", "get"),
        ("/jobs/{jobid}/rescales/overview", "get"),
        ("/jobs/{jobid}/rescales/summary", "get"),
        ("/jobs/{jobid}/rescales/details/{rescaleuuid}", "get"),
    ]
    for path, method in added:
        assert method in spec["paths"][path], path
    assert "get" in spec_120["paths"]["/jobs/{jobid}/plan"]
    assert not any(path.startswith(("/applications", "/jobs/{jobid}/rescales")) for path in spec_120["paths"])

    def scenario(url, dispatcher):
        for path, method in added:
            concrete = path.replace("{applicationid}", JOB_ID).replace("{jobid}", JOB_ID).replace("{rescaleuuid}", "b" * 32)
            resp = requests.request(method.upper(), url + concrete, headers=TOKEN, timeout=5)
            assert resp.status_code != 405 and resp.headers["Content-Type"].startswith("application/json"), path
            assert resp.status_code < 300 or path.endswith("{rescaleuuid}"), (path, resp.text)

    _with_endpoint(scenario, streaming())  # a streaming job: the rescale paths are a job of the adaptive scheduler's
