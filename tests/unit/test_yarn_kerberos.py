"""Pure rules of the YARN client on a Kerberized cluster: Hadoop token encodings, the token file, the renewer, the
choice of WebHDFS client and the error texts (the real cluster's behaviour: tests/integration/hadoop/test_kerberos_*)."""

from __future__ import annotations

import base64
import re
import sys
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from hdfs import InsecureClient

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.kerberos import (
    KERBEROS_EXTRA,
    KerberosLoginError,
    check_ticket,
    client_java_options,
    expired_ticket_message,
    is_kerberized,
    no_ticket_message,
    spnego_auth,
    token_renewer,
    unaccepted_ticket_message,
)
from jobcluster.backends.yarn.rm_rest import submission_context
from jobcluster.backends.yarn.staging import webhdfs_client
from jobcluster.backends.yarn.tokens import (
    HDFS_DELEGATION_TOKEN,
    Token,
    TokenFormatError,
    container_tokens,
    decode_url_string,
    hdfs_token,
    read_token_storage,
)
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec
from tests.unit.test_yarn_hadoop_conf import conf

# A token as the test cluster's NameNode issued it through WebHDFS (GETDELEGATIONTOKEN, owner alice, renewer yarn).
WEBHDFS_TOKEN = "HQAFYWxpY2UEeWFybgCKAaIoWokoigGiTGcNKAECFBh-MozEeuaFmbQQZN6m49ZsAKlOE1NXRUJIREZTIGRlbGVnYXRpb24PMTI3LjAuMC4xOjU5NDY3"


def test_a_webhdfs_token_decodes_and_encodes_back_as_hadoop_wrote_it():
    token = decode_url_string(WEBHDFS_TOKEN)

    assert (token.kind, token.service) == ("SWEBHDFS delegation", "127.0.0.1:59467")
    assert b"alice" in token.identifier and len(token.password) == 20  # HMAC-SHA1
    assert token.url_string() == WEBHDFS_TOKEN


def test_the_hdfs_rpc_client_gets_the_same_token_under_its_own_kind():
    token = decode_url_string(WEBHDFS_TOKEN).for_hdfs_rpc()

    assert token.kind == HDFS_DELEGATION_TOKEN
    assert token.identifier == decode_url_string(WEBHDFS_TOKEN).identifier
    assert decode_url_string(token.url_string()) == token
    assert token.for_hdfs_rpc() is token


@pytest.mark.parametrize("size", [0, 1, 127, 128, 255, 256, 70_000])
def test_fields_of_any_length_round_trip_through_hadoops_variable_length_integers(size):
    token = Token(b"i" * size, b"p" * (size // 2), "KIND", "host:1")

    assert decode_url_string(token.url_string()) == token


def test_what_is_not_a_token_is_refused():
    with pytest.raises(TokenFormatError):
        decode_url_string(WEBHDFS_TOKEN[:-6])
    with pytest.raises(TokenFormatError):
        decode_url_string(base64.urlsafe_b64encode(Token(b"a", b"b", "K", "S").to_bytes() + b"xx").decode())
    with pytest.raises(TokenFormatError):
        read_token_storage(b"NOPE\x00")
    with pytest.raises(TokenFormatError):
        read_token_storage(b"HDTS\x07")


def _writable_storage(tokens: dict[str, Token]) -> bytes:
    # Credentials.writeTokenStorageToStream, format 0: count, (alias, token)..., then no secret keys
    body = bytes([len(tokens)])
    for alias, token in tokens.items():
        body += bytes([len(alias)]) + alias.encode() + token.to_bytes()
    return b"HDTS\x00" + body + b"\x00"


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_the_container_token_file_is_read_in_both_formats_hadoop_writes(tmp_path):
    hdfs = decode_url_string(WEBHDFS_TOKEN).for_hdfs_rpc()
    amrm = Token(b"\x01am", b"\x02pw", "YARN_AM_RM_TOKEN", "127.0.0.1:8030")
    writable = _writable_storage({"127.0.0.1:59467": hdfs, "": amrm})

    assert read_token_storage(writable) == {"127.0.0.1:59467": hdfs, "": amrm}

    proto_token = _field(1, hdfs.identifier) + _field(2, hdfs.password) + _field(3, hdfs.kind.encode()) + _field(4, hdfs.service.encode())
    message = _field(1, _field(1, b"nn") + _field(2, proto_token))
    assert read_token_storage(b"HDTS\x01" + bytes([len(message)]) + message) == {"nn": hdfs}

    path = tmp_path / "container_tokens"
    path.write_bytes(writable)
    found = container_tokens({"HADOOP_TOKEN_FILE_LOCATION": str(path)})
    assert hdfs_token(found) == hdfs
    assert container_tokens({}) == {}
    assert hdfs_token({"": amrm}) is None


def test_kerberos_is_what_core_site_says(tmp_path):
    assert not is_kerberized(conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"}))
    assert is_kerberized(conf(tmp_path, core={"hadoop.security.authentication": "Kerberos"}))


def test_the_renewer_is_the_resource_managers_principal_on_its_host(tmp_path):
    yarn = {"yarn.resourcemanager.address": "RM.example.com:8032", "yarn.resourcemanager.principal": "rm/_HOST@EXAMPLE.COM"}
    assert token_renewer(conf(tmp_path, yarn=yarn)) == "rm/rm.example.com@EXAMPLE.COM"

    fixed = {**yarn, "yarn.resourcemanager.principal": "yarn/rm1@EXAMPLE.COM"}
    assert token_renewer(conf(tmp_path, yarn=fixed)) == "yarn/rm1@EXAMPLE.COM"

    with pytest.raises(YarnConfigurationError, match=r"sets no yarn\.resourcemanager\.principal"):
        token_renewer(conf(tmp_path, yarn={"yarn.resourcemanager.address": "rm:8032"}))


def test_the_client_jvm_reads_the_realm_configuration_the_python_side_reads():
    assert client_java_options({"KRB5_CONFIG": "/etc/a.conf:/etc/b.conf"}) == ["-Djava.security.krb5.conf=/etc/a.conf"]
    assert client_java_options({}) == []


def test_webhdfs_on_a_cluster_without_kerberos_acts_as_the_user_name(tmp_path):
    hadoop_conf = conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"})

    client = webhdfs_client(hadoop_conf, user="bob", environ={})

    assert isinstance(client, InsecureClient)


def test_webhdfs_in_a_container_of_a_kerberized_cluster_uses_its_delegation_token_as_the_file_has_it_now(tmp_path):
    first = decode_url_string(WEBHDFS_TOKEN).for_hdfs_rpc()
    (tmp_path / "tokens").write_bytes(_writable_storage({"nn": first}))
    hadoop_conf = conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020", "hadoop.security.authentication": "kerberos"})

    client = webhdfs_client(hadoop_conf, environ={"HADOOP_TOKEN_FILE_LOCATION": str(tmp_path / "tokens")})

    def sent_token() -> Token:
        request = client._session.auth(requests.Request("GET", "http://nn:9870/webhdfs/v1/?op=LISTSTATUS").prepare())
        assert "op=LISTSTATUS" in request.url
        return decode_url_string(parse_qs(urlsplit(request.url).query)["delegation"][0])

    assert sent_token() == first
    # The ApplicationMaster's DelegationTokenManager rewrote the file: the next request carries the new token.
    renewed = replace(first, password=b"renewed")
    (tmp_path / "tokens").write_bytes(_writable_storage({"nn": renewed}))
    assert sent_token() == renewed


def test_a_submission_through_rest_carries_the_tokens_as_credentials():
    spec = ApplicationMasterSpec("wc", "jobcluster", ContainerResource(1024, 1), "run", tokens={"127.0.0.1:8020": WEBHDFS_TOKEN})

    context = submission_context("application_1_0001", spec)

    assert context["am-container-spec"]["credentials"] == {"tokens": {"entry": [{"key": "127.0.0.1:8020", "value": WEBHDFS_TOKEN}]}}
    assert (
        "credentials"
        not in submission_context("application_1_0001", ApplicationMasterSpec("wc", "jobcluster", spec.resource, "run"))[
            "am-container-spec"
        ]
    )


def test_the_errors_say_what_to_run():
    assert no_ticket_message("/tmp/krb5cc_0", "alice").startswith(
        "no Kerberos ticket in /tmp/krb5cc_0: run kinit <principal> (e.g. kinit alice)"
    )
    assert "security.kerberos.login.keytab" in no_ticket_message("c", "u")
    assert expired_ticket_message("/tmp/c") == (
        "the Kerberos ticket in /tmp/c has expired: run kinit <principal> again (or kinit -R while it is renewable)"
    )
    assert "a realm the cluster does not trust" in unaccepted_ticket_message("https://nn:9871")
    assert KERBEROS_EXTRA == "pip install 'jobcluster[kerberos]'"


def test_a_kerberized_cluster_without_the_extra_names_the_install(monkeypatch):
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "requests_gssapi", None)
    monkeypatch.setitem(sys.modules, "gssapi", None)

    with pytest.raises(KerberosLoginError, match=re.escape(KERBEROS_EXTRA)):
        spnego_auth()
    with pytest.raises(KerberosLoginError, match=r"hadoop\.security\.authentication=kerberos"):
        check_ticket({})
