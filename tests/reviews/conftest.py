"""The teams tests' people (a team with an owner, an editor, a viewer, and an outsider) and team design."""

from __future__ import annotations

from tests.teams.conftest import people, team_design

__all__ = ["people", "team_design"]
