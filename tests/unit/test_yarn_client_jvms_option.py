"""``jobcluster.operator.yarn.client-jvms``: read from the operator's defaults, refused at its start when not a whole
number of at least 1 (tests/integration/hadoop/test_yarn_client_jvms.py bounds real JVMs with it)."""

import pytest

from jobcluster.backends.yarn.operator_hook import yarn_client_jvms
from jobcluster.client.operator_hook import InvalidSpecError
from tests.support.operator_start import start_operator


def test_the_default_bound_is_two():
    assert yarn_client_jvms({}).limit == 2
    assert yarn_client_jvms({"jobcluster.operator.yarn.client-jvms": "5"}).limit == 5


@pytest.mark.parametrize("value", ["0", "two"])
def test_a_bound_that_is_not_a_whole_number_of_at_least_one_stops_the_operator(value, tmp_path):
    with pytest.raises(InvalidSpecError, match=r"jobcluster\.operator\.yarn\.client-jvms"):
        yarn_client_jvms({"jobcluster.operator.yarn.client-jvms": value})
    started = start_operator(tmp_path, f"jobcluster.operator.yarn.client-jvms: '{value}'\n")
    assert started.returncode == 2, started.stderr
    assert "jobcluster.operator.yarn.client-jvms" in started.stderr and "--default-configuration" in started.stderr
