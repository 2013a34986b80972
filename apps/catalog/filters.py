"""FilterSets shared by the HTML catalog pages and the API (one definition of each filter)."""

from __future__ import annotations

import datetime as dt

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    RentalPricePoint,
    ResidualValuePoint,
    ServerType,
    StorageTier,
    Switch,
)
from apps.catalog.selectors import price_freshness

PRECISION_CHOICES = [(p, p) for p in ("tf32", "bf16", "fp8", "fp4")]


class IntegerFilter(django_filters.NumberFilter):
    """A whole number, as the schema says (the default number filter also takes 0.5 and matches nothing)."""

    # the stubs type NumberFilter.field_class as DecimalField's class; django-filter takes any form field's
    field_class = forms.IntegerField  # type: ignore[assignment]


class AcceleratorFilterSet(django_filters.FilterSet):
    vendor = django_filters.CharFilter(field_name="vendor__slug", lookup_expr="iexact", label="Vendor (slug)")
    min_memory_gib = django_filters.NumberFilter(
        field_name="memory_gib", lookup_expr="gte", label="Min memory (GiB)"
    )
    precision = django_filters.ChoiceFilter(
        choices=PRECISION_CHOICES, method="filter_precision", label="Supports precision"
    )
    family = django_filters.ChoiceFilter(choices=Accelerator.Family.choices)
    has_nvlink = django_filters.BooleanFilter(
        label="Has NVLink", widget=forms.Select(choices=[("", "Any"), ("true", "Yes"), ("false", "No")])
    )

    class Meta:
        model = Accelerator
        fields = ["vendor", "family", "min_memory_gib", "precision", "has_nvlink", "retired"]

    def filter_precision(
        self, queryset: QuerySet[Accelerator], name: str, value: str
    ) -> QuerySet[Accelerator]:
        return queryset.filter(**{f"{value}_dense_tflops__isnull": False})


class ServerTypeFilterSet(django_filters.FilterSet):
    accelerator = django_filters.CharFilter(field_name="accelerator__slug")
    vendor = django_filters.CharFilter(field_name="vendor__slug", lookup_expr="iexact")

    class Meta:
        model = ServerType
        fields = ["accelerator", "vendor", "retired"]


class FabricFilterSet(django_filters.FilterSet):
    min_port_gbps = django_filters.NumberFilter(field_name="port_gbps", lookup_expr="gte")

    class Meta:
        model = Fabric
        fields = ["kind", "min_port_gbps", "retired"]


class SwitchFilterSet(django_filters.FilterSet):
    ports = IntegerFilter(field_name="ports")

    class Meta:
        model = Switch
        fields = ["fabric_kind", "ports"]


class StorageTierFilterSet(django_filters.FilterSet):
    class Meta:
        model = StorageTier
        fields = ["kind", "scope", "retired"]


class CloudOfferingFilterSet(django_filters.FilterSet):
    accelerator = django_filters.CharFilter(field_name="accelerator__slug")
    region = django_filters.CharFilter(field_name="region", lookup_expr="icontains")

    class Meta:
        model = CloudOffering
        fields = ["provider", "accelerator", "region", "retired"]


class CloudPriceFilterSet(django_filters.FilterSet):
    provider = django_filters.ChoiceFilter(
        field_name="offering__provider", choices=CloudOffering.Provider.choices
    )
    accelerator = django_filters.CharFilter(
        field_name="offering__accelerator__slug", label="Accelerator (slug)"
    )
    offering = django_filters.CharFilter(field_name="offering__slug", label="Offering (slug)")
    region = django_filters.CharFilter(method="filter_region", label="Region")
    as_of_after = django_filters.DateFilter(field_name="as_of", lookup_expr="gte", label="Priced on or after")
    stale = django_filters.BooleanFilter(
        method="filter_stale",
        label="Stale",
        help_text="Older than PRICE_STALE_AFTER_DAYS (true) or not.",
        widget=forms.Select(choices=[("", "any"), ("true", "stale only"), ("false", "fresh only")]),
    )

    class Meta:
        model = CloudPrice
        fields = ["provider", "pricing_model", "accelerator", "offering", "region", "currency", "stale"]

    def filter_stale(
        self, queryset: QuerySet[CloudPrice], name: str, value: bool | None
    ) -> QuerySet[CloudPrice]:
        if value is None:
            return queryset
        # Read per request: the cut-off moves with the date.
        cutoff = dt.date.fromisoformat(price_freshness().stale_before)
        return queryset.filter(as_of__lt=cutoff) if value else queryset.filter(as_of__gte=cutoff)

    def filter_region(self, queryset: QuerySet[CloudPrice], name: str, value: str) -> QuerySet[CloudPrice]:
        # A price row may carry its own region; otherwise it inherits the offering's.
        return queryset.filter(Q(region__icontains=value) | Q(region="", offering__region__icontains=value))


class ResidualValuePointFilterSet(django_filters.FilterSet):
    accelerator = django_filters.CharFilter(field_name="accelerator__slug", label="Accelerator (slug)")
    generation = django_filters.CharFilter(lookup_expr="iexact")
    series = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = ResidualValuePoint
        fields = ["accelerator", "generation", "series"]


class RentalPricePointFilterSet(django_filters.FilterSet):
    accelerator = django_filters.CharFilter(field_name="accelerator__slug", label="Accelerator (slug)")
    generation = django_filters.CharFilter(lookup_expr="iexact")
    series = django_filters.CharFilter(lookup_expr="icontains")
    as_of_after = django_filters.DateFilter(field_name="as_of", lookup_expr="gte", label="On or after")

    class Meta:
        model = RentalPricePoint
        fields = ["accelerator", "generation", "series", "basis"]
