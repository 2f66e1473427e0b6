"""The umask of the processes that write the program's files (processes.program_umask)."""

from __future__ import annotations

import os

import pytest

from jobcluster.processes import ENV_PROGRAM_UMASK, PRIVATE_UMASK, current_umask, program_umask


def test_the_recorded_umask_of_the_client_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_PROGRAM_UMASK, "022")
    assert program_umask() == 0o022


@pytest.mark.parametrize("recorded", [None, "", "rwx", "9"])
def test_without_a_valid_recorded_umask_the_program_is_private(monkeypatch: pytest.MonkeyPatch, recorded: str | None) -> None:
    if recorded is None:
        monkeypatch.delenv(ENV_PROGRAM_UMASK, raising=False)
    else:
        monkeypatch.setenv(ENV_PROGRAM_UMASK, recorded)
    assert program_umask() == PRIVATE_UMASK


def test_current_umask_reads_without_changing_it() -> None:
    previous = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        assert current_umask() == 0o027
    finally:
        os.umask(previous)
