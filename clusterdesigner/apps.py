from __future__ import annotations

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Loads the Celery app when Django starts, so tasks bind to it in web processes, commands and tests, and
    holds every API text field's length limit to the text as sent (clusterdesigner/text_limits.py).

    (clusterdesigner/__init__.py stays empty so that the engine can be imported without Django or Celery.)
    """

    name = "clusterdesigner"
    verbose_name = "ClusterDesigner"

    def ready(self) -> None:
        from clusterdesigner import celery, text_limits  # noqa: F401

        text_limits.install()
