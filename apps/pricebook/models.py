"""A user's or a team's price book (issue #35): dated prices of their own that a design resolves through
before the public catalog (apps/designs/pricing.py)."""

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
    - ``colocation``: USD per kW-month, billed on ``colocation_basis``;
    - ``network_quote``: one line of the network's bill of materials, ``network_item``: a switch of
      ``switch_model`` (a catalog switch), a cable or a transceiver in USD per unit, or the whole scale-out
      network as a lump sum in USD;
    - ``storage_quote``: USD per TB of owned storage;
    - ``capacity_block``: ``offering`` (and ``pricing_model``, on-demand when blank) for ``duration_hours``
      on ``block_nodes`` nodes; USD for the whole block;
    - ``committed_rate``: ``offering`` and a commitment ``pricing_model`` (reserved or savings plan, 1 or 3
      years); USD per node-hour;
    - ``enterprise_discount``: a fraction off every cloud price that no offering or provider discount covers;
    - ``quota``: ``offering`` (optionally ``region`` and ``pricing_model``; blank: every one); nodes
      obtainable, 0 when the option is effectively unavailable;
    - ``staff_cost``: USD per FTE-year.
    """

    class Kind(models.TextChoices):
        SERVER_QUOTE = "server_quote", "Server quote"
        CLOUD_DISCOUNT = "cloud_discount", "Cloud discount"
        PRIVATE_RATE = "private_rate", "Private cloud rate"
        POWER = "power", "Power price"
        COLOCATION = "colocation", "Colocation price"
        NETWORK_QUOTE = "network_quote", "Network quote"
        STORAGE_QUOTE = "storage_quote", "Storage quote"
        CAPACITY_BLOCK = "capacity_block", "Capacity block"
        COMMITTED_RATE = "committed_rate", "Committed-use rate"
        ENTERPRISE_DISCOUNT = "enterprise_discount", "Enterprise discount"
        QUOTA = "quota", "Quota"
        STAFF_COST = "staff_cost", "Staff cost"

    class NetworkItem(models.TextChoices):
        SWITCH = "switch", "Switch"
        CABLE = "cable", "Cable"
        TRANSCEIVER = "transceiver", "Transceiver"
        LUMP_SUM = "lump_sum", "Lump sum"

    UNITS = {
        Kind.SERVER_QUOTE: "USD/server",
        Kind.CLOUD_DISCOUNT: "fraction off",
        Kind.PRIVATE_RATE: "USD/node-hour",
        Kind.POWER: "USD/kWh",
        Kind.COLOCATION: "USD/kW-month",
        Kind.NETWORK_QUOTE: "USD/unit",
        Kind.STORAGE_QUOTE: "USD/TB",
        Kind.CAPACITY_BLOCK: "USD/block",
        Kind.COMMITTED_RATE: "USD/node-hour",
        Kind.ENTERPRISE_DISCOUNT: "fraction off",
        Kind.QUOTA: "nodes",
        Kind.STAFF_COST: "USD/FTE-year",
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
    network_item = models.CharField(max_length=20, choices=NetworkItem.choices, blank=True)
    switch_model = models.CharField(max_length=100, blank=True)
    region = models.CharField(max_length=100, blank=True)
    duration_hours = models.FloatField(null=True, blank=True)
    block_nodes = models.PositiveIntegerField(null=True, blank=True)
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
        if self.kind == self.Kind.NETWORK_QUOTE and self.network_item == self.NetworkItem.LUMP_SUM:
            return "USD"
        return self.UNITS[self.Kind(self.kind)]

    @property
    def target(self) -> str:
        """What the entry prices, in words (its target fields and terms), for the book's pages."""
        parts: list[str] = [
            str(x)
            for x in (
                self.accelerator,
                self.gpus_per_node and f"× {self.gpus_per_node}",
                self.provider,
                self.offering,
                self.region,
                self.pricing_model,
                self.network_item.replace("_", " "),
                self.switch_model,
                self.colocation_basis,
            )
            if x
        ]
        if self.duration_hours and self.block_nodes:
            parts.append(f"{self.duration_hours:g} h × {self.block_nodes} nodes")
        if self.network_included:
            parts.append("network included")
        if self.support_years:
            parts.append(f"{self.support_years:g} years of support")
        return " ".join(parts)

    def expired(self, today: dt.date) -> bool:
        """Past its expiry date (an entry is valid through the day it expires on)."""
        return self.expires_on is not None and self.expires_on < today
