from __future__ import annotations

from django.apps import AppConfig


class SitesConfig(AppConfig):
    name = "apps.sites"
    label = "sites"
    verbose_name = "Sites"
