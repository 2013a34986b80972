"""gunicorn settings: ``gunicorn -c python:clusterdesigner.gunicorn_conf clusterdesigner.wsgi:application``.

Share tokens never reach gunicorn's logs. A token in ``/share/<token>/`` or ``/api/v1/shared/<token>/`` is a
working link for anyone who reads the log, and gunicorn's access log writes the request line, the path and
the Referer (a share page's own stylesheet and scripts are requested with the share URL as their Referer).
RedactingLogger writes ``[redacted]`` in place of the token in every value the access log format can name and
in the error log, with the rule Django's logging uses (clusterdesigner.logging).

Command-line options still apply on top (``--access-logfile -``, ``--workers``, ``--bind``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from gunicorn.glogging import Logger

from clusterdesigner.logging import RedactShareTokens, redact

_REDACT_FILTER = RedactShareTokens()


class RedactingLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger with share tokens redacted from every access-log value (request line, path, query,
    Referer, headers, environ) and from error-log messages."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.addFilter(_REDACT_FILTER)  # one shared instance: a config reload adds nothing twice

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: dt.timedelta) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}


logger_class = "clusterdesigner.gunicorn_conf.RedactingLogger"
