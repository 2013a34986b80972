from __future__ import annotations

from django.apps import AppConfig


class DesignsConfig(AppConfig):
    name = "apps.designs"
    label = "designs"
    verbose_name = "Saved designs"
