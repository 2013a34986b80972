from __future__ import annotations

from django.apps import AppConfig


class PlansConfig(AppConfig):
    name = "apps.plans"
    label = "plans"
    verbose_name = "Capacity plans"
