"""JSON helpers every app stores results with: the input hash of a snapshot, and a value made safe for a JSON
column. Here, in the project package, so that no app imports another's private helpers."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    """SHA-256 of the snapshot's JSON with sorted keys (values JSON cannot hold are written with str())."""
    return hashlib.sha256(json.dumps(snapshot, sort_keys=True, default=str).encode()).hexdigest()


def jsonable(value: Any) -> Any:
    """Round-trip through JSON so NaN/inf never reach the database (JSON has no such numbers: they become
    null), and dates and other objects become their str()."""
    return json.loads(json.dumps(value, default=str), parse_constant=lambda _token: None)
