"""The quick starts of docs/try/, run as they are written.

Why: commands in the docs are part of the product; a quick start that no longer works is the
first thing a new user meets. So the quick starts are not copies of tested commands, they *are*
the tested commands: every shell block of a page ``docs/try/NAME.md`` is marked

    <!-- quickstart: NAME (tests/.../test_x.py runs this block as it is) -->
    ```bash
    ...
    ```

and the marked blocks of a page, in page order, are the steps of quick start NAME. A test takes
them with :func:`quickstart` and runs each command with :func:`run`: one command per line (a line
ending in ``\\`` continues on the next), each with bash from the repository root, so a command
cannot depend on the shell state of the one before, just as the page shows them. What a page needs
from its reader's environment (a kubeconfig, ``HADOOP_CONF_DIR``) the test puts into the
environment it runs the commands with. tests/unit/test_quickstart_pages.py checks that no page
has a shell block without a marker, and that each marker names the test that runs it.

Every quick-start test uses this module; nothing else parses the pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRY_DIR = REPO / "docs" / "try"

SHELL_LANGUAGES = ("", "bash", "sh", "shell")
"""Info strings of the fenced blocks that hold commands; output shown on a page is fenced as ``text``."""

_BLOCK = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!-- quickstart: (?P<name>[\w-]+) \((?P<test>tests/\S+\.py) runs this block as it is\) -->\s*$")


def page(name: str) -> Path:
    """docs/try/``name``.md."""
    return TRY_DIR / f"{name}.md"


def blocks(path: Path) -> list[tuple[str, str | None, str | None, str]]:
    """Every fenced block of the page: (info string, quick-start name, test, body); name and test are None
    for a block without a marker on the line before it (blank lines between allowed)."""
    return blocks_of(path.read_text())


def blocks_of(text: str) -> list[tuple[str, str | None, str | None, str]]:
    """:func:`blocks` of a page's ``text``."""
    found = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.fullmatch(before.strip())
        name, test = (marker["name"], marker["test"]) if marker else (None, None)
        found.append((match["info"].strip(), name, test, match["body"]))
    return found


def commands(body: str) -> list[str]:
    """The commands of a block: one per line, a trailing ``\\`` joining the next line; blank lines dropped."""
    return [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()]


def quickstart(name: str) -> list[str]:
    """The commands of every block marked as quick start ``name`` on docs/try/``name``.md, in order."""
    steps = [commands(body) for _, marked, _, body in blocks(page(name)) if marked == name]
    assert steps, f"docs/try/{name}.md has no block marked <!-- quickstart: {name} (...) -->"
    return [command for step in steps for command in step]


def with_jobcluster_on_path(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with this Python's bin directory first on PATH: ``jobcluster`` (and pyspark's ``spark-class``)
    as ``make`` installs them in .venv."""
    return {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}


def run(command: str, env: Mapping[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run one command of a quick start with bash, from the repository root; fail unless it exits 0."""
    result = subprocess.run(["bash", "-c", command], cwd=REPO, env=dict(env), capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{command}\nexit code {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def run_all(name: str, env: Mapping[str, str], timeout: float = 900) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """Run every command of quick start ``name`` in order; each with what it printed."""
    return [(command, run(command, env, timeout)) for command in quickstart(name)]


def output_of(ran: list[tuple[str, subprocess.CompletedProcess[str]]], prefix: str) -> subprocess.CompletedProcess[str]:
    """The one command of ``ran`` that starts with ``prefix``."""
    matching = [result for command, result in ran if command.startswith(prefix)]
    assert len(matching) == 1, f"expected one command starting with {prefix!r}, found {len(matching)}: {[c for c, _ in ran]}"
    return matching[0]
