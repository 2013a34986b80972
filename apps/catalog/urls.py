from __future__ import annotations

from django.urls import path

from apps.catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.accelerator_list_page, name="accelerators"),
    path("prices/", views.offering_list_page, name="prices"),
    path("infrastructure/", views.infrastructure_page, name="infrastructure"),
    path("market/", views.market_series_page, name="market"),
]
