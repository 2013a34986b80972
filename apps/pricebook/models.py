"""A user's or a team's price book (issue #35): dated prices of their own that a design resolves through
before the public catalog (apps/pricebook/resolve.py)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models


class PriceEntry(models.Model):
    """One dated price a buyer holds: a vendor's server quote, a negotiated cloud discount or private rate, a
    power or colocation contract. It is its owner's, or its team's when ``team`` is set (apps/teams/access.py:
    team members read it, owners and editors change it, nobody else sees it).

    Which target fields a kind uses, and the unit of ``value`` (fixed by the kind):

    - ``server_quote``: ``accelerator`` and ``gpus_per_node``; USD per server (node); ``network_included``
      and ``support_years`` say what the quote includes;
    - ``cloud_discount``: ``provider`` or ``offering``, optionally ``pricing_model`` (on-demand when blank);
      a fraction off that model's catalog price;
    - ``private_rate``: ``offering`` and ``pricing_model``; USD per node-hour;
    - ``power``: USD per kWh;
    - ``colocation``: USD per kW-month, billed on ``colocation_basis``.
    """

    class Kind(models.TextChoices):
        SERVER_QUOTE = "server_quote", "Server quote"
        CLOUD_DISCOUNT = "cloud_discount", "Cloud discount"
        PRIVATE_RATE = "private_rate", "Private cloud rate"
        POWER = "power", "Power price"
        COLOCATION = "colocation", "Colocation price"

    UNITS = {
        Kind.SERVER_QUOTE: "USD/server",
        Kind.CLOUD_DISCOUNT: "fraction off",
        Kind.PRIVATE_RATE: "USD/node-hour",
        Kind.POWER: "USD/kWh",
        Kind.COLOCATION: "USD/kW-month",
    }

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="price_entries"
    )
    # Set: the entry is the team's (apps/teams/access.py says who reads and edits it).
    team = models.ForeignKey(
        "teams.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="price_entries"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    accelerator = models.CharField(max_length=100, blank=True)
    gpus_per_node = models.PositiveSmallIntegerField(null=True, blank=True)
    provider = models.CharField(max_length=50, blank=True)
    offering = models.CharField(max_length=100, blank=True)
    pricing_model = models.CharField(max_length=20, blank=True)
    value = models.FloatField()
    network_included = models.BooleanField(null=True, blank=True)
    support_years = models.FloatField(null=True, blank=True)
    colocation_basis = models.CharField(max_length=20, blank=True)
    valid_from = models.DateField()
    expires_on = models.DateField(null=True, blank=True)
    source = models.TextField(blank=True)
    attachment_name = models.CharField(max_length=255, blank=True)
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    entered_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "-valid_from", "-id"]
        indexes = [models.Index(fields=["owner", "team", "kind"], name="pricebook_owner_team_kind_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.value:g} {self.unit} from {self.valid_from}"

    @property
    def unit(self) -> str:
        return self.UNITS[self.Kind(self.kind)]

    def expired(self, today: dt.date) -> bool:
        """Past its expiry date (an entry is valid through the day it expires on)."""
        return self.expires_on is not None and self.expires_on < today
