"""Catalog pages: accelerators side by side, filtered by the same FilterSet as the API."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.catalog import filters, selectors
from apps.catalog.models import CloudPrice, Fabric, StorageTier


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
