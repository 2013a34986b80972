"""WSGI entry point for gunicorn: Django, with the fast path for the few routes a client repeats
(clusterdesigner.fastpath: a kept answer replayed after its probe's checks, before Django's stack)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterdesigner.settings")

from clusterdesigner.fastpath import FastPath  # noqa: E402  # after the settings module is named

application = FastPath(get_wsgi_application())
