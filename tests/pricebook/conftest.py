"""The teams tests' people (one member of each role and an outsider), for the price book's team tests."""

from __future__ import annotations

from tests.teams.conftest import people

__all__ = ["people"]
