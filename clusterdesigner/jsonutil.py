"""JSON helpers every app stores results with: the input hash of a snapshot, a value made safe for a JSON
column, and JSON already encoded as text. Here, in the project package, so that no app imports another's
private helpers (and no service imports the API's renderer)."""

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


class JSONText(str):
    """A JSON document that is already text, such as a stored result read from its jsonb column as text.

    A service returns one and a view sends it with ``Response(JSONText(text))``: the API's renderer
    (clusterdesigner.renderers.JSONRenderer) writes it out without decoding it and encoding it again. The
    bytes are the database's spelling of the same JSON (jsonb puts a space after ``,`` and ``:`` and writes
    1e-05 as 0.00001): a JSON reader gets the same values.
    """
