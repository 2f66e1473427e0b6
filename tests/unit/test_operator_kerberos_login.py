"""The operator's own Kerberos login (``--kerberos-principal``, ``--kerberos-keytab``; the chart's ``yarn.kerberos``):
what it refuses at its start, before it reaches any API server or KDC, naming its own flags. The login itself, against
the test KDC, is ``tests/integration/hadoop/test_kerberos_proxy_users.py``'s."""

from __future__ import annotations

from tests.support.operator_start import start_operator


def test_one_flag_without_the_other_is_a_usage_error(tmp_path):
    started = start_operator(tmp_path, "{}\n", "--kerberos-principal", "jobcluster/ops@EXAMPLE.COM")
    assert started.returncode == 2, started.stderr
    assert "a Kerberos login needs both --kerberos-principal and --kerberos-keytab" in started.stderr, started.stderr


def test_a_missing_keytab_and_a_file_that_is_none_are_named_with_the_flag(tmp_path):
    missing = tmp_path / "nowhere.keytab"
    started = start_operator(tmp_path, "{}\n", "--kerberos-principal", "ops", "--kerberos-keytab", str(missing))
    assert started.returncode == 1, started.stderr
    assert f"the keytab {missing} (--kerberos-keytab) does not exist" in started.stderr, started.stderr

    text = tmp_path / "notes.txt"
    text.write_text("not a keytab\n")
    started = start_operator(tmp_path, "{}\n", "--kerberos-principal", "ops", "--kerberos-keytab", str(text))
    assert started.returncode == 1 and f"{text} (--kerberos-keytab) is not a Kerberos keytab" in started.stderr, started.stderr
    assert "security.kerberos" not in started.stderr, "the operator's flags, not a job's options"
