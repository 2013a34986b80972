from __future__ import annotations

from django.apps import AppConfig


class PricebookConfig(AppConfig):
    name = "apps.pricebook"
    label = "pricebook"
    verbose_name = "Price book"
