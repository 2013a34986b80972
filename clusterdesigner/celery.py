"""The Celery app, configured from Django settings (CELERY_* names). Loaded when Django starts
(clusterdesigner/apps.py, ProjectConfig.ready) and by ``celery -A clusterdesigner worker``."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterdesigner.settings")

app = Celery("clusterdesigner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
