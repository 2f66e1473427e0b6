"""Programs run under ``jobcluster run`` as under ``spark-submit`` (client mode, from the user's shell).

Working directory and relative paths, the program's own directory and
``--py-files`` on ``sys.path``, stdin at its end, stdout and stderr streamed
whole and apart, the program's error and exit code, and Spark's own example
programs giving what ``spark-submit --master local[2]`` gives.
"""

from __future__ import annotations

import os
import queue
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import CLI_TIMEOUT, PROGRAMS, staging_dirs

pytestmark = pytest.mark.e2e

JOBCLUSTER = Path(sys.executable).parent / "jobcluster"  # the console script, as a user runs it
ONE_SLOT = ("-p", "1", "-D", "taskmanager.numberOfTaskSlots=1")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(JOBCLUSTER), *args], cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT)


def cause_of(stderr: str) -> str:
    """The ``Cause:`` the CLI printed, up to the line that says the cluster is going."""
    match = re.search(r"^Cause: (.*?)^Job cluster \S+ (has shut down|is still shutting down)", stderr, re.M | re.S)
    assert match, stderr
    return match.group(1)


def _lines_of(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def test_a_program_runs_in_the_users_directory_with_its_output_streamed_whole(home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "input.txt").write_text("one\ntwo\nthree\n")
    stderr_file = tmp_path / "stderr.txt"
    args = [*ONE_SLOT, "--py-files", str(PROGRAMS / "lib" / "shipped_lib.py"), str(PROGRAMS / "like_spark_submit.py"), "wc_out"]
    with open(stderr_file, "w") as stderr:
        # a shell's usual umask: the job's output must get the modes it gives, as under spark-submit
        proc = subprocess.Popen([str(JOBCLUSTER), "run", *args], cwd=work, stdout=subprocess.PIPE, stderr=stderr, text=True, umask=0o022)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines_of, args=(proc.stdout, lines), daemon=True).start()
    stdout: list[str] = []
    try:
        # the program waits for `go` after this line: seeing it means output arrives while the program runs
        while not stdout or stdout[-1] != "waiting for go\n":
            line = lines.get(timeout=CLI_TIMEOUT)
            assert line is not None, f"the run ended before 'waiting for go' was streamed:\n{''.join(stdout)}\n{stderr_file.read_text()}"
            stdout.append(line)
        (work / "go").touch()
        assert proc.wait(timeout=CLI_TIMEOUT) == 0, stderr_file.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    while (line := lines.get(timeout=10)) is not None:
        stdout.append(line)
    err = stderr_file.read_text()

    assert f"cwd={work}\n" in stdout
    assert "stdin=''\n" in stdout, "stdin is empty"
    assert "helper=sibling_helper\n" in stdout, "the program's directory is on sys.path"
    assert "input lines=3\n" in stdout, "relative paths in the program resolve in the user's directory"
    assert "shipped=[0, 2, 4, 6]\n" in stdout, "--py-files import on the driver and the executors"
    assert [line for line in stdout if line.startswith("line ")] == [f"line {i:05d} " + "x" * 89 + "\n" for i in range(2000)]
    assert stdout[-1] == "got go\n"
    assert "this line goes to stderr only" in err and "this line goes to stderr only\n" not in stdout
    assert " INFO " not in err, "Spark's log stays in the driver log"
    assert [p.read_text() for p in (work / "wc_out").glob("part-*") if p.stat().st_size] == ["written\n"]
    output_modes = {stat.S_IMODE(p.stat().st_mode) for p in [work / "wc_out", *(work / "wc_out").glob("part-*")]}
    assert all(mode & 0o044 == 0o044 for mode in output_modes), f"the output has the user's umask: {sorted(map(oct, output_modes))}"
    assert staging_dirs(home) == []
    log_dir = next((home / "log").iterdir())
    assert (log_dir / "driver.out").read_text().endswith("got go\n"), "the output is kept in the log directory"


def test_a_py4j_error_shows_the_java_exception_and_its_reason(home, tmp_path):
    result = run_cli("run", *ONE_SLOT, str(PROGRAMS / "failing_ways.py"), "py4j", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    cause = cause_of(result.stderr)
    assert cause.startswith("the PySpark program exited with code 1:"), cause
    assert "py4j.protocol.Py4JJavaError: An error occurred while calling z:java.lang.Class.forName." in cause
    assert ": java.lang.ClassNotFoundException: no.such.Klass" in cause
    assert "\tat " not in cause, "Java stack frames are left out"
    assert result.stdout == "started\n"


def test_a_syntax_error_is_the_cause(home, tmp_path):
    program = tmp_path / "broken.py"
    program.write_text("from pyspark.sql import SparkSession\nx = (\n")
    result = run_cli("run", *ONE_SLOT, str(program), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    cause = cause_of(result.stderr)
    assert "SyntaxError: '(' was never closed" in cause and f'File "{program}", line 2' in cause, cause
    assert " INFO " not in cause, cause


def test_the_programs_exit_code_is_the_cli_exit_code(home, tmp_path):
    result = run_cli("run", *ONE_SLOT, str(PROGRAMS / "failing_ways.py"), "exit3", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert "Cause: the PySpark program exited with code 3" in result.stderr
    assert re.search(r"Job [0-9a-f]{32} \(failing_ways\) FAILED in", result.stderr)


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


# Spark's examples with data the pyspark wheel carries (it has no examples/src/main/resources):
# (program, arguments, the lines that are its result, in an order that depends on partitioning)
SPARK_EXAMPLES = [
    ("wordcount.py", ["data/graphx/users.txt"], re.compile(r"^.*: \d+$")),
    ("pagerank.py", ["data/mllib/pagerank_data.txt", "3"], re.compile(r"^\d+ has rank: [\d.]+\.$")),
]


def test_sparks_example_programs_give_what_spark_submit_gives(home):
    spark_home = _spark_home()
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    for program, args, result_line in SPARK_EXAMPLES:
        path = f"examples/src/main/python/{program}"
        ours = run_cli("run", "-p", "2", path, *args, cwd=spark_home)
        assert ours.returncode == 0, ours.stderr
        reference = subprocess.run(
            [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]", path, *args],
            cwd=spark_home,
            env=env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
        )
        assert reference.returncode == 0, reference.stderr
        # spark-submit merges the program's stderr into its stdout; ours keeps stdout to itself
        expected = [line for line in reference.stdout.splitlines() if result_line.match(line)]
        got = ours.stdout.splitlines()
        assert expected, reference.stdout
        assert all(result_line.match(line) for line in got), f"{program}: stdout holds more than the result:\n{ours.stdout}"
        assert sorted(got) == sorted(expected), program
    assert "WARN: This is a naive implementation of PageRank" in ours.stderr, "pagerank.py's stderr is on stderr"


_ROTATED = re.compile(r"^\[jobcluster\] ([\d,]+) bytes of the program's stdout were rotated away .*; resuming at byte ([\d,]+)$", re.M)


def test_a_long_output_is_followed_across_rotated_files_and_bounded_on_disk(home, tmp_path):
    sys.path.insert(0, str(PROGRAMS))
    try:
        from chatty import chatty_lines
    finally:
        sys.path.remove(str(PROGRAMS))
    before, after = chatty_lines("before", 40), chatty_lines("after", 8000)
    go = tmp_path / "go"
    max_size, max_files = 1024, 3
    args = [*ONE_SLOT, "-D", f"jobcluster.driver.output.max-file-size={max_size}b", "-D", f"jobcluster.driver.output.max-files={max_files}"]
    args += [str(PROGRAMS / "chatty.py"), "--before", "40", "--after", "8000", "--go", str(go)]
    stderr_file = tmp_path / "stderr.txt"
    with open(stderr_file, "w") as stderr:
        proc = subprocess.Popen([str(JOBCLUSTER), "run", *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=stderr, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines_of, args=(proc.stdout, lines), daemon=True).start()
    stdout: list[str] = []
    try:
        # all that came before `go` fits in the kept files: the client has it all before the flood starts
        while len(stdout) < len(before):
            line = lines.get(timeout=CLI_TIMEOUT)
            assert line is not None, f"the run ended early:\n{''.join(stdout)}\n{stderr_file.read_text()}"
            stdout.append(line)
        go.touch()
        assert proc.wait(timeout=CLI_TIMEOUT) == 0, stderr_file.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    while (line := lines.get(timeout=10)) is not None:
        stdout.append(line)
    err = stderr_file.read_text()

    stream = "".join(before + after)
    # (bytes lost, offset resumed at), as the client told them
    gaps = [(int(lost.replace(",", "")), int(resumed.replace(",", ""))) for lost, resumed in _ROTATED.findall(err)]
    assert gaps, f"8000 lines at once cannot all be read while only {max_files} KiB are kept:\n{err}"
    expected, position = [], 0
    for lost, resumed in gaps:  # what the client was told it missed, and nothing else, is missing
        expected.append(stream[position : resumed - lost])
        position = resumed
    expected.append(stream[position:])
    assert "".join(stdout) == "".join(expected)
    assert stdout[: len(before)] == before and stdout[-1] == after[-1]

    log_dir = next((home / "log").iterdir())
    kept = sorted(log_dir.glob("driver.out*"), key=lambda p: -int(p.name.rpartition(".")[2]) if p.name != "driver.out" else 0)
    assert [p.name for p in kept] == ["driver.out.2", "driver.out.1", "driver.out"], "at most max-files files"
    assert all(p.stat().st_size <= max_size for p in kept)
    tail = "".join(p.read_text() for p in kept)
    assert stream.endswith(tail) and "".join(stdout).endswith(tail), "the kept files are the stream's tail, and the client has it"
