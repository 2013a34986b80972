"""A team named in a request, read one way by every app: ``?team=<id>`` or a JSON body's ``team`` is a team's
id, and leaving it out means the requester's own (runs, price book, analyses). Anything else is a 400 naming
``team`` with the same message wherever it is read; ``?team=`` with no value is not "left out" (a page's form
whose "your own" choice is an empty value says so with ``blank_is_own``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.teams.selectors import team_list_editable
from clusterdesigner.errors import InvalidInput
from clusterdesigner.ids import MAX_ID, as_id

NOT_AN_ID = "must be the id of a team (a whole number from 1); leave team out for your own"
NOT_AN_EDITOR = "must be the id of a team you own or edit"


def team_field(
    help_text: str, *, required: bool = False, allow_null: bool = True, **kwargs: Any
) -> serializers.IntegerField:
    """A body's or query's ``team``: an id from 1; optional and null (your own) unless told otherwise."""
    return serializers.IntegerField(
        required=required,
        allow_null=allow_null,
        min_value=1,
        max_value=MAX_ID,
        help_text=help_text,
        error_messages={key: NOT_AN_ID for key in ("invalid", "min_value", "max_value", "max_string_length")},
        **kwargs,
    )


def team_param(raw: str | None, *, blank_is_own: bool = False) -> int | None:
    """The ``team`` query parameter: None when absent (or blank, with ``blank_is_own``), else a team's id;
    InvalidInput naming ``team`` otherwise. Whether the user is in the team is the caller's rule."""
    if raw is None or (blank_is_own and not raw.strip()):
        return None
    value = as_id(raw.strip())
    if value is None:
        raise InvalidInput({"team": [NOT_AN_ID]})
    return value


def team_writable(*, user: Any, team_id: Any) -> int | None:
    """The team a row is written into: None (the user's own) when ``team_id`` is None, else that id when the
    user owns or edits the team; InvalidInput naming ``team`` otherwise, whether or not the team exists."""
    if team_id is None:
        return None
    if not isinstance(team_id, int) or isinstance(team_id, bool) or not 0 < team_id <= MAX_ID:
        raise InvalidInput({"team": [NOT_AN_ID]})
    if not team_list_editable(user=user).filter(pk=team_id).exists():
        raise InvalidInput({"team": [NOT_AN_EDITOR]})
    return team_id
