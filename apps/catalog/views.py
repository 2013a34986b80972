"""Catalog pages: accelerators side by side, filtered by the same FilterSet as the API."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.catalog import filters, selectors
from apps.catalog.models import Fabric, StorageTier


def accelerator_list_page(request: HttpRequest) -> HttpResponse:
    filterset = filters.AcceleratorFilterSet(request.GET or None, queryset=selectors.accelerator_list())
    return render(request, "catalog/accelerator_list.html", {"filter": filterset, "accelerators": filterset.qs})


def offering_list_page(request: HttpRequest) -> HttpResponse:
    filterset = filters.CloudPriceFilterSet(request.GET or None, queryset=selectors.cloud_price_list())
    return render(request, "catalog/price_list.html", {"filter": filterset, "prices": filterset.qs})


def infrastructure_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/infrastructure.html",
        {"fabrics": Fabric.objects.all(), "storage_tiers": StorageTier.objects.all()},
    )
