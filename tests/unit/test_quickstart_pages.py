"""The quick-start pages of docs/try/ cannot rot: every command on them is one a test runs.

The tests that run them need test clusters (tests/e2e, tests/integration); this one only reads the
pages, so a shell block added without a marker, or a marker whose test does not run that page,
fails at once (see tests/support/quickstarts.py).
"""

from __future__ import annotations

import pytest

from tests.support.quickstarts import REPO, SHELL_LANGUAGES, TRY_DIR, blocks

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
