"""The CI log's summary of where the test time went (tests/support/test_times.py)."""

from tests.support.test_times import seconds_by_file, summary

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.e2e.test_local_streaming" name="test_a" time="61.5"/>
<testcase classname="tests.e2e.test_local_streaming" name="test_b" time="30.0"/>
<testcase classname="tests.unit.test_rpc.TestFencing" name="test_c" time="0.25"/>
<testcase classname="tests.integration.hadoop.test_yarn_client" name="test_d" time="125"/>
</testsuite></testsuites>
"""


def test_time_is_summed_per_file_with_classes_folded_into_their_module(tmp_path):
    report = tmp_path / "others.xml"
    report.write_text(REPORT)

    assert seconds_by_file(report) == {
        "tests/e2e/test_local_streaming.py": 91.5,
        "tests/unit/test_rpc.py": 0.25,
        "tests/integration/hadoop/test_yarn_client.py": 125.0,
    }
    lines = summary(report, shown=2).splitlines()
    assert lines[0] == "others: 3m36s in 3 test files; the slowest:"
    assert [line.split()[1] for line in lines[1:]] == [
        "tests/integration/hadoop/test_yarn_client.py",
        "tests/e2e/test_local_streaming.py",
    ]
