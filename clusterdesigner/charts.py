"""What every page's Plotly charts share, for the dashboard, plans and serving apps alike (none of them
imports another's chart internals): the palette and layout, how a pricing model is named, text made safe for
Plotly, and a figure packed for templates/includes/_chart.html."""

from __future__ import annotations

import html
from typing import Any

from django.utils.html import json_script

PRICING_LABELS = {
    "on_demand": "on-demand",
    "reserved_1y": "reserved 1 y",
    "reserved_3y": "reserved 3 y",
    "savings_1y": "savings plan 1 y",
    "savings_3y": "savings plan 3 y",
    "spot": "spot",
    "own": "own (on-prem)",
    "on_prem": "own (on-prem)",
}

PALETTE = ["#1f5fbf", "#e07b00", "#2a9d4b", "#b3261e", "#7b4fbf", "#00838f", "#8d6e63", "#c2185b"]
OWN_COLOR = "#1b1f24"
MARGIN = {"l": 70, "r": 24, "t": 56, "b": 60}
LAYOUT = {
    "height": 380,
    "margin": MARGIN,
    "font": {"size": 13},
    "hoverlabel": {"namelength": -1},
    "legend": {"orientation": "h", "y": -0.22},
}


def pricing_label(model: str, fallback: str | None = None) -> str:
    """A pricing model as the charts name it ("reserved 1 y"); ``fallback`` (else the slug itself) for one
    PRICING_LABELS lacks."""
    return PRICING_LABELS.get(model, model if fallback is None else fallback)


def plain(text: Any) -> str:
    """Text from a user or the catalog as Plotly should draw it: ``<``, ``>`` and ``&`` as HTML entities,
    which Plotly shows as those characters instead of reading markup. (Quotes need no escaping: Plotly reads
    them only inside a tag, and no tag survives.)"""
    return html.escape(str(text), quote=False)


def wrapped(text: Any, width: int = 18) -> str:
    """``plain(text)`` broken into lines of about ``width`` characters at spaces (``<br>``, which Plotly
    draws as a line break), so a long design name under a bar reads whole instead of colliding with its
    neighbours (issue #36: compare labels truncated). A word longer than ``width`` stays whole."""
    lines: list[str] = []
    for word in str(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(plain(line) for line in lines)


def heading(text: str, subtitle: str = "", **title: Any) -> dict[str, Any]:
    """The layout of a chart's title (``title``: Plotly's other title options, e.g. ``x``). A ``subtitle`` is
    a smaller second line under it (title.subtitle), with the top margin raised to hold it: a half-page chart
    holds about 60 characters of title, and longer titles ran past its right edge, cut off by the page."""
    if not subtitle:
        return {"title": {"text": text, **title}}
    return {"title": {"text": text, "subtitle": {"text": subtitle}, **title}, "margin": {**MARGIN, "t": 76}}


def page_chart(chart_id: str, figure: dict[str, Any]) -> dict[str, str]:
    """A chart as includes/_chart.html draws it: its id, its title (and subtitle) and the json_script element
    holding the figure, encoded here once (a page of charts is tens of kilobytes of escaped JSON)."""
    title = figure["layout"]["title"]["text"]  # every chart builder sets one
    if subtitle := figure["layout"]["title"].get("subtitle", {}).get("text"):
        title = f"{title} ({subtitle})"  # the figure's label for a screen reader holds both lines
    return {"id": chart_id, "title": title, "script": json_script(figure, f"chart-data-{chart_id}")}
