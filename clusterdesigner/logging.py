"""Logging filters: share tokens never reach a log.

Django's request logger writes the path of every 4xx/5xx response ("Not Found: /share/<token>/"), and a share
token in a log is a working link for anyone who reads the log.
"""

from __future__ import annotations

import logging
import re

SHARE_PATH = re.compile(r"(/(?:api/v1/)?share[d]?/)[^/\s?#'\"]+")


def redact(text: str) -> str:
    return SHARE_PATH.sub(r"\1[redacted]", text)


class RedactShareTokens(logging.Filter):
    """Rewrite /share/<token>/ and /api/v1/shared/<token>/ in a record's message to .../[redacted]/."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
