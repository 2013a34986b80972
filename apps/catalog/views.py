"""Catalog pages: accelerators side by side, filtered by the same FilterSet as the API."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import json_script

from apps.catalog import charts, filters, selectors, serializers
from apps.catalog.models import CloudPrice, Fabric, RentalPricePoint, StorageTier


def accelerator_list_page(request: HttpRequest) -> HttpResponse:
    filterset = filters.AcceleratorFilterSet(request.GET or None, queryset=selectors.accelerator_list())
    accelerators = list(filterset.qs)
    freshness = selectors.price_freshness()
    summary = selectors.accelerator_price_summary(accelerators=accelerators, freshness=freshness)
    models = CloudPrice.PricingModel.values
    rows = [(a, [summary[a.slug].cloud.get(m) for m in models], summary[a.slug].owning) for a in accelerators]
    return render(
        request,
        "catalog/accelerator_list.html",
        {
            "filter": filterset,
            "accelerators": accelerators,
            "price_rows": rows,
            "freshness": freshness,
            "pricing_models": CloudPrice.PricingModel.choices,
        },
    )


def offering_list_page(request: HttpRequest) -> HttpResponse:
    filterset = filters.CloudPriceFilterSet(request.GET or None, queryset=selectors.cloud_price_list())
    freshness = selectors.price_freshness()
    return render(
        request,
        "catalog/price_list.html",
        {
            "filter": filterset,
            "prices": filterset.qs,
            "freshness": freshness,
            "stale_before": dt.date.fromisoformat(freshness.stale_before),
        },
    )


def infrastructure_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/infrastructure.html",
        {"fabrics": Fabric.objects.all(), "storage_tiers": StorageTier.objects.all()},
    )


def market_series_page(request: HttpRequest) -> HttpResponse:
    """Residual value by age and rental price history: the sourced points, their scatter, and each source."""
    residual = serializers.ResidualValuePointSerializer(selectors.residual_value_list(), many=True).data
    rows = [{**point, "percent_of_new": round(point["fraction_of_new"] * 100, 1)} for point in residual]
    rental = serializers.RentalPricePointSerializer(selectors.rental_price_history(), many=True).data
    basis = dict(RentalPricePoint.Basis.choices)
    rental_rows = [{**point, "basis_label": basis[point["basis"]]} for point in rental]
    figures = [
        ("residual", charts.residual_value_chart(residual)),
        ("rental", charts.rental_price_chart(rental)),
    ]
    chart_list = [
        {"id": key, "title": fig["layout"]["title"]["text"], "script": json_script(fig, f"chart-data-{key}")}
        for key, fig in figures
    ]
    return render(
        request,
        "catalog/market_series.html",
        {"charts": chart_list, "residual": rows, "rental": rental_rows},
    )
