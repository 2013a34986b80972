"""Site API serializers: the output field by field (the input is checked by the engine's site definition,
clusterdesigner.engine.cost.site, and described by the same fields)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.sites.models import Site
from clusterdesigner.engine.cost.site import COLOCATION_BASES, COOLING_TYPES


class PueSerializer(serializers.Serializer[Any]):
    air = serializers.FloatField(required=False, help_text="PUE with air cooling.")
    rear_door = serializers.FloatField(required=False, help_text="PUE with rear-door heat exchangers.")
    direct_liquid = serializers.FloatField(required=False, help_text="PUE with direct liquid cooling.")


class PowerStepSerializer(serializers.Serializer[Any]):
    date = serializers.CharField(help_text="YYYY-MM or YYYY-MM-DD.")
    mw = serializers.FloatField(help_text="Total MW available from this date on.")


class SiteSerializer(serializers.Serializer[Any]):
    """A site: its prices, PUE by cooling type, rack limit, cooling, and MW now and by date."""

    id = serializers.IntegerField(read_only=True)
    team = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="The team the site belongs to (one you own or edit; set at creation); null: yours alone.",
    )
    name = serializers.CharField(max_length=120)
    region = serializers.CharField(required=False)
    power_usd_per_kwh = serializers.FloatField()
    colocation_usd_per_kw_month = serializers.FloatField()
    colocation_basis = serializers.ChoiceField(choices=COLOCATION_BASES, required=False)
    colocation_all_in = serializers.BooleanField(
        required=False, help_text="The colocation price includes the power (no separate energy bill)."
    )
    pue = PueSerializer(help_text="PUE by cooling type; one for every cooling type offered.")
    max_kw_per_rack = serializers.FloatField()
    cooling = serializers.ListField(child=serializers.ChoiceField(choices=COOLING_TYPES))
    power_now_mw = serializers.FloatField()
    power_later = PowerStepSerializer(many=True, required=False)
    rack_lead_time_months = serializers.FloatField(required=False)
    capex_usd_per_rack = serializers.FloatField(required=False)
    capex_usd_per_mw = serializers.FloatField(
        required=False, help_text="Power distribution and cooling capex per MW of IT at full load."
    )
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: Site) -> dict[str, Any]:
        return {
            **instance.to_api(),
            "created_at": serializers.DateTimeField().to_representation(instance.created_at),
            "updated_at": serializers.DateTimeField().to_representation(instance.updated_at),
        }
