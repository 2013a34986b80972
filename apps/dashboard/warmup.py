"""A web worker's first page, paid before it takes requests (gunicorn's post_worker_init,
clusterdesigner/gunicorn_conf.py).

A new worker's first share page cost about 0.7-1.1 s of CPU (bench: the first /share/<token>/ of a process):
importing every view the URL configuration names (the API modules, openpyxl), compiling the URL patterns
for reverse(), plotly building the validators of each trace and layout property it meets, and compiling the
templates. The requests queued behind it on that worker waited as long, which is what a load test's p99
saw of it. Here the worker does the same work once before it accepts: the URL configuration, and the
results part of a page (its charts and templates) drawn for a stored evaluation (a demo design's if one
is stored; none at all: the charts are left cold). A warm-up changes no response and writes nothing but
per-process state (and the chart cache's entry for that evaluation, as a visit would); it never stops a
worker: a failure is logged and the worker starts cold.
"""

from __future__ import annotations

import logging

from django.db import connections
from django.template.loader import get_template, render_to_string
from django.urls import get_resolver

from apps.designs.models import Evaluation

logger = logging.getLogger(__name__)

# The pages a load meets first: the share page and the layout and partials it is built of.
TEMPLATES = ("dashboard/share.html", "includes/_design_results.html", "includes/_assumptions.html")


def pages_warm_up() -> bool:
    """Warm this process's URL configuration, templates and chart builders; True when a stored evaluation
    was drawn. Closes the database connections it opened (the worker's threads open their own)."""
    try:
        resolver = get_resolver()
        # Reading them imports every view module and compiles the patterns that reverse() and {% url %}
        # match against, in every namespace.
        _ = resolver.url_patterns, resolver.reverse_dict
        _ = [namespace.reverse_dict for _prefix, namespace in resolver.namespace_dict.values()]
        for name in TEMPLATES:
            get_template(name)
        drawn = _draw_a_demo()
        logger.info("pages warmed up (%s)", "a stored evaluation drawn" if drawn else "no evaluation to draw")
        return drawn
    except Exception:
        logger.warning("page warm-up failed; the worker starts cold", exc_info=True)
        return False
    finally:
        # The worker's threads open their own connections: this one would idle until CONN_MAX_AGE. (Not
        # one inside a transaction: a caller's, a test's.)
        for connection in connections.all(initialized_only=True):
            if not connection.in_atomic_block:
                connection.close()


def _draw_a_demo() -> bool:
    from apps.dashboard.views import _results_context

    stored = Evaluation.objects.select_related("version").order_by("-pk")
    # A demo's (public data), else the newest: it is drawn in this process only, nothing is sent or kept
    # but the chart cache's entry a visit to it would make.
    evaluation = stored.filter(version__design__is_demo=True).first() or stored.first()
    if evaluation is None:
        return False
    context = _results_context(evaluation)
    if "charts" not in context:  # a stored result that cannot be drawn: nothing was warmed
        return False
    render_to_string("includes/_design_results.html", context)
    return True
