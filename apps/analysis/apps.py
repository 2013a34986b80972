from __future__ import annotations

from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analyses (sweeps, comparisons, recommendations)"
