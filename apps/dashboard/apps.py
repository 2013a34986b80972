from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "apps.dashboard"
    verbose_name = "Design-review dashboard"
