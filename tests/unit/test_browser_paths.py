"""The request paths a browser test asserts on (tests/support/browser.py's ``paths_under``), without a browser."""

from __future__ import annotations

import pytest

from tests.support.browser import paths_under

SENT = [
    "http://127.0.0.1:8081/",
    "http://127.0.0.1:8081/config",
    "http://127.0.0.1:8081/jobs/overview?refresh=1",
    "http://127.0.0.1:8081/jobs/abc/vertices#top",
    "http://127.0.0.1:8081/web/main.js",
    "http://127.0.0.1:8081/website.css",
    "http://127.0.0.1:8082/config",
    "http://localhost:8081/config",
    "https://127.0.0.1:8081/config",
    "data:,",
]


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8081/", "http://127.0.0.1:8081"])
def test_paths_under_a_root_are_every_path_of_its_origin(base_url: str) -> None:
    assert paths_under(base_url, SENT) == {"/", "/config", "/jobs/overview", "/jobs/abc/vertices", "/web/main.js", "/website.css"}


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8081/web/", "http://127.0.0.1:8081/web"])
def test_paths_under_a_folder_are_relative_to_it(base_url: str) -> None:
    # /website.css shares the prefix's characters but is not under /web
    assert paths_under(base_url, SENT) == {"/main.js"}


def test_the_base_itself_is_the_root() -> None:
    assert paths_under("http://127.0.0.1:8081/jobs/abc/vertices", SENT) == {"/"}
    assert paths_under("http://127.0.0.1:9999/", SENT) == set()
