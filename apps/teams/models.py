"""Teams and their members. Designs, capacity plans and analyses belong to their owner user, or to a team
when their ``team`` is set; apps/teams/access.py is the one rule that says who reads and writes them."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Team(models.Model):
    """A group of people who share designs and plans. Its members' roles are Membership rows; a team always
    keeps at least one owner (apps.teams.services)."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """One user's role in one team: owners manage members and delete the team's rows, editors change the
    team's rows, viewers read them."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        EDITOR = "editor", "Editor"
        VIEWER = "viewer", "Viewer"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "user_id"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="teams_membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"
