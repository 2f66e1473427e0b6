"""Flink's ``SerializedThrowable`` as bytes of Java's object serialization stream.

Why: Flink's REST API carries a failure (``failure-cause`` of a job's
execution result, of a savepoint operation) as a JSON object whose
``serialized-throwable`` field is a Java-serialized
``org.apache.flink.util.SerializedThrowable`` (base64, as Jackson writes
``byte[]``), and Flink's own client (``RestClusterClient``) reads the failure
from those bytes alone. A job of jobcluster fails with a Python error, which
has no Java class, so this writes what Flink itself writes for an exception
whose class a reader may not know: a ``SerializedThrowable`` with the original
class name, the whole stringified trace and the message, and no nested
original exception (``serializedException`` null, which makes
``deserializeError`` return the ``SerializedThrowable`` itself).

The stream layout is the one of the Java Object Serialization Specification
(ch. 6, "Object Serialization Stream Protocol"); the classes' serialVersionUIDs
are those of ``java.lang.Throwable``/``Exception`` (the JDK's, fixed since 1.1)
and of Flink's ``SerializedThrowable`` (fixed since Flink 1.x; checked in
tests against Flink's own classes). Only what this object needs is written:
new objects, no back references.
"""

from __future__ import annotations

import base64
import struct

STREAM_MAGIC = 0xACED
STREAM_VERSION = 5
TC_NULL = 0x70
TC_CLASSDESC = 0x72
TC_OBJECT = 0x73
TC_STRING = 0x74
TC_ENDBLOCKDATA = 0x78
TC_LONGSTRING = 0x7C
SC_WRITE_METHOD = 0x01
SC_SERIALIZABLE = 0x02

#: serialVersionUIDs (``serialver``) of the classes in a SerializedThrowable's hierarchy.
SERIALIZED_THROWABLE_UID = 7284183123441947635
EXCEPTION_UID = -3387516993124229948
THROWABLE_UID = -3042686055658047285

_STRING = "Ljava/lang/String;"


def _modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (DataOutput.writeUTF without the length): NUL as two bytes, non-BMP as surrogate pairs."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0x01 <= c <= 0x7F:
            out.append(c)
        elif c <= 0x7FF:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    return bytes(out)


def _utf(text: str) -> bytes:
    data = _modified_utf8(text)
    return struct.pack(">H", len(data)) + data


def _string(text: str | None) -> bytes:
    """A String object: TC_STRING (or TC_LONGSTRING beyond 65535 bytes), or TC_NULL for None."""
    if text is None:
        return bytes((TC_NULL,))
    data = _modified_utf8(text)
    if len(data) <= 0xFFFF:
        return bytes((TC_STRING,)) + struct.pack(">H", len(data)) + data
    return bytes((TC_LONGSTRING,)) + struct.pack(">Q", len(data)) + data


def _class_desc(name: str, uid: int, flags: int, fields: list[tuple[str, str]], superclass: bytes) -> bytes:
    """A class descriptor; ``fields``: (type signature, name), in the order their values follow."""
    out = bytearray((TC_CLASSDESC,))
    out += _utf(name) + struct.pack(">qBH", uid, flags, len(fields))
    for signature, field in fields:
        out.append(ord(signature[0]))
        out += _utf(field) + _string(signature)
    out.append(TC_ENDBLOCKDATA)  # no class annotation
    return bytes(out) + superclass


def serialized_throwable(class_name: str, message: str | None, stack_trace: str) -> bytes:
    """The Java serialization of a ``SerializedThrowable`` for an error of class ``class_name``.

    ``message`` becomes the Throwable's message (Flink writes the original
    error's message there); ``stack_trace`` is what ``getFullStringifiedStackTrace``
    and ``printStackTrace`` give. Flink's ``toString`` of it is
    ``class_name: message``.
    """
    throwable = _class_desc(
        "java.lang.Throwable",
        THROWABLE_UID,
        SC_SERIALIZABLE | SC_WRITE_METHOD,
        [
            ("Ljava/lang/Throwable;", "cause"),
            (_STRING, "detailMessage"),
            ("[Ljava/lang/StackTraceElement;", "stackTrace"),
            ("Ljava/util/List;", "suppressedExceptions"),
        ],
        bytes((TC_NULL,)),
    )
    exception = _class_desc("java.lang.Exception", EXCEPTION_UID, SC_SERIALIZABLE, [], throwable)
    desc = _class_desc(
        "org.apache.flink.util.SerializedThrowable",
        SERIALIZED_THROWABLE_UID,
        SC_SERIALIZABLE,
        [(_STRING, "fullStringifiedStackTrace"), (_STRING, "originalErrorClassName"), ("[B", "serializedException")],
        exception,
    )
    # Values from the top class down. Throwable's own writeObject ends its part with an end-of-block
    # marker; a null stack trace and null suppressed list read back as empty ones.
    throwable_values = bytes((TC_NULL,)) + _string(message) + bytes((TC_NULL, TC_NULL, TC_ENDBLOCKDATA))
    own_values = _string(stack_trace) + _string(class_name) + bytes((TC_NULL,))
    return struct.pack(">HH", STREAM_MAGIC, STREAM_VERSION) + bytes((TC_OBJECT,)) + desc + throwable_values + own_values


def failure_cause(class_name: str, message: str | None, stack_trace: str) -> dict[str, str]:
    """Flink's JSON of a SerializedThrowable (``SerializedThrowableSerializer``): ``class``, ``stack-trace``,
    and ``serialized-throwable`` (the Java serialization above, base64 as Jackson writes bytes)."""
    data = serialized_throwable(class_name, message, stack_trace)
    return {"class": class_name, "stack-trace": stack_trace, "serialized-throwable": base64.b64encode(data).decode("ascii")}
