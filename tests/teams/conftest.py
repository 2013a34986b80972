"""A team with one member of each role, and someone outside it, for the teams tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.designs.services import design_create
from apps.teams.services import member_add, owned_move, team_create
from tests.designs.test_api import SPEC

ROLES = ["owner", "editor", "viewer", "outsider", "anonymous"]


@dataclass
class People:
    team: Any
    owner: Any
    editor: Any
    viewer: Any
    outsider: Any

    def client(self, who: str) -> APIClient:
        """An API client signed in as ``who`` (owner, editor, viewer, outsider), or anonymous."""
        client = APIClient()
        if who != "anonymous":
            client.force_authenticate(getattr(self, who))
        return client

    def check_matrix(
        self, who: str, base_url: str, matrix: list[tuple[str, str, Any, tuple[int, ...]]]
    ) -> None:
        """Call every (verb, path, body) of ``matrix`` under ``base_url`` in order as ``who`` and assert each
        status is the one the matrix gives for that role (ROLES order)."""
        client = self.client(who)
        got = {
            (verb, path): getattr(client, verb)(f"{base_url}{path}", body, format="json").status_code
            for verb, path, body, _ in matrix
        }
        assert got == {(verb, path): expected[ROLES.index(who)] for verb, path, _, expected in matrix}


@pytest.fixture
def people(db: Any, django_user_model: Any) -> People:
    users = {
        # No password (nothing to hash: the clients sign in with force_authenticate).
        name: django_user_model.objects.create_user(name, email=f"{name}@example.com")
        for name in ("olivia", "eddie", "vera", "oscar")
    }
    team = team_create(user=users["olivia"], name="Training infra")
    member_add(team=team, identifier="eddie", role="editor")
    member_add(team=team, identifier="vera@example.com", role="viewer")
    return People(team, users["olivia"], users["eddie"], users["vera"], users["oscar"])


@pytest.fixture
def team_design(people: People, catalog: Any) -> Any:
    """A design eddie (an editor) made and moved into the team."""
    design = design_create(owner=people.editor, name="70B on the team's H100s", spec=SPEC)
    return owned_move(user=people.editor, obj=design, team_id=people.team.pk)
