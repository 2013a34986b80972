"""mypy checks every module of clusterdesigner/ and apps/ with the same rules (strict on the engine): no
per-module exemption (issue #34 burned down the last 31), no module skipped, no error code turned off."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_no_module_is_exempt_from_mypy() -> None:
    mypy = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"]
    assert mypy["overrides"] == [{"module": "clusterdesigner.engine.*", "strict": True}]
    relaxed = {"ignore_errors", "disable_error_code", "follow_imports", "exclude"}
    assert not relaxed & set(mypy)
