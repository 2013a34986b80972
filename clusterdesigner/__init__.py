"""ClusterDesigner project package.

Deliberately empty: ``import clusterdesigner.engine`` must load neither Django nor Celery.
The Celery app is loaded by ``manage.py``/``wsgi.py`` (see ``clusterdesigner/celery.py``).
"""
