from __future__ import annotations

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Loads the Celery app when Django starts, so tasks bind to it in web processes, commands and tests.

    (clusterdesigner/__init__.py stays empty so that the engine can be imported without Django or Celery.)
    """

    name = "clusterdesigner"
    verbose_name = "ClusterDesigner"

    def ready(self) -> None:
        from clusterdesigner import celery  # noqa: F401
