from __future__ import annotations

import logging
import os
import sys
import threading

from django.apps import AppConfig

logger = logging.getLogger(__name__)
# How long after a server process starts it resumes the analyses a previous process left (issue #38 item 10:
# within 10 s of a dev-server reload; before, they waited for the 180 s stall check and a reader).
RESUME_DELAY_S = 1.0


def serving_process(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether this process serves requests (and so runs in-process analyses): runserver's serving child
    (RUN_MAIN=true under the autoreloader, or --noreload) or gunicorn; not migrate, test or shell."""
    program = os.path.basename(argv[0]) if argv else ""
    if "gunicorn" in program:
        return True
    if argv[1:2] == ["runserver"]:
        return environ.get("RUN_MAIN") == "true" or "--noreload" in argv
    return False


def resume_orphans() -> None:
    from django.db import connection

    from apps.analysis.services import analysis_resume_orphans

    try:
        analysis_resume_orphans()
    except Exception:  # a database not migrated yet, or down: the stall check on read still applies
        logger.warning("could not resume unfinished analyses at start-up", exc_info=True)
    finally:
        connection.close()


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analyses (sweeps, comparisons, recommendations)"

    def ready(self) -> None:
        from django.conf import settings

        from apps.analysis.services import analysis_evaluate_searched
        from apps.designs.runners import searched_runner_register

        # The designs API hands a searched design's evaluation to this app (designs never imports it).
        searched_runner_register(analysis_evaluate_searched)

        if settings.ANALYSIS_RUN_IN_THREAD and serving_process(sys.argv, os.environ):
            timer = threading.Timer(RESUME_DELAY_S, resume_orphans)
            timer.daemon = True
            timer.start()
