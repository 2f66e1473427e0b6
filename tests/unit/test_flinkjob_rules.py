"""The CRD's CEL rules and the operator's own checks (resource.parse_spec, check_name) say the same thing.

The API server runs the rules (tests/integration/k8s/test_flinkjob_validation.py);
here each rule's words are held to the operator's, and the operator is shown to
refuse what each rule refuses, for FlinkJobs stored before the CRD had them.
"""

from pathlib import Path

import pytest
import yaml

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller import resource
from jobcluster.controller.resource import check_name, parse_spec

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"


def crd_rules() -> dict[str, list[dict]]:
    """The x-kubernetes-validations of the CRD's schema, by the dotted path of the schema that carries them."""
    (version,) = yaml.safe_load(CRD.read_text())["spec"]["versions"]
    found: dict[str, list[dict]] = {}

    def walk(schema: dict, path: str) -> None:
        if "x-kubernetes-validations" in schema:
            found[path] = schema["x-kubernetes-validations"]
        for name, child in schema.get("properties", {}).items():
            walk(child, f"{path}.{name}".lstrip("."))
        if "items" in schema:
            walk(schema["items"], f"{path}[]")

    walk(version["schema"]["openAPIV3Schema"], "")
    return found


def test_every_rule_of_the_crd_uses_the_operators_words():
    rules = crd_rules()
    messages = {path: [rule["message"] for rule in path_rules] for path, path_rules in rules.items()}
    assert messages == {
        "": [resource.NAME_LENGTH_RULE, resource.NAME_FORMAT_RULE],
        "spec": [resource.HADOOP_CONFIG_MAP_RULE],
        "spec.job": [resource.ONE_PROGRAM_RULE],
        "spec.job.program": [resource.PROGRAM_URI_RULE],
        "spec.job.pyFiles[]": [resource.PROGRAM_URI_RULE],
        "spec.job.jars[]": [resource.PROGRAM_URI_RULE],
    }
    for rule in rules[""]:  # the name's rules also say which name; their static message is the fallback
        assert rule["message"] in rule["messageExpression"]
    assert "<= 45" in rules[""][0]["rule"] and f"{resource.MAX_CLUSTER_ID_LENGTH} characters" in resource.NAME_LENGTH_RULE


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"job": {}}, resource.ONE_PROGRAM_RULE),
        ({"job": {"program": "local:///a.py", "source": "x"}}, resource.ONE_PROGRAM_RULE),
        ({"job": {"program": "/opt/app/a.py"}}, f"spec.job.program '/opt/app/a.py' {resource.PROGRAM_URI_RULE}"),
        (
            {"job": {"program": "local:///a.py", "pyFiles": ["s3://b/l.zip"]}},
            f"spec.job.pyFiles 's3://b/l.zip' {resource.PROGRAM_URI_RULE}",
        ),
        (
            {"job": {"program": "local:///a.py", "jars": ["local:///opt/k.jar", "/opt/kafka-clients.jar"]}},
            f"spec.job.jars '/opt/kafka-clients.jar' {resource.PROGRAM_URI_RULE}",
        ),
        ({"job": {"source": "x"}, "target": "yarn-per-job"}, resource.HADOOP_CONFIG_MAP_RULE),
        ({"job": {"source": "x"}, "target": "yarn-per-job", "hadoopConfigMap": ""}, resource.HADOOP_CONFIG_MAP_RULE),
    ],
)
def test_parse_spec_refuses_what_the_crd_refuses_in_its_words(spec, message):
    with pytest.raises(InvalidSpecError) as raised:
        parse_spec(spec)
    assert str(raised.value) == message


def test_a_hadoop_config_map_is_allowed_off_yarn():
    # a spec moved from YARN keeps it: the operator reads it to remove the job's YARN application
    assert parse_spec({"job": {"source": "x"}, "hadoopConfigMap": "hadoop-conf"}).hadoop_config_map == "hadoop-conf"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a" * 46, f"metadata.name '{'a' * 46}' is too long; {resource.NAME_LENGTH_RULE}"),
        ("1st-job", f"metadata.name '1st-job' is not a valid cluster id; {resource.NAME_FORMAT_RULE}"),
        ("etl.daily", f"metadata.name 'etl.daily' is not a valid cluster id; {resource.NAME_FORMAT_RULE}"),
    ],
)
def test_names_that_cannot_be_a_cluster_id_are_refused_in_the_crds_words(name, message):
    with pytest.raises(InvalidSpecError) as raised:
        check_name(name)
    assert str(raised.value) == message and raised.value.reason == "InvalidName"


def test_names_up_to_45_characters_are_cluster_ids():
    assert check_name("a" * 45) == "a" * 45
    assert check_name("wordcount-2") == "wordcount-2"
