"""docs/deployment/security.md names, for each promise, the test that shows it: each named test exists (a renamed or
removed test would leave a promise without its proof)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "deployment" / "security.md"


def test_every_test_the_security_page_names_exists():
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", PAGE.read_text().split("## The promises, and the tests that show them", 1)[1])
    assert len(named) >= 15, named
    missing = []
    for path, name in named:
        module = REPO / path
        tests = (
            {node.name for node in ast.walk(ast.parse(module.read_text())) if isinstance(node, ast.FunctionDef)}
            if module.exists()
            else set()
        )
        if name not in tests:
            missing.append(f"{path}::{name}")
    assert missing == []
