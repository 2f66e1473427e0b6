"""A login from a keytab (security.kerberos.login.keytab / .principal): the options, the file and what it holds, each
refusal naming what to do, all before anything is reached (the KDC's side: tests/integration/hadoop/test_kerberos_keytab.py)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.keytab import KeytabError, KeytabLogin, keytab_login_of, keytab_principals, login_refused_message
from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration
from tests.unit.test_yarn_hadoop_conf import conf


def _entry(principal: str, version: int = 2, kvno: int = 1) -> bytes:
    """One keytab entry as MIT writes it (aes256-cts key of 32 zero bytes)."""
    names, _, realm = principal.partition("@")
    components = names.split("/")
    count = len(components) + (1 if version == 1 else 0)
    body = struct.pack(">H", count)
    for part in (realm, *components):
        raw = part.encode()
        body += struct.pack(">H", len(raw)) + raw
    if version == 2:
        body += struct.pack(">I", 1)  # KRB5_NT_PRINCIPAL
    body += struct.pack(">IB", 1_700_000_000, kvno) + struct.pack(">HH", 18, 32) + bytes(32)
    return struct.pack(">i", len(body)) + body


def keytab_bytes(*principals: str, version: int = 2, hole: int = 0) -> bytes:
    data = bytes([5, version])
    if hole:
        data += struct.pack(">i", -hole) + bytes(hole)
    return data + b"".join(_entry(p, version) for p in principals)


def _config(**values: str) -> Configuration:
    return Configuration(values)


@pytest.fixture
def keytab(tmp_path: Path) -> Path:
    path = tmp_path / "alice.keytab"
    path.write_bytes(keytab_bytes("alice@EXAMPLE.COM", "HTTP/web.example.com@EXAMPLE.COM"))
    path.chmod(0o600)
    return path


def test_the_principals_of_a_keytab_are_read_in_file_order_past_holes_and_in_both_versions():
    assert keytab_principals(keytab_bytes("alice@R", "nn/host.example.com@R", hole=12)) == ["alice@R", "nn/host.example.com@R"]
    assert keytab_principals(keytab_bytes("bob@OLD.REALM", version=1)) == ["bob@OLD.REALM"]


def test_what_is_not_a_keytab_or_is_cut_short_is_refused():
    with pytest.raises(KeytabError, match="not a Kerberos keytab"):
        keytab_principals(b"[libdefaults]\n")
    with pytest.raises(KeytabError, match="truncated"):
        keytab_principals(keytab_bytes("alice@R")[:-5])


def test_neither_option_means_the_ticket_cache():
    assert keytab_login_of(_config()) is None


def test_the_login_and_its_keytab_are_flinks_keys_including_the_deprecated_ones(keytab):
    expected = KeytabLogin("alice@EXAMPLE.COM", keytab)
    assert (
        keytab_login_of(
            _config(**{"security.kerberos.login.keytab": str(keytab), "security.kerberos.login.principal": "alice@EXAMPLE.COM"})
        )
        == expected
    )
    assert keytab_login_of(_config(**{"security.keytab": str(keytab), "security.principal": "alice@EXAMPLE.COM"})) == expected


def test_a_principal_without_its_realm_matches_the_name_in_the_keytab(keytab):
    login = keytab_login_of(_config(**{"security.kerberos.login.keytab": str(keytab), "security.kerberos.login.principal": "alice"}))
    assert login == KeytabLogin("alice", keytab)


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ("security.kerberos.login.keytab", "security.kerberos.login.principal"),
        ("security.kerberos.login.principal", "security.kerberos.login.keytab"),
    ],
)
def test_one_option_without_the_other_names_the_missing_one(keytab, given, missing):
    with pytest.raises(KeytabError, match=rf"{given} is set but {missing} is not.*set both"):
        keytab_login_of(_config(**{given: str(keytab) if given.endswith("keytab") else "alice"}))


def test_a_relative_path_is_refused(keytab):
    with pytest.raises(KeytabError, match="must be an absolute path"):
        keytab_login_of(_config(**{"security.kerberos.login.keytab": "alice.keytab", "security.kerberos.login.principal": "alice"}))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "is not a file"),
        (lambda p: p.write_text("[libdefaults]\n"), "is not a Kerberos keytab"),
    ],
)
def test_a_file_that_is_not_a_keytab_is_refused_with_its_path(tmp_path, make, message):
    path = tmp_path / "alice.keytab"
    make(path)
    with pytest.raises(KeytabError, match=message) as error:
        keytab_login_of(_config(**{"security.kerberos.login.keytab": str(path), "security.kerberos.login.principal": "alice"}))
    assert str(path) in str(error.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_keytab_is_refused_naming_chmod(keytab):
    keytab.chmod(0)
    with pytest.raises(KeytabError, match=r"cannot be read by this user.*chmod 600"):
        keytab_login_of(_config(**{"security.kerberos.login.keytab": str(keytab), "security.kerberos.login.principal": "alice"}))


def test_a_keytab_without_the_principal_lists_what_it_holds_and_how_to_export(keytab):
    with pytest.raises(KeytabError) as error:
        keytab_login_of(_config(**{"security.kerberos.login.keytab": str(keytab), "security.kerberos.login.principal": "bob@EXAMPLE.COM"}))
    message = str(error.value)
    assert "holds no key of bob@EXAMPLE.COM" in message
    assert "HTTP/web.example.com@EXAMPLE.COM, alice@EXAMPLE.COM" in message
    assert "ktadd" in message


def test_keys_the_kdc_refuses_mean_an_out_of_date_keytab_other_failures_the_kdc():
    login = KeytabLogin("alice@R", Path("/k"))
    stale = login_refused_message(login, "Minor (2529638943): Decrypt integrity check failed")
    assert "does not match the principal's current keys" in stale and "ktadd" in stale
    unreachable = login_refused_message(login, "Minor (2529639068): Cannot contact any KDC for realm 'R'")
    assert "KDC of its realm is reachable" in unreachable


def test_a_keytab_login_while_acting_as_a_namespaces_user_is_refused_before_any_login(tmp_path, keytab, monkeypatch):
    # The operator's descriptor of a FlinkJob: the login is the whole process's, so a FlinkJob's keytab would
    # replace the operator's own ticket, the real user of every namespace's proxy user.
    monkeypatch.delenv("KRB5_CLIENT_KTNAME", raising=False)
    conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020", "hadoop.security.authentication": "kerberos"})
    config = load_configuration(
        None,
        {
            "env.hadoop.conf.dir": str(tmp_path),
            "security.kerberos.login.keytab": str(keytab),
            "security.kerberos.login.principal": "alice@EXAMPLE.COM",
        },
    )
    descriptor = YarnClusterDescriptor(config, hadoop_user="team-a")

    for call in (descriptor.list_clusters, lambda: descriptor.read_savepoint("hdfs://nn:8020/savepoints/sp-1")):
        with pytest.raises(KeytabError, match=r"cannot be used while acting as Hadoop user team-a .* remove both options"):
            call()
    assert "KRB5_CLIENT_KTNAME" not in os.environ, "the process did not log in from the keytab"
