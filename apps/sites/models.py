"""Sites a user places designs in (issue #35, Sites)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Site(models.Model):
    """A data-centre site a user can place designs in: its name, and in ``data`` every other field as
    clusterdesigner.engine.cost.site parses it (region, power and colocation prices, PUE by cooling type, kW
    per rack, cooling, MW now and later, rack lead time, capex per rack and per MW). It belongs to its owner,
    or to a team when ``team`` is set (apps/teams/access.py: members read it and may place designs in it,
    its owners and editors change it)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sites")
    team = models.ForeignKey(
        "teams.Team", on_delete=models.PROTECT, null=True, blank=True, related_name="sites"
    )
    name = models.CharField(max_length=120)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="sites_owner_unique_name")]

    def __str__(self) -> str:
        return self.name

    def to_engine(self) -> dict[str, Any]:
        """The site as a design spec's inline ``site`` object (clusterdesigner.engine.cost.site), with its
        id."""
        return {"id": self.pk, "name": self.name, **self.data}

    def to_api(self) -> dict[str, Any]:
        """The site as the API shows it: the engine's fields and the team it belongs to (None: personal)."""
        return {**self.to_engine(), "team": self.team_id}
