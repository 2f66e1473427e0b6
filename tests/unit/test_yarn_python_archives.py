"""PyFlink's python.archives on YARN: the entries, the interpreter inside an archive, and the skeleton that runs it."""

import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from jobcluster.backends.yarn.container_env import ENVIRONMENT_KEY, PYTHON_SKELETON, SKELETON_PYTHON, launch_command
from jobcluster.backends.yarn.errors import PythonEnvironmentError, YarnConfigurationError
from jobcluster.backends.yarn.options import yarn_options
from jobcluster.backends.yarn.pyenv_parts import JOBCLUSTER_KEY, PARTS_MODULE, PARTS_PTH, parts_module_text, parts_pth_text
from jobcluster.backends.yarn.python_archives import (
    PythonArchive,
    archive_members,
    archived_interpreter,
    check_interpreter,
    parse_archives,
    shipped_name,
)
from jobcluster.config.configuration import Configuration


def test_entries_are_pyflinks_path_hash_name_with_the_file_name_as_the_default_name():
    archives = parse_archives(" /opt/cpython-3.11.tar.gz#python , file:///tmp/data.zip,hdfs://nn:8020/shared/venv.tgz#venv ")
    assert archives == (
        PythonArchive("/opt/cpython-3.11.tar.gz", "python"),
        PythonArchive("file:///tmp/data.zip", "data.zip"),
        PythonArchive("hdfs://nn:8020/shared/venv.tgz", "venv"),
    )
    assert [a.remote for a in archives] == [False, False, True]
    assert str(archives[1].local_path) == "/tmp/data.zip"
    assert parse_archives(None) == parse_archives(" ") == ()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("/opt/python.rpm#python", "not an archive YARN unpacks"),
        ("s3a://bucket/cpython.tar.gz#python", "copy it to one of them"),
        ("/a/x.tar.gz#environment", "a name jobcluster uses"),
        ("/a/x.tar.gz#artifacts", "a name jobcluster uses"),
        ("/a/x.tar.gz#../up", "cannot name a directory"),
        ("/a/x.tar.gz#.hidden", "cannot name a directory"),
        ("/a/x.tar.gz#py,/b/y.zip#py", "two archives are unpacked into 'py'"),
    ],
)
def test_a_bad_entry_names_the_key_and_what_to_write(text, says):
    with pytest.raises(YarnConfigurationError, match=r"python\.archives") as error:
        parse_archives(text)
    assert says in str(error.value)


def test_a_relative_interpreter_must_point_into_an_archive():
    archives = parse_archives("/opt/cpython.tar.gz#python")
    assert archived_interpreter("/usr/bin/python3", archives) is None  # a Python on the nodes
    assert archived_interpreter("python/bin/python3.11", archives) == archives[0]
    for wrong in ("venv/bin/python3", "python", "python3"):
        with pytest.raises(YarnConfigurationError, match="names: python"):
            archived_interpreter(wrong, archives)


def test_the_options_accept_a_relative_interpreter_only_into_an_archive():
    config = Configuration({"python.archives": "/opt/cpython.tar.gz#python", "python.executable": "python/bin/python3.11"})
    opts = yarn_options(config, "j")
    assert (opts.python, opts.python_archives) == ("python/bin/python3.11", (PythonArchive("/opt/cpython.tar.gz", "python"),))
    with pytest.raises(YarnConfigurationError, match=r"jobcluster\.yarn\.python 'py/bin/python3'.*names: python"):
        yarn_options(Configuration({"python.archives": "/opt/cpython.tar.gz#python", "jobcluster.yarn.python": "py/bin/python3"}), "j")


def _tar(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name in members:
            info = tarfile.TarInfo(name)
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = 1
                archive.addfile(info, io.BytesIO(b"x"))
    return path


def test_the_interpreter_and_its_standard_library_are_checked_in_the_archive(tmp_path):
    path = _tar(tmp_path / "cpython.tar.gz", ["./python/bin/python3.11", "python/lib/python3.11/os.py", "python/lib/python3.11/"])
    archive = PythonArchive(str(path), "py")
    members = archive_members(path)
    assert "python/bin/python3.11" in members  # "./" normalized away

    check_interpreter(members, archive, "py/python/bin/python3.11", "3.11")
    with pytest.raises(
        PythonEnvironmentError, match=r"'py/bin/python3.11' is not in .*the interpreters it holds: py/python/bin/python3\.11"
    ):
        check_interpreter(members, archive, "py/bin/python3.11", "3.11")
    with pytest.raises(PythonEnvironmentError, match=r"no standard library of Python 3\.12 .*found: python3\.11"):
        check_interpreter(members, archive, "py/python/bin/python3.11", "3.12")


def test_a_zip_archive_is_read_too_and_a_broken_one_is_named(tmp_path):
    path = tmp_path / "venv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("bin/python3", "x")
        archive.writestr("lib/python3.11/os.py", "x")
    check_interpreter(archive_members(path), PythonArchive(str(path), "venv"), "venv/bin/python3", "3.11")

    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not an archive")
    with pytest.raises(PythonEnvironmentError, match=r"cannot read the archive .*broken\.tar\.gz"):
        archive_members(broken)


def test_a_local_archive_is_shipped_under_a_name_that_says_its_content(tmp_path):
    one = tmp_path / "cpython-3.11.tar.gz"
    one.write_bytes(b"one")
    name = shipped_name(one)
    assert name.startswith("archive-cpython-3.11-") and name.endswith(".tar.gz")
    one.write_bytes(b"two")
    assert shipped_name(one) != name


def test_the_skeleton_runs_the_archived_interpreter_with_the_shipped_environment(tmp_path):
    """The launch line a NodeManager runs, in a working directory laid out as YARN localizes it: the archive's
    interpreter (a link to this one, as the unpacked archive would hold it) and the shipped environment, whose
    parts module finds the jobcluster part beside it."""
    work, logs = tmp_path / "container_1", tmp_path / "logs"
    logs.mkdir()
    (work / "python" / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys._base_executable), work / "python" / "bin" / "python3")
    site = work / ENVIRONMENT_KEY / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    (site / "user_module.py").write_text("VALUE = 'from the environment'\n")
    (site / PARTS_PTH).write_text(parts_pth_text())
    (site / f"{PARTS_MODULE}.py").write_text(parts_module_text())
    (work / JOBCLUSTER_KEY / "part_module.py").parent.mkdir()
    (work / JOBCLUSTER_KEY / "part_module.py").write_text("VALUE = 'from the jobcluster part'\n")

    probe = (
        "import json, sys, user_module, part_module; print(json.dumps([sys.prefix, sys.executable, user_module.VALUE, part_module.VALUE]))"
    )
    line = launch_command([SKELETON_PYTHON, "-c", probe], {}, "taskmanager", archived_python="python/bin/python3")
    script = tmp_path / "launch_container.sh"
    script.write_text(f'cd {work}\nexec /bin/bash -c "' + line.replace("<LOG_DIR>", str(logs)) + '"\n')
    subprocess.run(["/bin/bash", str(script)], check=True, env={"PATH": "/usr/bin:/bin", "NM_HOST": "node1"})

    assert (logs / "taskmanager.err").read_text() == ""
    prefix, executable, user, part = json.loads((logs / "taskmanager.out").read_text())
    assert prefix == str(work / PYTHON_SKELETON)
    assert executable == str(work / PYTHON_SKELETON / "bin" / "python")  # what Spark's Python workers run
    assert (user, part) == ("from the environment", "from the jobcluster part")
