"""The program's output kept in rolling files and read by logical offset (runtime/jobmaster/rolling_output.py),
and the pipes that copy a child's output into it (processes.PipeCopier)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from jobcluster.processes import ChildProcess, PipeCopier
from jobcluster.runtime.jobmaster.rolling_output import OutputChunk, RollingOutputFile


def stream_bytes(n: int, start: int = 0) -> bytes:
    """``n`` bytes in which every position can be told apart (a byte that is doubled or lost shows)."""
    return bytes((i * 7 + i // 251) % 256 for i in range(start, start + n))


def files_of(out: RollingOutputFile) -> list[str]:
    return sorted(p.name for p in out.path.parent.iterdir() if p.name.startswith(out.path.name))


def test_files_roll_at_exactly_the_max_size_and_at_most_max_files_are_kept(tmp_path):
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=3)
    out.write(b"0123456789")
    assert files_of(out) == ["driver.out"], "a full file rolls only when the next byte comes"
    out.write(b"abc")
    assert files_of(out) == ["driver.out", "driver.out.1"]
    assert (tmp_path / "driver.out.1").read_bytes() == b"0123456789"
    assert (tmp_path / "driver.out").read_bytes() == b"abc"
    out.write(b"defghijklmnopqrstuvwxyz")  # 23 bytes: fills the live file, then rolls twice
    assert files_of(out) == ["driver.out", "driver.out.1", "driver.out.2"]
    assert (tmp_path / "driver.out.2").read_bytes() == b"abcdefghij"
    assert (tmp_path / "driver.out.1").read_bytes() == b"klmnopqrst"
    assert (tmp_path / "driver.out").read_bytes() == b"uvwxyz"
    assert out.end() == 36 and out.first_kept() == 10, "the first file was deleted"


def test_a_read_spans_files_in_order(tmp_path):
    data = stream_bytes(95)
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=20)
    for i in range(0, len(data), 7):  # writes that do not line up with the files
        out.write(data[i : i + 7])
    assert len(files_of(out)) == 10
    for offset in (0, 5, 9, 10, 33, 90, 94):
        for limit in (1, 10, 25, 1000):
            assert out.read(offset, limit) == OutputChunk(offset, data[offset : offset + limit]), (offset, limit)
    assert out.read(95, 10) == OutputChunk(95, b"")
    assert out.read(500, 10) == OutputChunk(500, b""), "past the end: nothing, from where it was asked"


def test_a_read_of_a_rotated_away_offset_starts_at_the_oldest_kept_byte(tmp_path):
    data = stream_bytes(100)
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=3)
    out.write(data)
    # kept: 70..79 in .2, 80..89 in .1, 90..99 live (full: it rolls only when the next byte comes)
    assert out.first_kept() == 70
    assert out.read(0, 15) == OutputChunk(70, data[70:85])
    assert out.read(69, 100) == OutputChunk(70, data[70:])
    assert out.read(75, 100) == OutputChunk(75, data[75:])
    with pytest.raises(ValueError, match="offset"):
        out.read(-1, 10)


def test_a_write_larger_than_all_files_keeps_its_tail(tmp_path):
    data = stream_bytes(1000)
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=64, max_files=2)
    out.write(data)
    assert len(files_of(out)) == 2
    assert all((tmp_path / name).stat().st_size <= 64 for name in files_of(out))
    chunk = out.read(0, 10_000)
    assert chunk.offset + len(chunk.data) == 1000 and chunk.data == data[chunk.offset :]
    assert chunk.offset == 1000 - 64 - (1000 % 64), "the full rotated file and the partial live file"


def test_one_file_only_is_truncated_by_its_roll(tmp_path):
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=4, max_files=1)
    out.write(b"abcdefghij")
    assert files_of(out) == ["driver.out"] and (tmp_path / "driver.out").read_bytes() == b"ij"
    assert out.read(0, 10) == OutputChunk(8, b"ij")


def test_a_second_attempt_and_a_new_writer_append_to_the_stream(tmp_path):
    data = stream_bytes(57)
    first = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=10)
    first.write(data[:23])  # one attempt ...
    first.write(data[23:40])  # ... and the next one, through the same object
    assert first.end() == 40
    first.close()
    # a new JobManager process finds the files in place: they are the beginning of its stream
    second = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=10)
    assert (second.first_kept(), second.end()) == (0, 40)
    second.write(data[40:])
    assert second.read(0, 100) == OutputChunk(0, data)
    assert [len((tmp_path / n).read_bytes()) for n in ["driver.out.5", "driver.out.4", "driver.out.3", "driver.out.2"]] == [10] * 4


def test_concurrent_reads_see_every_byte_once_while_files_roll(tmp_path):
    data = stream_bytes(200_000)
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=4096, max_files=200)
    got = bytearray()

    def follow() -> None:
        offset = 0
        while offset < len(data):
            chunk = out.read(offset, 3000)
            assert chunk.offset == offset, "nothing is rotated away with this many files"
            got.extend(chunk.data)
            offset += len(chunk.data)

    reader = threading.Thread(target=follow)
    reader.start()
    for i in range(0, len(data), 777):
        out.write(data[i : i + 777])
    reader.join(timeout=60)
    assert not reader.is_alive() and bytes(got) == data


@pytest.mark.parametrize(("size", "files"), [(0, 1), (10, 0)])
def test_bounds_below_one_are_refused(tmp_path, size, files):
    with pytest.raises(ValueError, match="at least 1"):
        RollingOutputFile(tmp_path / "driver.out", max_file_size=size, max_files=files)


def test_a_childs_output_reaches_its_sinks_whole_and_before_wait_returns(tmp_path):
    out = RollingOutputFile(tmp_path / "driver.out", max_file_size=1000, max_files=1000)
    err = RollingOutputFile(tmp_path / "driver.err", max_file_size=1000, max_files=1000)
    # the child leaves a grandchild holding the pipes: wait() must not wait for it, nor miss the child's last bytes
    program = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "for i in range(20000): print(f'line {i}')\n"
        "sys.stderr.write('the end\\n')\n"
        "sys.exit(3)\n"
    )

    async def run() -> int:
        child = ChildProcess(
            "child", [sys.executable, "-c", program], {}, tmp_path / "unused.log", stdout_sink=out.write, stderr_sink=err.write
        )
        await child.start()
        try:
            return await child.wait()
        finally:
            await child.stop()

    assert asyncio.run(run()) == 3
    assert out.read(0, 1 << 20).data == "".join(f"line {i}\n" for i in range(20000)).encode()
    assert err.read(0, 100).data == b"the end\n"
    assert not (tmp_path / "unused.log").exists(), "a stream with a sink has no file of its own"


def test_a_sink_that_fails_loses_that_data_and_copying_goes_on(caplog):
    received: list[bytes] = []

    def sink(data: bytes) -> None:
        if not received:
            received.append(b"")
            raise OSError(28, "No space left on device")
        received.append(data)

    copier = PipeCopier("test", sink)
    writer = os.dup(copier.write_fd)  # the "child's" end, kept open while ours is closed
    copier.started()
    os.write(writer, b"lost")
    assert copier.drain(10)
    os.write(writer, b"kept")
    assert copier.drain(10)
    os.close(writer)
    assert b"".join(received) == b"kept"
    assert "No space left on device" in caplog.text
