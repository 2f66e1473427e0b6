"""The program's output and error as the cluster reads them, how its driver is started, and the CLI's exit codes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from jobcluster.cli.run import exit_code
from jobcluster.client.cluster_client import ProgramOutput
from jobcluster.client.job_client import DriverOutputFollower, JobExecutionResult
from jobcluster.jobgraph.model import ClientPaths, JobGraph, JobVertex, new_job_id
from jobcluster.runtime.jobmaster.driver_output import (
    DriverOutputFiles,
    exit_description,
    is_pyspark_worker_memory_error,
    program_error,
    stderr_tail,
    with_memory_error_hint,
)
from jobcluster.runtime.jobmaster.spark_application import driver_properties, driver_python_path, driver_submit_args, program_location
from jobcluster.spark.security import SparkSecurity, properties_text

PY4J_ERROR = """WARN: something the program printed first
Traceback (most recent call last):
  File "/home/u/job.py", line 7, in <module>
    spark._jvm.java.lang.Class.forName("no.such.Klass")
  File "/venv/lib/python3.11/site-packages/py4j/protocol.py", line 326, in get_return_value
    raise Py4JJavaError(
py4j.protocol.Py4JJavaError: An error occurred while calling z:java.lang.Class.forName.
: java.lang.ClassNotFoundException: no.such.Klass
\tat java.base/jdk.internal.loader.BuiltinClassLoader.loadClass(BuiltinClassLoader.java:641)
\tat py4j.Gateway.invoke(Gateway.java:282)
Caused by: java.lang.IllegalStateException: the reason behind it
\tat py4j.Gateway.invoke(Gateway.java:282)
\t... 5 more

"""

SYNTAX_ERROR = """  File "/home/u/job.py", line 3
    x = (
        ^
SyntaxError: '(' was never closed
"""

CHAINED = """Traceback (most recent call last):
  File "a.py", line 1, in <module>
ValueError: first failure

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "b.py", line 7, in <module>
RuntimeError: boom
"""


#: An RDD job whose Python task ran out of its PySpark worker's limit, as the driver's stderr has it (Spark 3.5; its
#: long lines continued with a backslash).
WORKER_MEMORY_ERROR = """Traceback (most recent call last):
  File "/home/u/hog.py", line 9, in <module>
    print(sc.parallelize(range(2), 2).mapPartitions(hog).collect())
  File "/venv/lib/python3.11/site-packages/py4j/protocol.py", line 326, in get_return_value
    raise Py4JJavaError(
py4j.protocol.Py4JJavaError: An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent \
failure: Lost task 0.3 in stage 0.0 (TID 3) (10.0.0.1 executor 0): org.apache.spark.api.python.PythonException: \
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 1247, in main
    process()
  File "/home/u/hog.py", line 5, in hog
    held = bytearray(1000 << 20)
MemoryError

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:572)

Driver stacktrace:
Caused by: org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/home/u/hog.py", line 5, in hog
    held = bytearray(1000 << 20)
MemoryError

"""

#: A Python UDF's MemoryError: PySpark converts the Java exception, and its message carries the worker's traceback.
UDF_MEMORY_ERROR = """Traceback (most recent call last):
  File "/home/u/hog_udf.py", line 8, in <module>
    spark.range(2).select(hog("id")).show()
  File "/venv/lib/python3.11/site-packages/pyspark/errors/exceptions/captured.py", line 185, in deco
    raise converted from None
pyspark.errors.exceptions.captured.PythonException:
  An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/home/u/hog_udf.py", line 7, in hog
    return len(bytearray(1000 << 20))
MemoryError
"""

#: The program's own process ran out of memory: no PySpark worker's limit was reached.
DRIVER_MEMORY_ERROR = """Traceback (most recent call last):
  File "/home/u/job.py", line 4, in <module>
    rows = sc.parallelize(range(10)).collect() * 10**12
MemoryError
"""

HINT = "A PySpark worker ran out of its memory limit: raise PYTHON's weight"


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (WORKER_MEMORY_ERROR, True),
        (UDF_MEMORY_ERROR, True),
        (DRIVER_MEMORY_ERROR, False),
        (PY4J_ERROR, False),
        (CHAINED.replace("RuntimeError: boom", "MemoryError"), False),
        ("", False),
    ],
)
def test_a_pyspark_workers_memory_error_is_told_from_the_programs_own(stderr, expected):
    assert is_pyspark_worker_memory_error(stderr) is expected


def test_the_memory_error_hint_follows_a_pyspark_workers_memory_error_only():
    cause = "the PySpark program exited with code 1:\n" + program_error(WORKER_MEMORY_ERROR)
    assert cause.splitlines()[-1] == "MemoryError", "the worker's MemoryError is part of the error shown"
    hinted = with_memory_error_hint(cause, WORKER_MEMORY_ERROR, HINT)
    assert hinted == f"{cause}\n{HINT}"
    assert with_memory_error_hint(cause, DRIVER_MEMORY_ERROR, HINT) == cause
    assert with_memory_error_hint(cause, WORKER_MEMORY_ERROR, None) == cause  # the workers have no limit: nothing to raise


def test_a_py4j_error_shows_the_java_exception_its_reason_and_causes_without_java_frames():
    error = program_error(PY4J_ERROR)
    lines = error.splitlines()
    assert lines[0].startswith("Traceback (most recent call last)")
    assert "py4j.protocol.Py4JJavaError: An error occurred while calling z:java.lang.Class.forName." in lines
    assert ": java.lang.ClassNotFoundException: no.such.Klass" in lines
    assert "Caused by: java.lang.IllegalStateException: the reason behind it" in lines
    assert not any(line.lstrip().startswith(("at ", "... 5 more")) for line in lines), error
    assert "WARN: something" not in error


def test_a_syntax_error_without_traceback_shows_the_end_of_stderr():
    assert program_error(SYNTAX_ERROR) == SYNTAX_ERROR.rstrip("\n")


def test_the_last_of_chained_tracebacks_is_shown():
    error = program_error(CHAINED)
    assert error.splitlines()[-1] == "RuntimeError: boom" and "first failure" not in error


def test_long_tracebacks_keep_the_innermost_frames_and_the_start_of_the_message():
    frames = "".join(f'  File "f.py", line {i}, in f\n    f()\n' for i in range(100))
    message = "\n".join(f"line {i} of the message" for i in range(100))
    error = program_error(f"Traceback (most recent call last):\n{frames}RecursionError: too deep\n{message}\n").splitlines()
    assert '  File "f.py", line 99, in f' in error and '  File "f.py", line 0, in f' not in error
    assert "RecursionError: too deep" in error and "line 0 of the message" in error
    assert "line 99 of the message" not in error and error[-1].startswith("... (")


def test_nothing_on_stderr():
    assert program_error("") == ""


@pytest.mark.parametrize(("code", "text"), [(3, "exited with code 3"), (1, "exited with code 1"), (-9, "killed by signal SIGKILL")])
def test_exit_description(code, text):
    assert text in exit_description(code)


def test_output_is_read_from_an_offset(tmp_path):
    output = DriverOutputFiles(tmp_path, max_file_size=1024, max_files=2)
    assert output.stream("stdout").read(0, 100).data == b""  # not written yet
    output.stdout.write(b"first\nsecond\n")
    assert (tmp_path / "driver.out").read_bytes() == b"first\nsecond\n"
    assert output.stream("stdout").read(6, 100).data == b"second\n"
    assert output.stream("stdout").read(100, 100).data == b""
    assert output.stream("stdout").read(0, 3).data == b"fir"
    assert output.stream("stderr").read(0, 100).data == b"", "the streams are apart"
    with pytest.raises(ValueError, match="unknown output stream"):
        output.stream("log")


def test_the_error_of_one_attempt_is_read_from_where_it_began(tmp_path):
    stderr = DriverOutputFiles(tmp_path, max_file_size=1024, max_files=2).stderr
    stderr.write(b"Traceback (most recent call last):\nValueError: attempt 1\n")
    start = stderr.end()
    stderr.write(b"only a warning\n")
    assert program_error(stderr_tail(stderr, start)) == "only a warning"


def test_the_error_of_an_attempt_is_found_when_its_stderr_spans_rotated_files(tmp_path):
    stderr = DriverOutputFiles(tmp_path, max_file_size=1024, max_files=3).stderr
    stderr.write(b"x" * 5000)  # the first attempt: all but the last 2 KiB are rotated away
    start = stderr.end()
    traceback = b"Traceback (most recent call last):\n" + b'  File "job.py", line 1, in <module>\n' * 30 + b"ValueError: attempt 2\n"
    stderr.write(b"noise\n" * 100 + traceback)
    assert (tmp_path / "driver.err.1").exists(), "the attempt's stderr is in more than one file"
    error = program_error(stderr_tail(stderr, start))
    assert error.startswith("Traceback (most recent call last):") and error.endswith("ValueError: attempt 2")


def test_submit_args_survive_pysparks_shlex_split_and_carry_no_setting():
    args = shlex.split(driver_submit_args(Path("/c/my conf/driver-1.properties"), [Path("/s/a.py"), Path("/s/lib.zip")]))
    assert args == ["--properties-file", "/c/my conf/driver-1.properties", "--py-files", "/s/a.py,/s/lib.zip", "pyspark-shell"]


def test_the_drivers_properties_are_the_clusters_spark_defaults_then_the_jobs_settings(tmp_path):
    conf_dir = tmp_path / "spark-conf"
    SparkSecurity("the-spark-secret", "127.0.0.1").install(conf_dir)
    conf = {"spark.app.name": "my job", "spark.driver.extraJavaOptions": "-XX:MaxDirectMemorySize=64m -Dx=a:b"}
    text = driver_properties(conf, str(conf_dir))
    assert text.startswith((conf_dir / "spark-defaults.conf").read_text()) and "spark.authenticate.secret=the-spark-secret\n" in text
    assert text.endswith("spark.app.name=my job\nspark.driver.extraJavaOptions=-XX:MaxDirectMemorySize=64m -Dx=a:b\n")
    assert driver_properties({"spark.app.name": "wc"}, None) == "spark.app.name=wc\n"


def test_properties_are_escaped_as_java_reads_them():
    text = properties_text({"spark.hadoop.a key=x": "C:\\temp\nnext #not a comment", "!k": "v"})
    assert text == "spark.hadoop.a\\ key\\=x=C:\\\\temp\\nnext #not a comment\n\\!k=v\n"


def test_python_path_holds_py_files_by_directory_and_archives_themselves():
    assert driver_python_path([Path("/s/a.py"), Path("/s/b.py"), Path("/s/lib.zip")], "/mine") == "/s:/s/lib.zip:/mine"
    assert driver_python_path([], None) == ""


def _graph(client_paths: ClientPaths | None) -> JobGraph:
    vertex = JobVertex(id=new_job_id(), name="v", program="job.py", parallelism=1, max_parallelism=128)
    return JobGraph(job_id=new_job_id(), job_name="job", vertices=[vertex], client_paths=client_paths)


def test_the_program_runs_where_the_client_started_it_when_the_graph_says_so(tmp_path):
    paths = ClientPaths(working_directory="/home/u/work", program="/home/u/jobs/job.py")
    assert program_location(_graph(paths), tmp_path) == (Path("/home/u/jobs/job.py"), Path("/home/u/work"))
    program, cwd = program_location(_graph(None), tmp_path)
    assert program == tmp_path / "job.py" and cwd == Path.cwd()


def test_client_paths_are_absolute():
    with pytest.raises(ValueError, match="absolute"):
        ClientPaths(working_directory="work", program="/home/u/job.py")


def _result(status: str, code: int | None) -> JobExecutionResult:
    return JobExecutionResult("j", "n", status, 1, None, 0, program_exit_code=code)


@pytest.mark.parametrize(
    ("status", "program_code", "cli_code"),
    [
        ("FINISHED", 0, 0),
        ("FAILED", 3, 3),
        ("FAILED", 1, 1),
        ("FAILED", -9, 1),  # killed by a signal
        ("FAILED", None, 1),  # failed around the program, e.g. no slots
        ("CANCELED", -15, 1),
    ],
)
def test_exit_code_of_jobcluster_run(status, program_code, cli_code):
    assert exit_code(_result(status, program_code)) == cli_code


class _Cluster:
    """What the REST API serves of the job's two output streams (real rolling files), at most ``chunk`` bytes per call."""

    def __init__(self, tmp_path: Path, chunk: int, max_file_size: int = 1 << 20, max_files: int = 10) -> None:
        self.output = DriverOutputFiles(tmp_path, max_file_size, max_files)
        self.chunk = chunk

    def write(self, stream: str, data: bytes) -> None:
        self.output.stream(stream).write(data)

    def job_output(self, job_id: str, stream: str, offset: int) -> ProgramOutput:
        chunk = self.output.stream(stream).read(offset, self.chunk)
        return ProgramOutput(chunk.offset, chunk.data)


def test_the_follower_copies_each_stream_once_and_whole(tmp_path):
    cluster = _Cluster(tmp_path, chunk=4)
    received: list[tuple[str, bytes]] = []
    follower = DriverOutputFollower(cluster, "job", lambda stream, data: received.append((stream, data)))
    follower.poll()
    assert received == []
    cluster.write("stdout", b"first line\n")
    cluster.write("stderr", b"oops")
    follower.poll()
    cluster.write("stdout", b"second line\n")
    follower.poll()
    follower.poll()
    assert b"".join(d for s, d in received if s == "stdout") == b"first line\nsecond line\n"
    assert b"".join(d for s, d in received if s == "stderr") == b"oops"
    assert follower.offsets == {"stdout": 23, "stderr": 4}


def test_jars_go_to_spark_submit_after_the_py_files_so_the_driver_jvm_has_them_on_its_classpath():
    args = shlex.split(driver_submit_args(Path("/c/p"), [Path("/s/a.py")], [Path("/s/x.jar"), Path("/opt/y.jar")]))
    assert args == ["--properties-file", "/c/p", "--py-files", "/s/a.py", "--jars", "/s/x.jar,/opt/y.jar", "pyspark-shell"]
    assert "--jars" not in shlex.split(driver_submit_args(Path("/c/p"), [], []))


def test_artifact_paths_tell_jars_from_py_files_by_kind_and_keep_provided_ones_absolute(tmp_path):
    from jobcluster.jobgraph.model import JobGraph, JobVertex, UserArtifact
    from jobcluster.runtime.jobmaster.spark_application import artifact_paths

    graph = JobGraph(
        job_id="0" * 32,
        job_name="j",
        vertices=[JobVertex(id="v", name="v", program="job.py", parallelism=1, max_parallelism=1)],
        user_artifacts=[
            UserArtifact(name="lib.zip", path="lib.zip"),
            UserArtifact(name="data.txt", path="data.txt"),
            UserArtifact(name="c.jar", path="c.jar", kind="jar"),
            UserArtifact(name="d.jar", path="/opt/d.jar", kind="jar"),
        ],
    )
    assert artifact_paths(graph, tmp_path) == ([tmp_path / "lib.zip"], [tmp_path / "c.jar", Path("/opt/d.jar")])


def test_the_follower_goes_on_across_rotated_files_with_nothing_lost_or_doubled(tmp_path):
    cluster = _Cluster(tmp_path, chunk=7, max_file_size=16, max_files=4)
    received = bytearray()
    gaps: list[tuple[str, int, int]] = []
    follower = DriverOutputFollower(cluster, "job", lambda stream, data: received.extend(data), lambda *gap: gaps.append(gap))
    lines = [f"line {i}\n".encode() for i in range(200)]
    for line in lines:  # polled after every line: each file is read before it could be deleted
        cluster.write("stdout", line)
        follower.poll()
    assert (tmp_path / "driver.out.3").exists(), "the output was rotated"
    assert bytes(received) == b"".join(lines) and gaps == []


def test_output_rotated_away_unread_is_skipped_and_said(tmp_path):
    cluster = _Cluster(tmp_path, chunk=1000, max_file_size=16, max_files=2)
    received = bytearray()
    gaps: list[tuple[str, int, int]] = []
    follower = DriverOutputFollower(cluster, "job", lambda stream, data: received.extend(data), lambda *gap: gaps.append(gap))
    cluster.write("stdout", b"early\n")
    follower.poll()
    text = b"".join(f"{i:03d}\n".encode() for i in range(100))  # 400 bytes: only the last 32 at most are kept
    cluster.write("stdout", text)
    follower.poll()
    kept = cluster.output.stdout.first_kept()
    assert gaps == [("stdout", 6, kept)]
    assert bytes(received) == b"early\n" + (b"early\n" + text)[kept:]
    assert follower.offsets["stdout"] == 406
    cluster.write("stdout", b"late\n")
    follower.poll()
    assert bytes(received).endswith(text[-16:] + b"late\n") and len(gaps) == 1


def test_the_output_also_goes_to_the_console_when_asked(tmp_path, capfdbinary):
    quiet = DriverOutputFiles(tmp_path / "quiet", max_file_size=1024, max_files=2)
    quiet.sink("stdout")(b"files only\n")
    output = DriverOutputFiles(tmp_path / "console", max_file_size=1024, max_files=2, console=True)
    output.sink("stdout")(b"3 files, 42 words\n")
    output.sink("stderr")(b"a warning\n")

    captured = capfdbinary.readouterr()
    assert (captured.out, captured.err) == (b"3 files, 42 words\n", b"a warning\n")
    assert (tmp_path / "console" / "driver.out").read_bytes() == b"3 files, 42 words\n"  # the files keep it too
    assert (tmp_path / "quiet" / "driver.out").read_bytes() == b"files only\n"
    with pytest.raises(ValueError, match="unknown output stream"):
        output.sink("log")
