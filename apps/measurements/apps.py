from __future__ import annotations

from django.apps import AppConfig


class MeasurementsConfig(AppConfig):
    name = "apps.measurements"
    label = "measurements"
    verbose_name = "Measured runs"
