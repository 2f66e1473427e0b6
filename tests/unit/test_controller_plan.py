"""The operator's decisions without a cluster: spec checks, the deployment digest, plans, status and conditions."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_CLUSTER_ID,
    KUBERNETES_CONTAINER_IMAGE,
    KUBERNETES_JOB_MANAGER_OWNER_REFERENCE,
    KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_NAMESPACE,
    KUBERNETES_TASK_MANAGER_CPU,
)
from jobcluster.backends.kubernetes.jobmanager import build_ingress
from jobcluster.backends.kubernetes.parameters import job_manager_parameters
from jobcluster.backends.yarn.config_options import YARN_APPMASTER_VCORES, YARN_CONTAINERS_VCORES
from jobcluster.client.descriptor import JobResult
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.config import options
from jobcluster.controller.access_seal import AccessSeal
from jobcluster.controller.clusters import JobClusters, Observation
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle, conditions, timestamp
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.plan import needs_observation, plan
from jobcluster.controller.plan_types import DELETE_RESOURCE, DEPLOY, REMOVE, REMOVE_RESULT, Facts
from jobcluster.controller.programs import job_program
from jobcluster.controller.resource import deployed_spec_hash, parse_spec
from jobcluster.errors import IllegalConfigurationError

NOW = datetime.datetime(2026, 11, 24, 12, 0, 0, tzinfo=datetime.UTC)
SPEC = {"job": {"source": "print(1)", "parallelism": 2}}


def facts(status: dict, observation: Observation | None = None, desired: str = "running", **kw) -> Facts:
    values = {
        "generation": 3,
        "spec_hash": "h2",
        "desired": desired,
        "startup_deadline": 300.0,
        "active_deadline": None,
        "ttl": None,
        "delete_after_ttl": False,
        "status": status,
        "observation": observation,
        "now": NOW,
    }
    return Facts(**{**values, **kw})


def ago(seconds: float) -> str:
    return timestamp(NOW - datetime.timedelta(seconds=seconds))


# -- the spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"job": {"parallelism": 1}}, "exactly one of program"),
        ({"job": {"program": "local:///a.py", "source": "x"}}, "exactly one of program"),
        ({"job": {"program": "/opt/app/a.py"}}, "must be local:///path/in/image"),
        ({"job": {"program": "local:///a.py", "pyFiles": ["s3://b/lib.zip"]}}, "spec.job.pyFiles 's3://b/lib.zip'"),
        (
            {"job": {"program": "local:///a.py"}, "target": "yarn-per-job"},
            r"yarn-application \(or yarn-per-job\) needs spec.hadoopConfigMap",
        ),
        ({"job": {"program": "local:///a.py", "parallelism": 0}}, "spec.job.parallelism"),
        ({"job": {"program": "local:///a.py"}, "target": "mesos"}, "spec.target"),
    ],
)
def test_invalid_specs_say_what_to_fix(spec, message):
    with pytest.raises(InvalidSpecError, match=message):
        parse_spec(spec)


def test_the_deployment_digest_ignores_state_and_lifecycle_knobs_only():
    base = deployed_spec_hash(SPEC)
    assert deployed_spec_hash({"job": {**SPEC["job"], "state": "suspended"}, "ttlSecondsAfterFinished": 5}) == base
    assert deployed_spec_hash({**SPEC, "restartNonce": 1}) != base
    assert deployed_spec_hash({**SPEC, "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"}}) != base
    assert deployed_spec_hash({"job": {**SPEC["job"], "args": ["x"]}}) != base


# -- the configuration and the program


def test_configuration_layers_defaults_then_flink_configuration_then_fields_then_what_the_operator_owns(tmp_path):
    spec = parse_spec(
        {
            "job": {"program": "local:///opt/app/job.py", "parallelism": 4},
            "image": "registry.example.com/jobcluster:1",
            "flinkConfiguration": {
                "taskmanager.numberOfTaskSlots": "2",
                "kubernetes.namespace": "elsewhere",
                "jobmanager.memory.process.size": "2g",
            },
            "jobManager": {"resource": {"memory": "1800m", "cpu": 0.5}, "podTemplate": {"metadata": {"labels": {"a": "b"}}}},
        }
    )
    defaults = {"taskmanager.numberOfTaskSlots": "1", "kubernetes.taskmanager.cpu.amount": "0.5"}
    config = job_configuration(spec, "wordcount", "analytics", "uid-1", defaults, tmp_path)
    assert config.get(options.NUM_TASK_SLOTS) == 2  # flinkConfiguration over the defaults
    assert config.get(KUBERNETES_TASK_MANAGER_CPU) == 0.5  # a default nobody overrode
    assert config.get_raw(options.JOB_MANAGER_TOTAL_PROCESS_MEMORY.key) == "1800m"  # the typed field over flinkConfiguration
    assert config.get(KUBERNETES_NAMESPACE) == "analytics"  # the operator's, whatever flinkConfiguration says
    assert config.get(KUBERNETES_CLUSTER_ID) == "wordcount"
    assert config.get(options.PARALLELISM_DEFAULT) == 4
    assert config.get(options.EXECUTION_ATTACHED) is True
    assert config.get(KUBERNETES_CONTAINER_IMAGE) == "registry.example.com/jobcluster:1"
    assert "kind:FlinkJob,name:wordcount,uid:uid-1" in config.get(KUBERNETES_JOB_MANAGER_OWNER_REFERENCE)
    template = Path(config.get(KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE))
    assert template.parent == tmp_path and "a: b" in template.read_text()


@pytest.mark.parametrize(
    ("name", "flink", "message"),
    [
        ("Bad_Name", {}, "not a valid cluster id"),
        ("ok", {"taskmanager.memory.process.size": "300m"}, "exceed configured Total Process Memory"),
        ("ok", {"heartbeat.timeout": "soon"}, "heartbeat.timeout"),
    ],
)
def test_configurations_flink_would_refuse_are_refused(tmp_path, name, flink, message):
    spec = parse_spec({"job": {"program": "local:///a.py"}, "flinkConfiguration": flink})
    with pytest.raises(IllegalConfigurationError, match=message):
        job_configuration(spec, name, "ns", "uid", {}, tmp_path)


# -- the Ingress

INGRESS = {
    "template": "flink.example.com/{{namespace}}/{{name}}(/|$)(.*)",
    "className": "nginx",
    "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/$2", "example.com/note": "a:b"},
    "labels": {"team": "data"},
    "tls": [{"hosts": ["flink.example.com"], "secretName": "flink-tls"}],
}
#: The chart's ingress values as its ConfigMap writes them into the operator's default configuration.
CHART_INGRESS = {
    "jobcluster.kubernetes.ingress.template": "{{name}}.{{namespace}}.default.example.com",
    "jobcluster.kubernetes.ingress.class-name": "traefik",
    "jobcluster.kubernetes.ingress.annotations": "traefik.example.com/router:x",
    "jobcluster.kubernetes.ingress.tls": '[{"secretName": "default-tls"}]',
}


def ingress_of(spec: dict, defaults: dict, tmp_path: Path) -> dict | None:
    """The Ingress the descriptor would create for FlinkJob ``wc`` in ``ns``: spec → options → parameters → manifest."""
    config = job_configuration(parse_spec({"job": {"source": "x"}, **spec}), "wc", "ns", "uid-1", defaults, tmp_path)
    return build_ingress(job_manager_parameters(config, "0" * 32), None)


def test_spec_ingress_becomes_the_ingress_options_and_the_ingress(tmp_path):
    config = job_configuration(parse_spec({"job": {"source": "x"}, "ingress": INGRESS}), "wc", "ns", "uid-1", {}, tmp_path)
    assert {key: value for key, value in config.to_dict().items() if ".ingress." in key} == {
        "jobcluster.kubernetes.ingress.template": INGRESS["template"],
        "jobcluster.kubernetes.ingress.class-name": "nginx",
        "jobcluster.kubernetes.ingress.annotations": "nginx.ingress.kubernetes.io/rewrite-target:/$2,example.com/note:a:b",
        "jobcluster.kubernetes.ingress.labels": "team:data",
        "jobcluster.kubernetes.ingress.tls": '[{"hosts": ["flink.example.com"], "secretName": "flink-tls"}]',
    }
    ingress = ingress_of({"ingress": INGRESS}, {}, tmp_path)
    assert ingress["metadata"]["name"] == "wc" and ingress["metadata"]["annotations"] == INGRESS["annotations"]
    assert ingress["metadata"]["labels"]["team"] == "data" and ingress["metadata"]["labels"]["app"] == "wc"
    assert ingress["spec"] == {
        "ingressClassName": "nginx",
        "rules": [
            {
                "host": "flink.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/ns/wc(/|$)(.*)",
                            "pathType": "ImplementationSpecific",
                            "backend": {"service": {"name": "wc-rest", "port": {"number": 8081}}},
                        }
                    ]
                },
            }
        ],
        "tls": INGRESS["tls"],
    }


def test_the_charts_default_ingress_applies_to_a_flinkjob_without_one_and_its_own_replaces_it_whole(tmp_path):
    default = ingress_of({}, CHART_INGRESS, tmp_path)
    assert default["spec"]["ingressClassName"] == "traefik" and default["spec"]["rules"][0]["host"] == "wc.ns.default.example.com"
    assert default["spec"]["tls"] == [{"secretName": "default-tls"}]
    # a FlinkJob's own: none of the default's class, annotations or TLS mixes in, also not through flinkConfiguration
    own = ingress_of({"ingress": {"template": "/{{name}}"}, "flinkConfiguration": CHART_INGRESS}, CHART_INGRESS, tmp_path)
    assert own["spec"] == {
        "rules": [
            {
                "http": {
                    "paths": [
                        {
                            "path": "/wc",
                            "pathType": "ImplementationSpecific",
                            "backend": default["spec"]["rules"][0]["http"]["paths"][0]["backend"],
                        }
                    ]
                }
            }
        ]
    }
    assert "annotations" not in own["metadata"]
    assert ingress_of({}, {}, tmp_path) is None  # neither: no Ingress


def test_an_ingress_annotation_the_map_form_cannot_carry_is_refused_naming_it(tmp_path):
    spec = parse_spec(
        {"job": {"source": "x"}, "ingress": {"template": "/x", "annotations": {"a.example.com/allow": "10.0.0.0/8,10.1.0.0/16"}}}
    )
    with pytest.raises(InvalidSpecError, match=r"spec.ingress.annotations: 'a.example.com/allow: 10.0.0.0/8,10.1.0.0/16' holds a ','"):
        job_configuration(spec, "wc", "ns", "uid", {}, tmp_path)


def test_the_ingress_is_part_of_the_deployment_and_needs_a_template():
    assert deployed_spec_hash({**SPEC, "ingress": {"template": "/a"}}) != deployed_spec_hash(SPEC)
    assert deployed_spec_hash({**SPEC, "ingress": {"template": "/a"}}) != deployed_spec_hash({**SPEC, "ingress": {"template": "/b"}})
    with pytest.raises(InvalidSpecError, match=r"^spec.ingress.template: Field required"):
        parse_spec({**SPEC, "ingress": {"className": "nginx"}})


def test_programs_inline_fetched_and_in_the_image(tmp_path):
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return b"import lib\n"

    inline = job_program(parse_spec({"job": {"source": "print(42)\n", "args": ["a"]}}).job, "word-count", tmp_path)
    assert inline.script == tmp_path / "word_count.py" and inline.script.read_text() == "print(42)\n" and inline.args == ("a",)
    remote = parse_spec({"job": {"program": "https://example.com/jobs/etl.py", "pyFiles": ["local:///opt/lib.zip"]}}).job
    program = job_program(remote, "etl", tmp_path, fetch)
    assert fetched == ["https://example.com/jobs/etl.py"]
    assert program.script == tmp_path / "etl.py" and program.script.read_bytes() == b"import lib\n"
    assert program.provided == frozenset({Path("/opt/lib.zip")})


def test_a_flinkjobs_jars_are_fetched_or_kept_like_its_py_files(tmp_path):
    def fetch(url: str) -> bytes:
        return b"PK jar bytes"

    job = parse_spec(
        {"job": {"source": "print(1)\n", "jars": ["https://example.com/jars/connector.jar", "local:///opt/jars/kafka-clients.jar"]}}
    ).job
    program = job_program(job, "reads-kafka", tmp_path, fetch)
    assert program.jars == (tmp_path / "jars" / "connector.jar", Path("/opt/jars/kafka-clients.jar"))
    assert (tmp_path / "jars" / "connector.jar").read_bytes() == b"PK jar bytes"
    assert program.provided == frozenset({Path("/opt/jars/kafka-clients.jar")})


# -- plans


def test_a_new_resource_is_deployed_and_an_unchanged_ended_one_is_left_alone():
    assert plan(facts({})).actions == [DEPLOY]
    assert plan(facts({})).status["lifecycleState"] == Lifecycle.CREATED
    ended = {"deployedSpec": "h2", "lifecycleState": Lifecycle.FINISHED, "jobStatus": {"state": "FINISHED", "endTime": ago(10)}}
    assert not needs_observation(facts(ended))
    assert plan(facts(ended)).actions == []


def test_a_changed_spec_removes_the_running_cluster_first_then_deploys():
    running = {"deployedSpec": "h1", "lifecycleState": Lifecycle.STABLE}
    assert needs_observation(facts(running))
    first = plan(facts(running, Observation(exists=True)))
    assert (first.actions, first.status["lifecycleState"]) == ([REMOVE], Lifecycle.UPGRADING)
    second = plan(facts({**running, "lifecycleState": Lifecycle.UPGRADING}, Observation(exists=False)))
    assert (second.actions, second.status["lifecycleState"]) == ([DEPLOY], Lifecycle.UPGRADING)


def test_suspend_removes_the_cluster_once_and_resume_deploys_again():
    suspended = plan(facts({"deployedSpec": "h2", "lifecycleState": Lifecycle.STABLE}, desired="suspended"))
    assert suspended.actions == [REMOVE] and suspended.status["lifecycleState"] == Lifecycle.SUSPENDED
    assert suspended.status["jobStatus"]["state"] == "SUSPENDED" and suspended.status["deployedSpec"] == ""
    settled = {"deployedSpec": "", "lifecycleState": Lifecycle.SUSPENDED}
    assert not needs_observation(facts(settled, desired="suspended")) and plan(facts(settled, desired="suspended")).actions == []
    assert plan(facts(settled)).actions == [DEPLOY]


def test_suspending_an_ended_job_keeps_its_result_and_resuming_does_not_run_it_again():
    finished = {"deployedSpec": "h2", "lifecycleState": Lifecycle.FINISHED, "jobStatus": {"jobId": "j1", "state": "FINISHED"}}
    assert not needs_observation(facts(finished, desired="suspended"))
    assert plan(facts(finished, desired="suspended")).actions == [] and plan(facts(finished, desired="suspended")).status == {}
    assert plan(facts(finished)).actions == [], "resumed, the finished job stays finished"
    changed = {**finished, "deployedSpec": "h1"}  # suspended together with a change: the new spec runs on resume
    assert plan(facts(changed, desired="suspended")).status["lifecycleState"] == Lifecycle.SUSPENDED


def test_the_job_status_follows_the_cluster():
    deployed = {"deployedSpec": "h2", "lifecycleState": Lifecycle.DEPLOYED, "deployTime": ago(20), "jobStatus": {"jobId": "j1"}}
    details = {"jid": "j1", "name": "wc", "state": "RUNNING", "start-time": 1_700_000_000_000, "end-time": -1, "duration": 65_000}
    tms = [{"slotsNumber": 2, "memoryConfiguration": {"totalProcessMemory": 2560 << 20}}]
    decided = plan(facts(deployed, Observation(exists=True, rest_url="http://10.0.0.5:8081", job=details, task_managers=tms)))
    assert decided.status["lifecycleState"] == Lifecycle.STABLE
    assert decided.status["jobStatus"]["state"] == "RUNNING" and "duration" not in decided.status["jobStatus"], "it grows: not written"
    assert decided.status["jobStatus"]["updateTime"] == timestamp(NOW)
    assert decided.status["taskManagers"] == {"count": 1, "slotsPerTaskManager": 2, "processMemory": "2560Mi"}
    assert [e[1] for e in decided.events] == ["JobRunning"]
    failed = plan(
        facts(
            {**deployed, "lifecycleState": Lifecycle.STABLE},
            Observation(
                exists=True, job={**details, "state": "FAILED"}, failure_cause="Traceback ...\nZeroDivisionError: division by zero"
            ),
        )
    )
    assert failed.status["lifecycleState"] == Lifecycle.FAILED and failed.status["failureReason"] == "JobFailed"
    ended = {**details, "state": "FAILED", "end-time": 1_700_000_065_000}
    assert plan(facts(deployed, Observation(exists=True, job=ended))).status["jobStatus"]["duration"] == "1m5s"
    assert failed.events == [("Warning", "JobFailed", "job j1 FAILED: ZeroDivisionError: division by zero")]


def test_a_gone_cluster_is_judged_by_the_result_it_left_or_reported_lost():
    stable = {"deployedSpec": "h2", "lifecycleState": Lifecycle.STABLE, "jobStatus": {"jobId": "j1", "state": "RUNNING"}}
    record = JobResult("wc", "j1", "FINISHED", ago(5), "")
    finished = plan(facts(stable, Observation(exists=False, result=record)))
    assert finished.status["lifecycleState"] == Lifecycle.FINISHED and finished.status["jobStatus"]["endTime"] == ago(5)
    started = {**stable, "jobStatus": {**stable["jobStatus"], "startTime": ago(65)}}
    assert plan(facts(started, Observation(exists=False, result=record))).status["jobStatus"]["duration"] == "1m0s"
    lost = plan(facts(stable, Observation(exists=False)))
    assert lost.status["lifecycleState"] == Lifecycle.FAILED and lost.status["failureReason"] == "ClusterLost"
    assert lost.status["jobStatus"]["state"] == "FAILED"


@pytest.mark.parametrize("lifecycle", [Lifecycle.CREATED, Lifecycle.UPGRADING])
def test_a_deployment_the_operator_did_not_finish_is_adopted_if_its_cluster_exists_else_made_again(lifecycle):
    """The operator went away while it deployed (its status: the spec and deployTime written, no outcome)."""
    interrupted = {"deployedSpec": "h2", "lifecycleState": lifecycle, "deployTime": ago(30), "jobStatus": None, "clusterId": ""}
    assert needs_observation(facts(interrupted))
    details = {"jid": "j1", "name": "wc", "state": "RUNNING", "start-time": 1_700_000_000_000, "end-time": -1, "duration": 5_000}
    adopted = plan(facts(interrupted, Observation(exists=True, cluster_id="application_1_0001", job=details)))
    assert adopted.actions == [] and adopted.status["lifecycleState"] == Lifecycle.STABLE
    assert adopted.status["clusterId"] == "application_1_0001" and adopted.status["jobStatus"]["jobId"] == "j1"
    again = plan(facts(interrupted, Observation(exists=False)))
    assert again.actions == [DEPLOY] and again.status["lifecycleState"] == lifecycle
    assert [e[:2] for e in again.events] == [("Normal", "Redeploying")]
    # a result left before this deployment began is the previous run's: it does not end this one
    stale = plan(facts(interrupted, Observation(exists=False, result=JobResult("wc", "j0", "FINISHED", ago(60), ""))))
    assert stale.actions == [DEPLOY]
    # one left after it began is this run's: it ran and ended while no operator looked
    ran = plan(facts(interrupted, Observation(exists=False, result=JobResult("wc", "j1", "FINISHED", ago(5), ""))))
    assert ran.actions == [] and ran.status["lifecycleState"] == Lifecycle.FINISHED and ran.status["jobStatus"]["jobId"] == "j1"


def test_deadlines_fail_the_job_with_the_reason_and_remove_its_cluster():
    waiting = {
        "deployedSpec": "h2",
        "lifecycleState": Lifecycle.DEPLOYED,
        "deployTime": ago(400),
        "jobStatus": {"jobId": "j1", "state": "CREATED"},
    }
    pending = "TaskManager pod wc-taskmanager-1-1 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
    late = plan(facts(waiting, Observation(exists=True, pending=pending)))
    assert late.actions == [REMOVE] and late.status["failureReason"] == "StartupDeadlineExceeded"
    assert pending in late.status["error"]
    long_running = {
        **waiting,
        "lifecycleState": Lifecycle.STABLE,
        "jobStatus": {"jobId": "j1", "state": "RUNNING", "startTime": ago(100)},
    }
    over = plan(facts(long_running, Observation(exists=True), active_deadline=60.0))
    assert over.actions == [REMOVE] and over.status["failureReason"] == "ActiveDeadlineExceeded"
    assert plan(facts(long_running, Observation(exists=True), active_deadline=600.0)).actions == []
    # the job ends with its cluster: CANCELED when it ran too long, FAILED when it never ran; neither Running
    assert over.status["jobStatus"]["state"] == "CANCELED" and over.status["jobStatus"]["endTime"]
    assert late.status["jobStatus"]["state"] == "FAILED" and late.status["jobStatus"]["endTime"]


def test_the_startup_deadline_holds_until_the_job_first_runs_not_for_a_later_restart():
    deployed = {"deployedSpec": "h2", "lifecycleState": Lifecycle.DEPLOYED, "deployTime": ago(100), "jobStatus": {"jobId": "j1"}}
    running = plan(facts(deployed, Observation(exists=True, job={"jid": "j1", "state": "RUNNING"})))
    assert running.status["firstRunningTime"], "the first sight of RUNNING is recorded"
    restarting = {**deployed, **running.status, "deployTime": ago(400)}
    later = plan(facts(restarting, Observation(exists=True, job={"jid": "j1", "state": "RESTARTING"})))
    assert later.actions == [] and later.status["lifecycleState"] == Lifecycle.DEPLOYED, "a restart 400 s in is not a late start"
    never_ran = plan(facts({**deployed, "deployTime": ago(400)}, Observation(exists=True, job={"jid": "j1", "state": "CREATED"})))
    assert never_ran.status["failureReason"] == "StartupDeadlineExceeded"


def test_ttl_removes_what_is_left_once_and_optionally_the_resource():
    ended = {"deployedSpec": "h2", "lifecycleState": Lifecycle.FINISHED, "jobStatus": {"state": "FINISHED", "endTime": ago(120)}}
    assert plan(facts(ended, ttl=300.0)).actions == []
    assert plan(facts(ended, ttl=60.0)).actions == [REMOVE, REMOVE_RESULT]
    assert plan(facts(ended, ttl=60.0, delete_after_ttl=True)).actions == [REMOVE, REMOVE_RESULT, DELETE_RESOURCE]
    assert plan(facts({**ended, "ttlExpired": True}, ttl=60.0)).actions == []


def test_conditions_keep_their_transition_time_while_their_status_stays():
    first = conditions(Lifecycle.STABLE, "RUNNING", None, "", 2, [], NOW - datetime.timedelta(minutes=5))
    later = conditions(Lifecycle.FINISHED, "FINISHED", None, "", 2, first, NOW)
    by_type = {c["type"]: c for c in later}
    assert by_type["Ready"]["status"] == "True" and by_type["Ready"]["lastTransitionTime"] == ago(300)  # True before and after
    assert by_type["Running"]["status"] == "False" and by_type["Running"]["lastTransitionTime"] == timestamp(NOW)
    assert by_type["Succeeded"]["status"] == "True" and by_type["Succeeded"]["reason"] == "Finished"
    failed = {c["type"]: c for c in conditions(Lifecycle.FAILED, "FAILED", "JobFailed", "boom", 2, later, NOW)}
    assert (failed["Failed"]["status"], failed["Failed"]["reason"], failed["Failed"]["message"]) == ("True", "JobFailed", "boom")
    assert failed["Ready"]["status"] == "False" and failed["Ready"]["reason"] == "JobFailed"
    assert all(c["observedGeneration"] == 2 for c in failed.values())


def test_on_yarn_cpu_becomes_whole_vcores_and_the_hadoop_config_map_is_required(tmp_path):
    spec = parse_spec(
        {
            "job": {"program": "local:///a.py"},
            "target": "yarn-per-job",
            "hadoopConfigMap": "hadoop-conf",
            "jobManager": {"resource": {"cpu": 0.5}},
            "taskManager": {"resource": {"cpu": 1.5}},
        }
    )
    config = job_configuration(spec, "wc", "ns", "uid", {}, tmp_path)
    assert config.get(options.EXECUTION_TARGET) == "yarn-per-job"
    assert (config.get(YARN_APPMASTER_VCORES), config.get(YARN_CONTAINERS_VCORES)) == (1, 2)
    assert not config.contains(KUBERNETES_TASK_MANAGER_CPU)


def test_the_cluster_of_a_flinkjob_is_found_from_its_raw_spec_and_status():
    body = {
        "metadata": {"name": "wc", "namespace": "ns", "uid": "u1", "generation": 2},
        "spec": {"job": {"parallelism": -3}, "target": "yarn-per-job", "hadoopConfigMap": "hc"},
        "status": {"clusterId": "application_1_0002"},
    }
    ref = FlinkJobRef.of(body).cluster(AccessSeal())  # an invalid spec still says where a cluster of an older one may run
    assert ref == ClusterRef("yarn-per-job", "ns", "wc", "u1", "application_1_0002", "hc")
    assert FlinkJobRef.of({"metadata": {"name": "x"}}).cluster(AccessSeal()).target == "kubernetes-application"


def test_jobs_go_to_the_adapter_of_their_target():
    calls = []

    class Recording:
        def __init__(self, name):
            self.name = name

        def remove(self, ref):
            calls.append((self.name, ref.name))
            return True

    clusters = JobClusters({"kubernetes-application": Recording("k8s"), "yarn-application": Recording("yarn")})  # yarn-per-job too
    removed = [
        clusters.remove(ClusterRef(target, "ns", name, "u")) for target, name in (("yarn-per-job", "a"), ("kubernetes-application", "b"))
    ]
    assert calls == [("yarn", "a"), ("k8s", "b")] and removed == [True, True]
    # a target no adapter serves (a refused spec) has nothing deployed, and no adapter is asked
    assert clusters.remove(ClusterRef("mesos", "ns", "c", "u")) is False
    assert clusters.observe(ClusterRef("mesos", "ns", "c", "u"), None).exists is False
    assert calls == [("yarn", "a"), ("k8s", "b")]


def test_an_observed_cluster_id_goes_into_the_status():
    deployed = {"deployedSpec": "h2", "lifecycleState": Lifecycle.DEPLOYED, "deployTime": ago(20), "jobStatus": {"jobId": "j1"}}
    decided = plan(facts(deployed, Observation(exists=True, cluster_id="application_1_0003")))
    assert decided.status["clusterId"] == "application_1_0003" and decided.status["lifecycleState"] == Lifecycle.DEPLOYED


def test_a_job_that_ran_while_no_operator_looked_has_met_its_startup_deadline():
    """The operator was down while the job ran; it comes back to the job RESTARTING past startupDeadlineSeconds:
    the JobManager's own status timestamps (Flink's ``timestamps.RUNNING``) say it ran, so it is not failed."""
    deployed = {"deployedSpec": "h2", "lifecycleState": Lifecycle.DEPLOYED, "deployTime": ago(400), "jobStatus": {"jobId": "j1"}}
    ran_unseen = {"jid": "j1", "state": "RESTARTING", "timestamps": {"CREATED": 1_764_000_000_000, "RUNNING": 1_764_000_030_000}}
    back = plan(facts(deployed, Observation(exists=True, job=ran_unseen)))
    assert back.actions == [] and back.status["lifecycleState"] == Lifecycle.DEPLOYED
    assert back.status["firstRunningTime"] == "2025-11-24T16:00:30Z"
    never_ran = {**ran_unseen, "timestamps": {"CREATED": 1_764_000_000_000, "RUNNING": 0}}
    assert plan(facts(deployed, Observation(exists=True, job=never_ran))).status["failureReason"] == "StartupDeadlineExceeded"


def test_a_retry_removes_what_the_failed_attempt_left_before_it_deploys_again():
    """A deployment that failed transiently may leave a cluster (its teardown failed too; on YARN a kill that did not
    arrive): the retry removes it first, so a FlinkJob never has two clusters, nor fails with ClusterExists."""
    retry = {"spec": "h2", "attempts": 1, "firstAttemptTime": ago(60), "nextAttemptTime": ago(30)}
    status = {"lifecycleState": Lifecycle.CREATED, "deployedSpec": "", "deployRetry": retry}
    waiting = facts(status=status, observation=None, now=NOW - datetime.timedelta(seconds=60))
    assert not needs_observation(waiting), "not before the attempt is due"
    due = facts(status=status, observation=None)
    assert needs_observation(due)
    left = plan(facts(status=status, observation=Observation(exists=True, cluster_id="wc")))
    assert left.actions == [REMOVE] and left.events[0][1] == "LeftoverRemoved"
    assert plan(facts(status={**status, **left.status}, observation=Observation(exists=True))).events == [], "said once"
    assert plan(facts(status={**status, **left.status}, observation=Observation(exists=False))).actions == [DEPLOY]
