"""ClusterDesigner project package.

Deliberately empty: ``import clusterdesigner.engine`` must load neither Django nor Celery.
The Celery app is loaded when Django starts (``clusterdesigner/apps.py``; see ``clusterdesigner/celery.py``).
"""
