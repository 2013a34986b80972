"""Site writes: every field checked by the engine's one site definition (clusterdesigner.engine.cost.site), so
a saved site is one a design can use; errors name the field as sent (``pue.air``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from apps.sites.models import Site
from apps.sites.selectors import site_list
from apps.teams.params import team_writable
from clusterdesigner.engine.cost.site import parse_site_json
from clusterdesigner.engine.design.spec import SpecError
from clusterdesigner.errors import InvalidInput

# What a saved site does not hold: its id is the row's, a planned date is the design's; its team is a column.
NOT_SAVED = ("id", "planned_date")


def _team(*, user: Any, data: Any) -> tuple[Any, int | None]:
    """``data`` without its ``team`` field, and the id of the team it names (None: personal), which must be
    one the user owns or edits (400 naming ``team`` otherwise, whether the team exists or not)."""
    if not isinstance(data, Mapping) or data.get("team") is None:
        return (dict(data) if isinstance(data, Mapping) else data), None
    team_id = team_writable(user=user, team_id=data["team"])
    return {k: v for k, v in data.items() if k != "team"}, team_id


def _clean(*, owner: Any, data: Any, site: Site | None = None) -> dict[str, Any]:
    if isinstance(data, Mapping):
        given = [key for key in NOT_SAVED if key in data]
        if given:
            raise InvalidInput({key: ["a saved site does not take this field"] for key in given})
    try:
        clean = parse_site_json(data)
    except SpecError as exc:
        raise InvalidInput(exc.fields()) from exc
    others = Site.objects.filter(owner=owner, name=clean["name"])
    if site is not None:
        others = others.exclude(pk=site.pk)
    if others.exists():
        raise InvalidInput({"name": [f"you already have a site named {clean['name']!r}"]})
    return clean


@transaction.atomic
def site_create(*, owner: Any, data: Any) -> Site:
    """A new site of ``owner``'s, or of the team ``data["team"]`` names (one they own or edit)."""
    data, team_id = _team(user=owner, data=data)
    clean = _clean(owner=owner, data=data)
    return Site.objects.create(owner=owner, team_id=team_id, name=clean.pop("name"), data=clean)


@transaction.atomic
def site_update(*, site: Site, data: Any, partial: bool = False) -> Site:
    """Replace the site's fields (PUT), or only those given (PATCH). Designs keep the copy they were saved
    with (their spec holds the site inline), so an edit changes no stored result."""
    if isinstance(data, Mapping) and "team" in data:
        raise InvalidInput({"team": ["a site moves between teams only by being made again"]})
    if partial and isinstance(data, Mapping):
        data = {**site.to_engine(), **data}
        data.pop("id", None)
    clean = _clean(owner=site.owner, data=data, site=site)
    site.name = clean.pop("name")
    site.data = clean
    site.save()
    return site


def site_delete(*, site: Site) -> None:
    site.delete()


def site_resolve(*, user: Any, spec: Any) -> Any:
    """A design spec whose ``site`` is a reference to a saved site (``{"id": N}``, with a planned date or not)
    with that site's fields filled in; refused, naming spec.site.id, when ``user`` (who saves the design)
    cannot read that site (theirs, or a team's they belong to). An inline site (its fields given) is kept as
    given; the id it carries, when not a site the user can read (a design cloned from someone else's), is
    dropped, so the copy holds the figures without naming a site it cannot see."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("site"), Mapping):
        return spec
    given = spec["site"]
    site_id = given.get("id")
    if site_id is None:
        return spec
    if isinstance(site_id, bool) or not isinstance(site_id, int):
        raise InvalidInput({"spec.site.id": ["must be a saved site's id (a whole number)"]})
    site = site_list(user=user).filter(pk=site_id).first()
    if set(given) - set(NOT_SAVED):
        return spec if site else {**spec, "site": {k: v for k, v in given.items() if k != "id"}}
    if site is None:
        raise InvalidInput({"spec.site.id": [f"you have no site {site_id}"]})
    planned = {"planned_date": given["planned_date"]} if "planned_date" in given else {}
    return {**spec, "site": {**site.to_engine(), **planned}}
