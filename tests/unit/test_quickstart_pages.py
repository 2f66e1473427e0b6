"""The quick-start pages of docs/try/ cannot rot: every command on them is one a test runs.

The tests that run them need test clusters (tests/e2e, tests/integration); this one only reads the
pages, so a shell block added without a marker, or a marker whose test does not run that page,
fails at once (see tests/support/quickstarts.py).
"""

from __future__ import annotations

import pytest

from tests.support.quickstarts import REPO, SHELL_LANGUAGES, TRY_DIR, blocks, blocks_of, commands

PAGES = sorted(TRY_DIR.glob("*.md"))


def test_there_is_a_quick_start_per_way_in() -> None:
    assert {p.stem for p in PAGES} >= {"local", "yarn", "kubernetes", "operator"}


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_shell_block_is_a_marked_step_of_the_pages_quick_start_and_its_test_runs_it(path) -> None:
    found = blocks(path)
    shell = [(name, test, body) for info, name, test, body in found if info in SHELL_LANGUAGES]
    assert shell, f"{path.name} has no shell block"
    unmarked = [body.splitlines()[0] if body else "" for name, _, body in shell if name is None]
    assert unmarked == [], f"{path.name}: shell blocks without a quickstart marker (fence output as ```text): {unmarked}"
    assert {name for name, _, _ in shell} == {path.stem}, f"{path.name}: a page holds the quick start of its own name"
    for test in {test for _, test, _ in shell}:
        assert test is not None
        test_file = REPO / test
        assert test_file.is_file(), f"{path.name} names {test}, which does not exist"
        assert f'quickstart("{path.stem}")' in test_file.read_text() or f'run_all("{path.stem}"' in test_file.read_text(), (
            f"{test} does not run quick start {path.stem!r}"
        )


def test_every_command_of_the_readmes_examples_is_one_a_quick_start_runs() -> None:
    """The README says its examples are the quick starts' commands: each is, word for word."""
    tested = {command for path in PAGES for _, name, _, body in blocks(path) if name for command in commands(body)}
    readme = (REPO / "README.md").read_text()
    examples = readme.split("## One example per way in", 1)[1].split("\n## ", 1)[0]
    shown = [command for info, _, _, body in blocks_of(examples) if info != "text" for command in commands(body)]
    assert len(shown) >= 5, shown
    untested = [command for command in shown if command not in tested]
    assert untested == [], f"README commands no quick start runs as written: {untested}"
