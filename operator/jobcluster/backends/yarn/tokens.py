"""Hadoop delegation tokens as plain data: encode, decode, and read the container's token file.

A job cluster on a Kerberized YARN cluster holds no Kerberos ticket in its
containers: the client obtains HDFS delegation tokens with its own ticket and
submits them with the application; YARN hands them to the ApplicationMaster in
the file ``HADOOP_TOKEN_FILE_LOCATION`` names, and the ApplicationMaster passes
them to every TaskExecutor container (Flink's ``Utils.setTokensFor``, Spark's
``Client.setupSecurityToken``). The JVMs read them with Hadoop's own classes;
this module is what Python needs of the same formats:

- :class:`Token`: Hadoop's ``org.apache.hadoop.security.token.Token`` (identifier
  and password bytes, kind, service);
- :func:`decode_url_string` / :meth:`Token.url_string`: ``Token.decodeFromUrlString``
  / ``encodeToUrlString``, the form WebHDFS's ``GETDELEGATIONTOKEN`` answers with
  (``urlString``), its ``delegation=`` parameter takes, and the ResourceManager's
  REST API takes in a submission's ``credentials``;
- :func:`read_token_storage`: ``Credentials.readTokenStorageStream``, the
  container's token file (format 0, Writable; format 1, protobuf).

A proxy user's token (``proxy_users.py``) is the same kind of token, owned by
that user; new tokens from a keytab login (``delegation_tokens.py``) are
obtained and written by Hadoop's own classes in the ApplicationMaster's JVM, and
read back here from the token file. Errors: :class:`TokenFormatError` for bytes
that are not what they claim.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

HDFS_DELEGATION_TOKEN = "HDFS_DELEGATION_TOKEN"
"""The kind the HDFS RPC client (``DFSClient``'s ``DelegationTokenSelector``) looks for, and the ResourceManager
renews through the NameNode's RPC."""
WEBHDFS_KINDS = frozenset({"WEBHDFS delegation", "SWEBHDFS delegation"})
"""The kinds WebHDFS gives the same NameNode token (``NamenodeWebHdfsMethods.generateDelegationToken``)."""
AMRM_TOKEN = "YARN_AM_RM_TOKEN"
"""The ApplicationMaster's own token (``AMRMTokenIdentifier.KIND_NAME``): never passed to other containers."""
TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
"""Where a NodeManager tells a container its tokens are (``UserGroupInformation``'s variable)."""

_MAGIC = b"HDTS"  # Credentials.TOKEN_STORAGE_MAGIC


class TokenFormatError(ValueError):
    """Bytes or a string that are not a Hadoop token (or token storage) as they claim to be."""


@dataclass(frozen=True)
class Token:
    """One Hadoop token: ``identifier`` and ``password`` as bytes, ``kind`` (e.g. ``HDFS_DELEGATION_TOKEN``) and
    ``service`` (``host:port`` of the service it is for; an HDFS token's is the NameNode's RPC address, by IP)."""

    identifier: bytes
    password: bytes
    kind: str
    service: str

    def to_bytes(self) -> bytes:
        """``Token.write``: identifier and password (vint length and bytes), then kind and service (``Text``)."""
        return b"".join(
            [
                _write_vint(len(self.identifier)),
                self.identifier,
                _write_vint(len(self.password)),
                self.password,
                _write_text(self.kind),
                _write_text(self.service),
            ]
        )

    def url_string(self) -> str:
        """``Token.encodeToUrlString``: :meth:`to_bytes` in URL-safe base64 without padding."""
        return base64.urlsafe_b64encode(self.to_bytes()).rstrip(b"=").decode("ascii")

    def with_kind(self, kind: str) -> Token:
        """The same token under another kind (the NameNode checks identifier and password, never the kind)."""
        return replace(self, kind=kind)

    def for_hdfs_rpc(self) -> Token:
        """A NameNode token as the HDFS RPC client and the ResourceManager's renewer want it: WebHDFS labels the
        tokens it issues with its own kind, which ``DFSClient`` would not select and the ResourceManager would renew
        over HTTPS; the same token as ``HDFS_DELEGATION_TOKEN`` is used and renewed over Hadoop RPC, as one from
        ``FileSystem.addDelegationTokens`` (what Flink's and Spark's clients call) would be."""
        return self.with_kind(HDFS_DELEGATION_TOKEN) if self.kind in WEBHDFS_KINDS else self


def decode_url_string(url_string: str) -> Token:
    """``Token.decodeFromUrlString``: the token of a URL-safe base64 string (padding optional).

    Raises:
        TokenFormatError: not base64, or not a token's bytes.
    """
    try:
        raw = base64.urlsafe_b64decode(url_string + "=" * (-len(url_string) % 4))
    except (ValueError, TypeError) as error:
        raise TokenFormatError(f"not a Hadoop token string: {error}") from error
    reader = _Reader(raw)
    token = reader.token()
    if not reader.at_end():
        raise TokenFormatError(f"{len(raw) - reader.pos} bytes after the token")
    return token


def read_token_storage(data: bytes) -> dict[str, Token]:
    """``Credentials.readTokenStorageStream``: the tokens of a token file by alias (its secret keys are skipped).

    Format 0 (``SerializedFormat.WRITABLE``) and 1 (``PROTOBUF``), both of which Hadoop 3 reads and writes.

    Raises:
        TokenFormatError: not token storage, or of a format Hadoop 3.3 does not write.
    """
    if not data.startswith(_MAGIC) or len(data) < 5:
        raise TokenFormatError("not Hadoop token storage (no HDTS magic)")
    version, body = data[4], data[5:]
    if version == 0:
        reader = _Reader(body)
        tokens = {}
        for _ in range(reader.vint()):
            alias = reader.text()
            tokens[alias] = reader.token()
        return tokens
    if version == 1:
        return _read_protobuf_storage(body)
    raise TokenFormatError(f"token storage of format {version}, which Hadoop 3.3 does not write")


def container_tokens(environ: Mapping[str, str] | None = None) -> dict[str, Token]:
    """The tokens YARN gave this container (the file ``HADOOP_TOKEN_FILE_LOCATION`` names); empty outside YARN.

    Raises:
        TokenFormatError: the file is not token storage.
        OSError: the file named cannot be read.
    """
    env = os.environ if environ is None else environ
    location = env.get(TOKEN_FILE_ENV)
    if not location:
        return {}
    return read_token_storage(Path(location).read_bytes())


def hdfs_token(tokens: Mapping[str, Token]) -> Token | None:
    """The HDFS delegation token of ``tokens`` (any NameNode's token kind), None when there is none."""
    for token in tokens.values():
        if token.kind == HDFS_DELEGATION_TOKEN or token.kind in WEBHDFS_KINDS:
            return token
    return None


# -- Hadoop's Writable encodings --------------------------------------------------------


def _write_vint(value: int) -> bytes:
    """``WritableUtils.writeVLong``: -112..127 in one byte; else a length byte, then big-endian magnitude bytes."""
    if -112 <= value <= 127:
        return value.to_bytes(1, "big", signed=True)
    marker = -112
    if value < 0:
        value = ~value
        marker = -120
    magnitude = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return (marker - len(magnitude)).to_bytes(1, "big", signed=True) + magnitude


def _write_text(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _write_vint(len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos == len(self.data)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise TokenFormatError(f"truncated: {n} bytes wanted at offset {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def vint(self) -> int:
        first = int.from_bytes(self.take(1), "big", signed=True)
        if first >= -112:
            return first
        negative = first < -120
        length = (-120 - first) if negative else (-112 - first)
        value = int.from_bytes(self.take(length), "big")
        return ~value if negative else value

    def blob(self) -> bytes:
        return self.take(self.vint())

    def text(self) -> str:
        try:
            return self.blob().decode("utf-8")
        except UnicodeDecodeError as error:
            raise TokenFormatError(f"a Text field is not UTF-8: {error}") from error

    def token(self) -> Token:
        identifier = self.blob()
        password = self.blob()
        return Token(identifier, password, self.text(), self.text())


# -- Hadoop's protobuf token storage (CredentialsProto) -----------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The protobuf varint at ``pos`` of ``data``, and the position after it."""
    shift = value = 0
    while True:
        if pos >= len(data):
            raise TokenFormatError("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _protobuf_fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a protobuf message as ``(number, bytes)``; varint fields are skipped."""
    fields = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise TokenFormatError("truncated protobuf field")
            fields.append((number, data[pos : pos + length]))
            pos += length
        else:
            raise TokenFormatError(f"protobuf wire type {wire} is not in Hadoop's CredentialsProto")
    return fields


def _read_protobuf_storage(body: bytes) -> dict[str, Token]:
    # Security.proto: CredentialsProto { repeated CredentialsKVProto tokens = 1; repeated ... secrets = 2; }
    # CredentialsKVProto { string alias = 1; TokenProto token = 2; bytes secret = 3; }
    # TokenProto { bytes identifier = 1; bytes password = 2; string kind = 3; string service = 4; }
    # Hadoop writes it with writeDelimitedTo: a varint length first.
    length, start = _varint(body, 0)
    message = body[start : start + length]
    tokens = {}
    for number, entry in _protobuf_fields(message):
        if number != 1:
            continue
        parts = dict(_protobuf_fields(entry))
        if 2 not in parts:
            continue
        token = dict(_protobuf_fields(parts[2]))
        tokens[parts.get(1, b"").decode("utf-8")] = Token(
            token.get(1, b""), token.get(2, b""), token.get(3, b"").decode("utf-8"), token.get(4, b"").decode("utf-8")
        )
    return tokens
