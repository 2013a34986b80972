"""Logging filters: share tokens never reach a log.

Django's request logger writes the path of every 4xx/5xx response ("Not Found: /share/<token>/"), and a share
token in a log is a working link for anyone who reads the log.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

SHARE_PATH = re.compile(r"(/(?:api/v1/)?share[d]?/)[^/\s?#'\"]+")


def redact(text: str) -> str:
    """``text`` with every share token replaced by ``[redacted]``, also where the path is percent-encoded
    (``/%73hare/<token>/`` reaches the share view too: the server decodes the path before routing it)."""
    cleaned = SHARE_PATH.sub(r"\1[redacted]", text)
    if "%" in cleaned:
        decoded = unquote(cleaned)
        redacted = SHARE_PATH.sub(r"\1[redacted]", decoded)
        if redacted != decoded:
            return redacted
    return cleaned


class RedactShareTokens(logging.Filter):
    """Rewrite /share/<token>/ and /api/v1/shared/<token>/ in a record's message to .../[redacted]/."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
